"""The hostile-input suite (issue 27): inputs whose bytes claim more than they hold
(decompression bombs of records and messages, manifests whose counts and sizes lie), each read
by kdump in a child process under a memory cap, and the C module's entry points given what they
must refuse. The cases are one table (cases.py); a new decoder joins by adding a row there."""
