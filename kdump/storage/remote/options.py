"""How kdump reaches object stores: endpoint, credentials, Aiven's private keys, read-ahead.

Plain data, no object-store library: the command line builds it from its options and hands it
down (kdump.storage.remote.store.ObjectStore holds it); it travels with the storage to ``--jobs``
workers and Spark executors (pickled), so they reach the same store the same way.
"""

from __future__ import annotations

from kdump.tuples import NamedTuple

DEFAULT_READ_AHEAD = 16 << 20
"""Bytes a walk over a remote log fetches per request: an object store answers a ranged GET in
tens of milliseconds whatever its size up to megabytes, so requests are large
(bench/bench_remote.py)."""
DEFAULT_RETRIES = 3
"""Attempts per request (botocore's standard retry mode, and s3fs's own around a cut read): the
defaults of the two multiply to 25 attempts and 40 s on a 503."""
DEFAULT_TIMEOUT = 30.0
"""Seconds to connect, and between bytes of an answer: a store that stops answering is an error,
never a hang."""


class StoreOptions(NamedTuple):
    """A record, not a frozen dataclass (every command builds one: a dataclass costs start-up
    to define, issue 45); its repr leaves the private keys out."""

    endpoint_url: str | None = None
    """An S3-compatible store (MinIO, Ceph, moto): its URL; else AWS_ENDPOINT_URL(_S3) or AWS."""
    anon: bool = False
    """No credentials at all (public buckets)."""
    private_keys: tuple[tuple[str | None, bytes], ...] = ()
    """Aiven's key-encryption keys: (key pair id or None for any, PEM of the private key)."""
    read_ahead: int = DEFAULT_READ_AHEAD
    retries: int = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT

    def __repr__(self) -> str:
        keys = f"{len(self.private_keys)} private key(s)"
        return (
            f"StoreOptions(endpoint_url={self.endpoint_url!r}, anon={self.anon}, {keys}, "
            f"read_ahead={self.read_ahead}, retries={self.retries}, timeout={self.timeout})"
        )


__all__ = ["DEFAULT_READ_AHEAD", "StoreOptions"]
