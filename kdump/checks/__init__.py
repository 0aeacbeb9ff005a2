"""Checks: generators of typed findings over segments, partitions and log directories."""
