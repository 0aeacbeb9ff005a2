"""Kafka's message schemas, transcribed as data for :mod:`kdump.format.messages`."""
