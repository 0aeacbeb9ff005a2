"""Decompression of batch payloads for Kafka's codecs, with a bound on the output size, and
compression as Kafka's writers compress (``compress``: what the log cleaner re-encodes with).

Kafka's ``CompressionType``: 0 none, 1 gzip, 2 snappy (xerial framing, or raw), 3 lz4 (frame
format; magic v0 wrote a wrong header checksum), 4 zstd.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from kdump.crc import Buffer
from kdump.errors import CodecError
from kdump.format.layout import DEFAULT_MAX_BATCH_BYTES

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = len(XERIAL_MAGIC) + 8
_INT32 = struct.Struct(">i")
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def codec_name(codec: int) -> str:
    return CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else f"unknown({codec})"


def decompress(codec: int, data: Buffer, limit: int = DEFAULT_MAX_BATCH_BYTES) -> bytes | bytearray:
    """Decompress one batch payload; raise CodecError when it is damaged or exceeds ``limit``.

    The payload is the buffer it was decompressed into (a bytearray, never copied to bytes):
    a payload at the limit costs the limit once, not twice (issue 27)."""
    if codec == NONE:
        return bytes(data)
    if codec not in (GZIP, SNAPPY, LZ4, ZSTD):
        raise CodecError(f"unknown compression codec {codec}")
    # cramjam (its own native library, a few ms to load) only once a batch is compressed: a
    # verify without --deep, or of uncompressed batches, starts without it.
    import zlib  # gzip's, and its error: loaded by the first compressed batch, as cramjam

    cramjam = _cramjam()
    failures: tuple[type[BaseException], ...] = (zlib.error, ValueError, OverflowError)
    failures += (cramjam.DecompressionError,) if cramjam is not None else _arrow_errors()
    try:
        if codec == GZIP:
            return _gunzip(data, limit)
        if codec == SNAPPY:
            return _snappy(data, limit)
        payload = fix_lz4_header_checksum(data) if codec == LZ4 else data
        if cramjam is None:
            return _arrow_stream(CODEC_NAMES[codec], payload, limit)
        into = cramjam.lz4.decompress_into if codec == LZ4 else cramjam.zstd.decompress_into
        return _grow_into(into, payload, limit)
    except CodecError:
        raise
    except failures as e:
        raise CodecError(f"{codec_name(codec)} payload does not decompress: {e}") from None


@cache
def _cramjam() -> Any:
    """cramjam, or None where it cannot load: kdump shipped to Spark executors of another
    platform than the driver's (kdump.spark.ship), which then decompress with pyarrow, part of
    what pyspark needs there (``_arrow_stream``)."""
    try:
        import cramjam
    except ImportError:
        return None
    return cramjam


def decompressor() -> str:
    """What decompresses snappy, lz4 and zstd payloads here: "cramjam", or "pyarrow"."""
    return "pyarrow" if _cramjam() is None else "cramjam"


def _arrow_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (pa.ArrowException, OSError)


def _too_big(limit: int) -> CodecError:
    return CodecError(f"decompressed payload exceeds the limit of {limit} bytes")


GUNZIP_PIECE = 1 << 20
"""Bytes zlib hands back at a time: appended where the payload grows, never held twice."""


def _gunzip(data: Buffer, limit: int) -> bytearray:
    import zlib

    out = bytearray()
    rest = bytes(data)
    while rest:  # one gzip member after another
        d = zlib.decompressobj(wbits=31)
        while not d.eof:
            piece = d.decompress(rest, min(GUNZIP_PIECE, limit + 1 - len(out)))
            out += piece
            if len(out) > limit:
                raise _too_big(limit)
            rest = d.unconsumed_tail
            if not rest and not piece:  # the input is all read and gives nothing more
                break
        if not d.eof:
            raise CodecError("gzip payload ends before its stream does")
        rest = d.unused_data
    return out


def _snappy(data: Buffer, limit: int) -> bytearray:
    view = memoryview(data)
    if bytes(view[: len(XERIAL_MAGIC)]) != XERIAL_MAGIC:
        return _snappy_raw(view, limit)
    out = bytearray()
    pos = _XERIAL_HEADER
    while pos < len(view):
        if pos + 4 > len(view):
            raise CodecError("snappy block length runs past the payload")
        (n,) = _INT32.unpack_from(view, pos)
        if n < 0 or pos + 4 + n > len(view):
            raise CodecError(f"snappy block of {n} bytes runs past the payload")
        out += _snappy_raw(view[pos + 4 : pos + 4 + n], limit - len(out))
        pos += 4 + n
    return out


def _snappy_raw(data: Buffer, limit: int) -> bytearray:
    cramjam = _cramjam()
    if cramjam is None:
        return _arrow_snappy(data, limit)
    size = cramjam.snappy.decompress_raw_len(data)
    if size > limit:
        raise _too_big(limit)
    out = bytearray(size)
    del out[cramjam.snappy.decompress_raw_into(data, out) :]
    return out


def _arrow_snappy(data: Buffer, limit: int) -> bytearray:
    """Raw snappy through pyarrow, which must be told the size: the block's leading varint."""
    import pyarrow as pa

    view = memoryview(data)
    size = shift = 0
    for i, byte in enumerate(view[:5]):
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
        if i == 4:
            raise CodecError("snappy block length is not a varint of 5 bytes at most")
    if size > limit:
        raise _too_big(limit)
    return bytearray(pa.Codec("snappy").decompress(view, decompressed_size=size))


ARROW_PIECE = 1 << 20
"""Bytes pyarrow's stream hands back at a time, as GUNZIP_PIECE."""


def _arrow_stream(codec: str, data: Buffer, limit: int) -> bytearray:
    """An LZ4 frame or a zstd stream through pyarrow's decompressing stream, read a piece at a
    time up to ``limit`` (the payload's size is not always in its header)."""
    import pyarrow as pa

    out = bytearray()
    with pa.CompressedInputStream(pa.BufferReader(pa.py_buffer(data)), codec) as stream:
        while piece := stream.read(min(ARROW_PIECE, limit + 1 - len(out))):
            out += piece
            if len(out) > limit:
                raise _too_big(limit)
    return out


def _grow_into(
    decompress_into: Callable[[Buffer, bytearray], int], data: Buffer, limit: int
) -> bytearray:
    """Decompress into a buffer that doubles until the payload fits or passes ``limit``."""
    cramjam = _cramjam()
    size = min(limit, max(64 * 1024, 8 * len(data)))
    out = bytearray()
    while True:
        del out[:]  # the smaller buffer goes before the next is made
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except cramjam.DecompressionError as e:
            if "whole buffer" not in str(e):
                raise
            if size >= limit:
                raise _too_big(limit) from None
            size = min(limit, size * 2)
            continue
        del out[n:]  # shrunk where it lies: no copy
        return out


def fix_lz4_header_checksum(data: Buffer) -> bytes:
    """Rewrite an LZ4 frame's header checksum byte so strict decoders accept it.

    Kafka's magic v0 writer (KafkaLZ4BlockOutputStream with useBrokenFlagDescriptorChecksum)
    hashed the magic number along with the descriptor; Kafka's reader ignores the byte, so we do.
    """
    raw = bytearray(data)
    if bytes(raw[:4]) != LZ4_FRAME_MAGIC or len(raw) < 7:
        raise CodecError("lz4 payload does not start with an LZ4 frame header")
    flg = raw[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(raw) <= end:
        raise CodecError("lz4 frame header runs past the payload")
    raw[end] = (xxh32(bytes(raw[4:end])) >> 8) & 0xFF
    return bytes(raw)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, enough for LZ4 frame descriptors (a few bytes)."""
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while i + 16 <= n:
            for k in range(4):
                (lane,) = struct.unpack_from("<I", data, i + 4 * k)
                v[k] = (_rotl((v[k] + lane * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


# -- compression, byte for byte as Kafka's Compression.of(type).build() writes ------------------

GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
"""java.util.zip.GZIPOutputStream's fixed header: no name, mtime 0, OS 255 (unknown)."""
GZIP_DEFAULT_LEVEL = 6
"""Deflater.DEFAULT_COMPRESSION (-1), which zlib takes as level 6."""
XERIAL_BLOCK = 32 * 1024
"""snappy-java's SnappyOutputStream default block size."""
LZ4_BLOCK = 64 * 1024
"""Lz4BlockOutputStream.BLOCKSIZE_64KB: each block compressed on its own."""
LZ4_FLG, LZ4_BD = 0x60, 0x40
"""FLG: version 1, independent blocks, no checksums, no content size; BD: 64 KiB blocks."""
LZ4_UNCOMPRESSED = 0x80000000
ZSTD_DEFAULT_LEVEL = 3
_LE32 = struct.Struct("<I")


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed as Kafka 4.x compresses a batch's records at each codec's default
    level (MemoryRecordsBuilder over Compression.wrapForOutput), byte for byte where kdump's
    libraries match the broker's (docs/compaction.md: JDK zlib, snappy-java 1.1.10, lz4-java
    1.11 and zstd-jni 1.5.7 against zlib, Google's snappy (the system's, else cramjam's Rust
    port, whose bytes differ on some blocks), cramjam's lz4 and libzstd)."""
    if codec == NONE:
        return data
    import cramjam

    if codec == GZIP:
        import zlib

        # GzipOutputStream: raw deflate at the default level, memLevel 8, then CRC-32, ISIZE
        deflater = zlib.compressobj(GZIP_DEFAULT_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, 8)
        body = deflater.compress(data) + deflater.flush()
        return GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    if codec == SNAPPY:
        # SnappyOutputStream: the xerial header, then 32 KiB blocks, each length-prefixed
        raw = google_snappy() or (lambda block: bytes(cramjam.snappy.compress_raw(block)))
        out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
        for i in range(0, len(data), XERIAL_BLOCK):
            block = raw(data[i : i + XERIAL_BLOCK])
            out += _INT32.pack(len(block)) + block
        return bytes(out)
    if codec == LZ4:
        # Lz4BlockOutputStream at the default level (9) takes LZ4's fast compressor; a block
        # that does not shrink is stored with the high bit of its length set
        descriptor = bytes((LZ4_FLG, LZ4_BD))
        out = bytearray(LZ4_FRAME_MAGIC + descriptor + bytes(((xxh32(descriptor) >> 8) & 0xFF,)))
        for i in range(0, len(data), LZ4_BLOCK):
            block = data[i : i + LZ4_BLOCK]
            packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
            if len(packed) >= len(block):
                out += _LE32.pack(len(block) | LZ4_UNCOMPRESSED) + block
            else:
                out += _LE32.pack(len(packed)) + packed
        return bytes(out + _LE32.pack(0))
    if codec == ZSTD:
        # zstd-jni's ZstdOutputStream: a streamed frame (no content size); the builder's close
        # flushes (ending a block) and then ends the frame with an empty last block
        compressor = cramjam.zstd.Compressor(level=ZSTD_DEFAULT_LEVEL)
        compressor.compress(data)
        return bytes(compressor.flush()) + bytes(compressor.finish())
    raise CodecError(f"unknown compression codec {codec}")


SNAPPY_LIBRARY = "libsnappy.so.1"
"""Google's C++ snappy as the system ships it (Debian's libsnappy1v5, 1.1.9): the compressor
snappy-java embeds (1.1.10 in Kafka 4.4's snappy-java 1.1.10.7), whose blocks it compresses to
the same bytes (tests/test_kafka_snappy.py compares them on a corpus, through snappy-java)."""


@functools.cache
def google_snappy() -> Callable[[bytes], bytes] | None:
    """snappy::RawCompress of the system's Google snappy (its C API, snappy-c.h), or None where
    there is none: compress() then takes cramjam's snappy, the Rust port, which makes other
    choices on some blocks (the records the same, the bytes not)."""
    import ctypes

    try:
        lib = ctypes.CDLL(SNAPPY_LIBRARY)
        compress_c, max_length = lib.snappy_compress, lib.snappy_max_compressed_length
    except (OSError, AttributeError):
        return None
    size_t = ctypes.c_size_t
    compress_c.argtypes = [ctypes.c_char_p, size_t, ctypes.c_char_p, ctypes.POINTER(size_t)]
    compress_c.restype = ctypes.c_int
    max_length.argtypes = [size_t]
    max_length.restype = size_t

    def raw(block: bytes) -> bytes:
        out = ctypes.create_string_buffer(max_length(len(block)))
        length = size_t(len(out))
        if compress_c(block, len(block), out, ctypes.byref(length)) != 0:  # SNAPPY_OK is 0
            raise CodecError(f"{SNAPPY_LIBRARY} could not compress a block of {len(block)} bytes")
        return out.raw[: length.value]

    return raw
