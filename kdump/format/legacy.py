"""Legacy magic v0/v1 messages (LegacyRecord, AbstractLegacyRecordBatch): a plain message is
its own record; a compressed wrapper holds inner messages, with the offsets rules of Kafka's
deep iterator (AbstractLegacyRecordBatch.DeepRecordsIterator).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from kdump.crc import Buffer, crc32
from kdump.errors import (
    CodecError,
    CorruptRecordError,
    DecompressionError,
    InvalidWrapperError,
    KdumpError,
    Malformed,
)
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES, ZSTD, decompress
from kdump.format.layout import (
    COMPRESSION_MASK,
    LEGACY_CRC_START,
    LEGACY_HEADER_V0,
    LEGACY_HEADER_V1,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_BIT,
)
from kdump.format.records import Record, read_field

if TYPE_CHECKING:
    from kdump.format.batch import Batch, LegacyRecordBatch

_INT32 = struct.Struct(">i")


class _LegacyMessage(NamedTuple):
    offset: int
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    computed_crc: int

    @property
    def end_delta(self) -> int:
        return self.size + LOG_OVERHEAD


def _legacy_message(data: Buffer, pos: int, end: int) -> _LegacyMessage:
    if pos + LOG_OVERHEAD + RECORD_OVERHEAD_V0 > end:
        raise Malformed("inner message header runs past the wrapper")
    magic = data[pos + LOG_OVERHEAD + 4]
    if magic == 0:
        offset, size, crc, magic, attributes = LEGACY_HEADER_V0.unpack_from(data, pos)
        timestamp, p = NO_TIMESTAMP, pos + LEGACY_HEADER_V0.size
    elif magic == 1:
        if pos + LEGACY_HEADER_V1.size + 8 > end:
            raise Malformed("inner v1 message header runs past the wrapper")
        offset, size, crc, magic, attributes, timestamp = LEGACY_HEADER_V1.unpack_from(data, pos)
        p = pos + LEGACY_HEADER_V1.size
    else:
        raise Malformed(f"unknown magic {magic} in a legacy message")
    msg_end = pos + LOG_OVERHEAD + size
    if size < RECORD_OVERHEAD_V0 or msg_end > end:
        raise Malformed(f"legacy message size {size} runs past its container")
    (key_size,) = _INT32.unpack_from(data, p)
    key = read_field(data, p + 4, key_size, msg_end)
    p += 4 + max(key_size, 0)
    if p + 4 > msg_end:
        raise Malformed("legacy message value length runs past the message")
    (value_size,) = _INT32.unpack_from(data, p)
    value = read_field(data, p + 4, value_size, msg_end)
    if p + 4 + max(value_size, 0) != msg_end:
        raise Malformed("legacy message key and value do not fill its size")
    computed = crc32(memoryview(data)[pos + LEGACY_CRC_START : msg_end])
    return _LegacyMessage(offset, size, crc, magic, attributes, timestamp, key, value, computed)


def _inner_messages(
    wrapper: _LegacyMessage, path: str, position: int, max_batch_bytes: int
) -> list[_LegacyMessage]:
    codec = wrapper.attributes & COMPRESSION_MASK
    if codec == ZSTD:
        # Checked before anything is decompressed; Kafka's message names the magic, not the codec.
        raise InvalidWrapperError(
            path,
            position,
            f"Invalid wrapper compressionType found in legacy deep record iterator {wrapper.magic}",
        )
    try:
        data = decompress(codec, wrapper.value or b"", max_batch_bytes)
    except CodecError as e:
        raise DecompressionError(path, position, str(e)) from None
    inner: list[_LegacyMessage] = []
    pos = 0
    while pos < len(data):
        try:
            msg = _legacy_message(data, pos, len(data))
        except (Malformed, IndexError, struct.error) as e:
            raise CorruptRecordError(path, position, f"inner message {len(inner)}: {e}") from None
        if msg.attributes & COMPRESSION_MASK:
            raise CorruptRecordError(
                path, position, "compressed messages with compressed inner messages"
            )
        inner.append(msg)
        pos += msg.end_delta
    if not inner:
        raise CorruptRecordError(path, position, "compressed wrapper holds no inner message")
    return inner


def _absolute_offsets(
    wrapper: _LegacyMessage, inner: list[_LegacyMessage], path: str, position: int
) -> list[int]:
    """DeepRecordsIterator's absolute offsets.

    v0 inner offsets are absolute. v1 inner offsets are relative to the wrapper's, which is the
    last inner message's, except that a wrapper offset of 0 (as some librdkafka versions and
    kafka-python's builder write it) leaves the inner offsets as they are, and a nonzero wrapper
    offset below the last relative offset is refused.
    """
    if wrapper.magic == 0 or wrapper.offset == 0:
        return [m.offset for m in inner]
    last = inner[-1].offset
    if wrapper.offset < last:
        raise InvalidWrapperError(
            path,
            position,
            "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
            f"'{wrapper.offset}' is less than the last inner message offset '{last}' and it is "
            "not zero.",
        )
    return [wrapper.offset - last + m.offset for m in inner]


def _wrapper(buf: Buffer, batch_position: int, end: int, path: str) -> _LegacyMessage:
    try:
        return _legacy_message(buf, batch_position, end)
    except (Malformed, IndexError, struct.error) as e:
        raise CorruptRecordError(path, batch_position, str(e)) from None


def legacy_wrapper_base_offset(buf: Buffer, position: int, path: str, offset: int) -> int:
    """First inner offset of a compressed wrapper; its own offset where it does not decode."""
    try:
        wrapper = _legacy_message(buf, position, len(buf))
        inner = _inner_messages(wrapper, path, position, DEFAULT_MAX_BATCH_BYTES)
        return _absolute_offsets(wrapper, inner, path, position)[0]
    except (KdumpError, Malformed, IndexError, struct.error):
        return offset


def legacy_wrapper_error(buf: Buffer, batch: Batch, path: str) -> KdumpError | None:
    """Why Kafka's deep iterator would refuse this shallow message, if it would.

    verify asks without --deep: such a wrapper cannot be served to a consumer. A payload that
    does not decompress is left to the deep checks, as before.
    """
    if batch.magic > 1 or not batch.attributes & COMPRESSION_MASK:
        return None
    try:
        wrapper = _legacy_message(buf, batch.position, batch.end)
        _absolute_offsets(
            wrapper,
            _inner_messages(wrapper, path, batch.position, DEFAULT_MAX_BATCH_BYTES),
            path,
            batch.position,
        )
    except InvalidWrapperError as e:
        return e
    except (KdumpError, Malformed, IndexError, struct.error):
        return None
    return None


def iter_legacy_records(
    buf: Buffer,
    batch: LegacyRecordBatch,
    path: str = "<bytes>",
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[Record]:
    """AbstractLegacyRecordBatch.iterator(): the message itself, or a wrapper's inner messages."""
    wrapper = _wrapper(buf, batch.position, batch.end, path)
    if not wrapper.attributes & COMPRESSION_MASK:
        yield _legacy_record(wrapper, wrapper.offset, wrapper.timestamp)
        return
    inner = _inner_messages(wrapper, path, batch.position, max_batch_bytes)
    log_append = wrapper.magic == 1 and bool(wrapper.attributes & TIMESTAMP_TYPE_BIT)
    offsets = _absolute_offsets(wrapper, inner, path, batch.position)
    for msg, offset in zip(inner, offsets, strict=True):
        yield _legacy_record(msg, offset, wrapper.timestamp if log_append else msg.timestamp)


def _legacy_record(msg: _LegacyMessage, offset: int, timestamp: int) -> Record:
    return Record(
        offset,
        timestamp,
        msg.key,
        msg.value,
        (),
        NO_SEQUENCE,
        msg.attributes,
        msg.end_delta,
        msg.crc,
        msg.crc == msg.computed_crc,
    )
