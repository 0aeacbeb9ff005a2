"""Aiven's tiered-storage-for-apache-kafka objects (Apache-2.0, Aiven-Open/tiered-storage-for-
apache-kafka; facts from its public source, core/src/main/java/io/aiven/kafka/tieredstorage/).

Per segment three objects, ``<prefix><topic>-<topicId>/<partition>/<offset20>-<segmentId>.`` +
``log``, ``indexes``, ``rsm-manifest`` (ObjectKeyFactory), uploaded in that order, so a manifest
means the other two were written whole:

- ``.log``: the segment file cut in chunks of ``originalChunkSize`` bytes, each optionally one
  zstd frame with its content size (CompressionChunkEnumeration), then optionally encrypted as
  ``IV(12) || AES-256-GCM ciphertext || tag(16)`` with the manifest's AAD
  (EncryptionChunkEnumeration), concatenated without framing.
- ``.indexes``: offset, time, producer snapshot, leader epoch (checkpoint text) and transaction
  index concatenated in that order, each encrypted whole when the segment is, never compressed.
- ``.rsm-manifest``: JSON (SegmentManifestV1): ``chunkIndex`` (fixed: every stored chunk the same
  size but the last; variable: base64 of a zstd frame of ChunkSizesBinaryCodec's sizes),
  ``segmentIndexes`` (position, size of each index in ``.indexes``), ``compression`` and
  ``encryption`` (``dataKey``: ``<key pair id>:<base64 RSA ciphertext>``, the AES key wrapped with
  RSA/NONE/OAEPWithSHA3-512AndMGF1Padding under BouncyCastle: SHA3-512 for OAEP and for MGF1;
  ``aad``: base64).

Custom metadata (SegmentCustomMetadataSerde, in ``__remote_log_metadata``): a Kafka tagged-field
section, tag 0 ``remote_size`` (varlong), 1 ``object_prefix`` and 2 ``object_key`` (compact
strings) which, when present, replace the configured prefix and the main path of the ``.log``
and ``.indexes`` keys (never of the manifest's).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, pairwise
from typing import Any

from kdump.errors import DecryptionKeyError, InputError, KdumpError, ManifestError, StoreError
from kdump.format.layout import DEFAULT_MAX_BATCH_BYTES, INT32_MAX

LOG, INDEXES, MANIFEST = "log", "indexes", "rsm-manifest"
SUFFIXES = (LOG, INDEXES, MANIFEST)
INDEX_NAMES = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
"""``segmentIndexes`` fields in their order in ``.indexes`` (IndexType)."""
IV_SIZE, TAG_SIZE = 12, 16
MAX_CHUNK_SIZES_BYTES = 10 << 20
"""TransformedChunksDeserializer refuses a chunk-size list larger than this."""
MAX_CHUNK_SIZE = DEFAULT_MAX_BATCH_BYTES
"""The largest ``originalChunkSize`` kdump reads (256 MiB): a chunk is held whole while it is
decrypted and decompressed, as a batch's decompressed bytes are (--max-batch-bytes' default).
Aiven's chunk.size goes to 1 GiB, its documentation suggests starting at 4 MiB; a manifest
claiming 1 GiB chunks over a 32 KB object took 2.1 GB (issue 27)."""
MAX_CHUNKS = 1 << 20
"""The most chunks a segment may have: kdump keeps 8 bytes per chunk (its stored offset). A
segment of 2 GiB (Kafka's largest) in 4 MiB chunks has 512; 1 M are 2 KiB chunks of it."""


class _FieldError(ValueError):
    """A chunk index field (``chunkIndex.<field>``) kdump refuses."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class ChunkIndex:
    """AbstractChunkIndex: chunk i holds original bytes [i*chunk, ...) stored at
    ``stored_offset(i)``.

    A manifest is bucket content, so hostile: its sizes are checked against kdump's bounds as
    it is parsed, and the stored offsets are made only after ``check`` has held the chunk count
    and stored size to the ``.log`` object's real length. Nothing is allocated for what a
    count claims before that (a variable index claiming 2^31-1 chunks grew to 4.6 GB, issue 27).
    """

    original_chunk_size: int
    original_file_size: int
    count: int
    fixed_sizes: tuple[int, int] | None
    """A fixed index: (every stored chunk but the last, the last); None: variable."""
    encoded_sizes: bytes = b""
    """A variable index: ChunkSizesBinaryCodec bytes, their layout checked against ``count``."""

    @property
    def stored_size(self) -> int:
        """Bytes the ``.log`` object must have."""
        if self.fixed_sizes is None:
            return self._offsets[-1]
        every, last = self.fixed_sizes
        return every * (self.count - 1) + last if self.count else 0

    def stored_offset(self, i: int) -> int:
        """Where chunk ``i`` starts in the ``.log`` object (``count``: its end)."""
        if self.fixed_sizes is None:
            return self._offsets[i]
        return self.fixed_sizes[0] * i if i < self.count else self.stored_size

    @cached_property
    def _offsets(self) -> array[int]:
        return array("q", [0, *accumulate(decode_chunk_sizes(self.encoded_sizes))])

    def check(self, url: str, object_size: int) -> None:
        """That the ``.log`` object ``url`` of ``object_size`` bytes holds this index's chunks:
        at least a byte each (before any stored size is decoded), exactly its stored size."""
        if self.count > object_size:
            raise StoreError(
                url,
                f"the manifest's chunk index has {self.count} chunks, the object "
                f"{object_size} bytes: a stored chunk takes at least one",
                object_size,
            )
        stored = self.stored_size
        if object_size != stored:
            short = "truncated object" if object_size < stored else "object too long"
            raise StoreError(
                url,
                f"{short}: {object_size} bytes, the manifest's chunk index describes {stored}",
                min(object_size, stored),
            )
        if self.fixed_sizes is None:  # a fixed index's sizes were checked as it was parsed
            empty = next((i for i, (a, b) in enumerate(pairwise(self._offsets)) if b <= a), None)
            if empty is not None:
                raise StoreError(url, f"chunk {empty} is stored in no bytes", self._offsets[empty])

    def chunks(self, start: int, end: int) -> range:
        """The chunks holding original bytes ``[start, end)``."""
        size = self.original_chunk_size
        last = min(self.count, -(-end // size))
        return range(min(start // size, last), last)

    def original_range(self, i: int) -> tuple[int, int]:
        start = i * self.original_chunk_size
        return start, min(start + self.original_chunk_size, self.original_file_size)


@dataclass(frozen=True)
class Encryption:
    key_id: str | None
    """The key pair id before ``:`` (None: a manifest from before ids, 2023-07)."""
    wrapped_key: bytes
    aad: bytes


@dataclass(frozen=True)
class Manifest:
    chunk_index: ChunkIndex
    indexes: dict[str, tuple[int, int] | None]
    """(position, stored size) in ``.indexes`` by ``INDEX_NAMES`` name; None when absent."""
    compression: bool
    encryption: Encryption | None
    segment: dict[str, Any] | None
    """``remoteLogSegmentMetadata`` (written since 2023-09): topic, ids, offsets, epochs."""


def parse_manifest(data: bytes, path: str) -> Manifest:
    """SegmentManifestV1 from the manifest's JSON (unknown fields ignored, as Jackson does)."""
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        version = doc.get("version")
        if version != "1":
            raise ManifestError(path, f"manifest version {version!r}; kdump reads version 1")
        index = _chunk_index(doc["chunkIndex"])
        indexes: dict[str, tuple[int, int] | None] = {}
        for name in INDEX_NAMES:
            entry = (doc.get("segmentIndexes") or {}).get(name)
            indexes[name] = (
                None if entry is None else (_count(entry, "position"), _count(entry, "size"))
            )
        encryption = None
        if doc.get("encryption") is not None:
            encryption = _encryption(doc["encryption"])
        segment = doc.get("remoteLogSegmentMetadata")
        return Manifest(index, indexes, bool(doc["compression"]), encryption, segment)
    except KdumpError:
        raise
    except _FieldError as e:
        at = data.find(f'"{e.field}"'.encode())
        where = "segmentIndexes" if e.field in ("position", "size") else "chunkIndex"
        raise ManifestError(path, f"{where}.{e.field}: {e}", at if at >= 0 else None) from None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        # RecursionError: JSON nested deeper than the interpreter recurses (fuzz/corpus/aiven)
        what = f"{type(e).__name__}: {e}"
        raise ManifestError(path, f"not an Aiven segment manifest: {what}") from None


def _count(doc: dict[str, Any], field: str) -> int:
    """A size or position field: a JSON integer of 0 or more (4E998 is a float, infinite as a
    Python float, and no count: fuzz/corpus/aiven)."""
    value = doc[field]
    if type(value) is not int or value < 0:
        raise _FieldError(field, f"{value!r} is not a count of bytes")
    return value


def _chunk_index(doc: dict[str, Any]) -> ChunkIndex:
    """The chunk index, every count and size checked before anything is made of them."""
    kind = doc["type"]
    chunk, size = _count(doc, "originalChunkSize"), _count(doc, "originalFileSize")
    if not 0 < chunk <= MAX_CHUNK_SIZE:
        raise _FieldError(
            "originalChunkSize", f"{chunk}: kdump reads chunks of 1 to {MAX_CHUNK_SIZE} bytes"
        )
    if not 0 <= size <= INT32_MAX:
        raise _FieldError("originalFileSize", f"{size}: a Kafka segment has 0 to {INT32_MAX} bytes")
    count = -(-size // chunk)
    if count > MAX_CHUNKS:
        raise _FieldError(
            "originalChunkSize",
            f"{count} chunks of {chunk} bytes for {size} bytes: kdump reads at most {MAX_CHUNKS}",
        )
    if kind == "fixed":
        every = _count(doc, "transformedChunkSize")
        last = _count(doc, "finalTransformedChunkSize")
        if count and (last <= 0 or (count > 1 and every <= 0)):
            raise _FieldError("transformedChunkSize", f"stored sizes {every} and {last} (final)")
        return ChunkIndex(chunk, size, count, (every, last))
    if kind == "variable":
        raw = _zstd_decompress(base64.b64decode(doc["transformedChunks"]), MAX_CHUNK_SIZES_BYTES)
        try:
            claimed = chunk_sizes_count(raw)
        except ValueError as e:
            raise _FieldError("transformedChunks", str(e)) from None
        if claimed != count:
            raise _FieldError(
                "transformedChunks",
                f"{claimed} chunk sizes for {size} bytes in chunks of {chunk}",
            )
        return ChunkIndex(chunk, size, count, None, raw)
    raise ValueError(f"chunk index type {kind!r}")


_COUNT = struct.Struct(">i")
_BASE_AND_WIDTH = struct.Struct(">iB")


def chunk_sizes_count(raw: bytes) -> int:
    """How many sizes ChunkSizesBinaryCodec bytes hold, their layout checked against that
    count (ValueError) before any size is read: big-endian ``count``, then (count > 1)
    ``base``, bytes per value, the values but the last less ``base`` in that many bytes, the
    last value whole."""
    if len(raw) < _COUNT.size:
        raise ValueError(f"chunk sizes of {len(raw)} bytes")
    (count,) = _COUNT.unpack_from(raw, 0)
    if count < 0:
        raise ValueError(f"chunk count {count}")
    if count <= 1:
        expected = _COUNT.size * (count + 1)
    else:
        if len(raw) < _COUNT.size + _BASE_AND_WIDTH.size:
            raise ValueError(f"chunk sizes of {len(raw)} bytes for {count} chunks")
        _, width = _BASE_AND_WIDTH.unpack_from(raw, _COUNT.size)
        if not 1 <= width <= 4:
            raise ValueError(f"{width} bytes per chunk size")
        expected = _COUNT.size + _BASE_AND_WIDTH.size + (count - 1) * width + _COUNT.size
    if len(raw) != expected:
        raise ValueError(f"{count} chunk sizes take {expected} bytes, not {len(raw)}")
    return count


def decode_chunk_sizes(raw: bytes) -> list[int]:
    """ChunkSizesBinaryCodec.decode (the layout checked first: ``chunk_sizes_count``)."""
    count = chunk_sizes_count(raw)
    if count == 0:
        return []
    if count == 1:
        return [_COUNT.unpack_from(raw, 4)[0]]
    base, width = _BASE_AND_WIDTH.unpack_from(raw, 4)
    at = 4 + _BASE_AND_WIDTH.size
    sizes = [
        base + int.from_bytes(raw[i : i + width], "big") for i in range(at, len(raw) - 4, width)
    ]
    return [*sizes, _COUNT.unpack_from(raw, len(raw) - 4)[0]]


def encode_chunk_sizes(sizes: list[int]) -> bytes:
    """ChunkSizesBinaryCodec.encode (for tests and for symmetry with ``decode_chunk_sizes``)."""
    if len(sizes) <= 1:
        return struct.pack(f">i{len(sizes)}i", len(sizes), *sizes)
    base = min(sizes[:-1])
    top = max(s - base for s in sizes[:-1])
    width = next(w for w in (1, 2, 3, 4) if top < 1 << (8 * w))
    body = b"".join((s - base).to_bytes(width, "big") for s in sizes[:-1])
    return struct.pack(">iiB", len(sizes), base, width) + body + struct.pack(">i", sizes[-1])


def _encryption(doc: dict[str, Any]) -> Encryption:
    key = doc.get("dataKey")
    if not isinstance(key, str):
        raise ValueError("encryption without a dataKey")
    key_id, sep, wrapped = key.rpartition(":")
    aad = base64.b64decode(doc["aad"])
    return Encryption(key_id if sep else None, base64.b64decode(wrapped), aad)


def _zstd_decompress(data: bytes, limit: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise KdumpError(
            "Aiven's compressed segments need zstandard: pip install 'kafka-kdump[remote]'"
        ) from None
    try:
        params = zstandard.get_frame_parameters(data)
    except zstandard.ZstdError as e:
        raise ValueError(f"not a zstd frame: {e}") from None
    size = params.content_size
    if size in (zstandard.CONTENTSIZE_UNKNOWN, zstandard.CONTENTSIZE_ERROR) or size > limit:
        raise ValueError(f"zstd frame of content size {size} (at most {limit} expected)")
    try:
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=limit)
    except zstandard.ZstdError as e:
        raise ValueError(f"zstd: {e}") from None


# -- keys ----------------------------------------------------------------------------------


def unwrap_data_key(
    encryption: Encryption, keys: tuple[tuple[str | None, bytes], ...], path: str
) -> bytes:
    """The AES data key: RSA-OAEP with SHA3-512 (hash and MGF1) under the private key of the
    manifest's key pair id (a key given without an id is tried for any)."""
    wanted = encryption.key_id
    candidates = [pem for key_id, pem in keys if key_id in (wanted, None)]
    name = f"key pair {wanted!r}" if wanted else "an RSA key pair"
    if not candidates:
        raise DecryptionKeyError(
            path,
            f"segment is encrypted with {name}: give its private key with "
            f"--private-key {wanted or 'ID'}=FILE.pem",
        )
    for pem in candidates:
        key = _oaep_sha3_512_decrypt(pem, encryption.wrapped_key)
        if key is not None and len(key) == 32:
            return key
    raise DecryptionKeyError(path, f"the private key given does not unwrap the data key of {name}")


def _load_private_key(pem: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError:
        raise KdumpError(
            "Aiven's encrypted segments need cryptography: pip install 'kafka-kdump[remote]'"
        ) from None
    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as e:
        raise KdumpError(f"--private-key: not an unencrypted PEM private key: {e}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise KdumpError("--private-key: not an RSA private key")
    return key


def _mgf1_sha3_512(seed: bytes, length: int) -> bytes:
    out = b"".join(
        hashlib.sha3_512(seed + i.to_bytes(4, "big")).digest() for i in range(-(-length // 64))
    )
    return out[:length]


def _oaep_sha3_512_decrypt(pem: bytes, ciphertext: bytes) -> bytes | None:
    """RFC 8017 RSAES-OAEP-DECRYPT with SHA3-512 and MGF1(SHA3-512), empty label: what
    BouncyCastle's OAEPWithSHA3-512AndMGF1Padding does (``cryptography`` refuses SHA3 in OAEP).
    None when the padding does not check (another key). An offline reader of data at rest: no
    timing side channel to guard."""
    numbers = _load_private_key(pem).private_numbers()
    n, d = numbers.public_numbers.n, numbers.d
    k = (n.bit_length() + 7) // 8
    if len(ciphertext) != k or k < 2 * 64 + 2:
        return None
    em = pow(int.from_bytes(ciphertext, "big"), d, n).to_bytes(k, "big")
    masked_seed, masked_db = em[1:65], em[65:]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1_sha3_512(masked_db, 64), strict=True))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1_sha3_512(seed, k - 65), strict=True))
    label_hash = hashlib.sha3_512(b"").digest()
    if em[0] != 0 or db[:64] != label_hash:
        return None
    rest = db[64:].lstrip(b"\x00")
    if not rest or rest[0] != 1:
        return None
    return rest[1:]


# -- chunks ----------------------------------------------------------------------------------


class Detransform:
    """BaseDetransformChunkEnumeration -> Decryption -> Decompression, one chunk at a time."""

    def __init__(self, manifest: Manifest, data_key: bytes | None) -> None:
        self.manifest = manifest
        self.aes: Any = None
        if manifest.encryption is not None:
            assert data_key is not None
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self.aes = AESGCM(data_key)

    def decrypt(self, data: bytes, path: str, position: int) -> bytes:
        if self.aes is None:
            return data
        from cryptography.exceptions import InvalidTag

        encryption = self.manifest.encryption
        assert encryption is not None
        if len(data) < IV_SIZE + TAG_SIZE:
            raise InputError(f"{path}:{position}", f"encrypted piece of {len(data)} bytes")
        try:
            return bytes(self.aes.decrypt(data[:IV_SIZE], data[IV_SIZE:], encryption.aad))
        except InvalidTag:
            raise InputError(
                f"{path}:{position}", "AES-GCM tag does not match: damaged object or wrong key"
            ) from None

    def chunk(self, data: bytes, path: str, position: int, original_size: int) -> bytes:
        """One stored chunk of ``.log`` (at ``position`` of ``path``) as the original bytes."""
        out = self.decrypt(data, path, position)
        if self.manifest.compression:
            try:
                # the frame must say the chunk's own size before it is decompressed: a 32 KB
                # frame of a GiB of zeros is a bomb, not a chunk
                out = _zstd_decompress(out, original_size)
            except ValueError as e:
                raise InputError(f"{path}:{position}", f"chunk does not decompress: {e}") from None
        if len(out) != original_size:
            raise InputError(
                f"{path}:{position}",
                f"chunk holds {len(out)} bytes, the chunk index says {original_size}",
            )
        return out

    def chunks(self, stored: bytes, first: int, path: str) -> Iterator[tuple[int, bytes]]:
        """Consecutive stored chunks from chunk ``first``: (original position, original bytes)."""
        index = self.manifest.chunk_index
        at = 0
        i = first
        while at < len(stored):
            position = index.stored_offset(i)
            size = index.stored_offset(i + 1) - position
            start, end = index.original_range(i)
            yield start, self.chunk(stored[at : at + size], path, position, end - start)
            at += size
            i += 1


# -- custom metadata -----------------------------------------------------------------------


@dataclass(frozen=True)
class CustomMetadata:
    remote_size: int | None = None
    object_prefix: str | None = None
    object_key: str | None = None


def _uvarint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("varint runs past the end")
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def parse_custom_metadata(data: bytes) -> CustomMetadata:
    """SegmentCustomMetadataSerde: tagged fields 0 remote_size (varlong), 1 object_prefix, 2
    object_key (compact strings); other tags skipped. ValueError when it does not parse."""
    if not data:
        return CustomMetadata()
    count, at = _uvarint(data, 0)
    fields: dict[int, bytes] = {}
    for _ in range(count):
        tag, at = _uvarint(data, at)
        size, at = _uvarint(data, at)
        if at + size > len(data):
            raise ValueError(f"tag {tag} runs past the end")
        fields[tag], at = data[at : at + size], at + size
    if at != len(data):
        raise ValueError(f"{len(data) - at} bytes after the tagged fields")
    remote_size = None
    if 0 in fields:
        raw, _ = _uvarint(fields[0], 0)
        remote_size = (raw >> 1) ^ -(raw & 1)
    return CustomMetadata(
        remote_size, _compact_string(fields.get(1)), _compact_string(fields.get(2))
    )


def _compact_string(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    length, at = _uvarint(raw, 0)
    return None if length == 0 else raw[at : at + length - 1].decode()


__all__ = [
    "INDEXES",
    "INDEX_NAMES",
    "LOG",
    "MANIFEST",
    "ChunkIndex",
    "CustomMetadata",
    "Detransform",
    "Encryption",
    "Manifest",
    "parse_custom_metadata",
    "parse_manifest",
    "unwrap_data_key",
]
