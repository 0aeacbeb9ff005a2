"""Object stores (``s3://``, ``gs://``, ``az://``, ``file://`` through fsspec) and the layouts of
Kafka's tiered storage (KIP-405) in them: what kdump.storage's object-store and tiered
implementations read with. Nothing above kdump.storage imports this package.

Imports fsspec and friends (the ``remote`` extra) only when a URL is read.
"""
