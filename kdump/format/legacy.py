"""Legacy magic v0/v1 messages (LegacyRecord, AbstractLegacyRecordBatch): a plain message is
its own record; a compressed wrapper holds inner messages, with the offsets rules of Kafka's
deep iterator (AbstractLegacyRecordBatch.DeepRecordsIterator).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

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
    MAGIC_OFFSET,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_BIT,
)
from kdump.format.records import Record, read_field
from kdump.tuples import NamedTuple

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


def _legacy_message(data: Buffer, pos: int, end: int, fields: bool = True) -> _LegacyMessage:
    """The message at ``pos``, checked; without ``fields`` its key, value and computed CRC are
    left out (None, 0): what a walk over a wrapper's inner messages needs for their offsets."""
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
    key = read_field(data, p + 4, key_size, msg_end, fields)
    p += 4 + max(key_size, 0)
    if p + 4 > msg_end:
        raise Malformed("legacy message value length runs past the message")
    (value_size,) = _INT32.unpack_from(data, p)
    value = read_field(data, p + 4, value_size, msg_end, fields)
    if p + 4 + max(value_size, 0) != msg_end:
        raise Malformed("legacy message key and value do not fill its size")
    computed = crc32(memoryview(data)[pos + LEGACY_CRC_START : msg_end]) if fields else 0
    return _LegacyMessage(offset, size, crc, magic, attributes, timestamp, key, value, computed)


def _decompressed(
    wrapper: _LegacyMessage, path: str, position: int, max_batch_bytes: int
) -> bytes | bytearray:
    """A compressed wrapper's inner messages, decompressed (at most ``max_batch_bytes``)."""
    codec = wrapper.attributes & COMPRESSION_MASK
    if codec == ZSTD:
        raise _zstd_wrapper(wrapper, path, position)
    try:
        return decompress(codec, wrapper.value or b"", max_batch_bytes)
    except CodecError as e:
        raise DecompressionError(path, position, str(e)) from None


def _zstd_wrapper(wrapper: _LegacyMessage, path: str, position: int) -> InvalidWrapperError:
    # Checked before anything is decompressed; Kafka's message names the magic, not the codec.
    return InvalidWrapperError(
        path,
        position,
        f"Invalid wrapper compressionType found in legacy deep record iterator {wrapper.magic}",
    )


def _inner_messages(
    data: Buffer, path: str, position: int, fields: bool = True
) -> Iterator[_LegacyMessage]:
    """The inner messages of a wrapper's decompressed ``data``, one at a time (a wrapper of
    millions, a decompression bomb, is never held as Python objects at once: issue 27)."""
    pos = n = 0
    while pos < len(data):
        try:
            msg = _legacy_message(data, pos, len(data), fields)
        except (Malformed, IndexError, struct.error) as e:
            raise CorruptRecordError(path, position, f"inner message {n}: {e}") from None
        if msg.attributes & COMPRESSION_MASK:
            raise CorruptRecordError(
                path, position, "compressed messages with compressed inner messages"
            )
        yield msg
        pos += msg.end_delta
        n += 1
    if not n:
        raise CorruptRecordError(path, position, "compressed wrapper holds no inner message")


def _first_and_last(data: Buffer, path: str, position: int) -> tuple[int, int]:
    """The offsets of the first and the last inner message, every one checked as Kafka's deep
    iterator reads them all before it gives the first (DeepRecordsIterator's constructor).

    The messages as Kafka writes them are walked by ``_well_formed``; at anything else the walk
    starts again with ``_inner_messages``, which words what is wrong."""
    found = _well_formed(data)
    if found is not None:
        return found
    first = last = None
    for msg in _inner_messages(data, path, position, fields=False):
        if first is None:
            first = msg.offset
        last = msg.offset
    assert first is not None and last is not None  # _inner_messages raises on none
    return first, last


_V0_HEAD = struct.Struct(">qiIbbi")  # LEGACY_HEADER_V0, then the key length
_V1_HEAD = struct.Struct(">qiIbbqi")  # LEGACY_HEADER_V1, then the key length


def _well_formed(data: Buffer) -> tuple[int, int] | None:
    """(first, last offset) of inner messages that pass every check of _legacy_message and
    _inner_messages, or None at the first that might not: the same checks inline, with no
    object per message (a wrapper of 7.8 M took 30 s through _legacy_message, issue 27)."""
    end, pos = len(data), 0
    first = last = None
    v0, v1, length = _V0_HEAD.unpack_from, _V1_HEAD.unpack_from, _INT32.unpack_from
    while pos < end:
        short = pos + _V1_HEAD.size > end  # no room for a v1 header and key length
        if short and (pos + _V0_HEAD.size > end or data[pos + MAGIC_OFFSET] != 0):
            return None
        magic = data[pos + MAGIC_OFFSET]
        if magic == 0:
            offset, size, _, _, attributes, key_size = v0(data, pos)
            p = pos + _V0_HEAD.size
        elif magic == 1:
            offset, size, _, _, attributes, _, key_size = v1(data, pos)
            p = pos + _V1_HEAD.size
        else:
            return None
        msg_end = pos + LOG_OVERHEAD + size
        if size < RECORD_OVERHEAD_V0 or msg_end > end or attributes & COMPRESSION_MASK:
            return None
        p += max(key_size, 0)
        if p + 4 > msg_end:
            return None
        (value_size,) = length(data, p)
        if p + 4 + max(value_size, 0) != msg_end:
            return None
        if first is None:
            first = offset
        last = offset
        pos = msg_end
    return None if first is None or last is None else (first, last)


def _offset_shift(wrapper: _LegacyMessage, last: int, path: str, position: int) -> int:
    """What DeepRecordsIterator adds to an inner offset to make it absolute.

    v0 inner offsets are absolute. v1 inner offsets are relative to the wrapper's, which is the
    last inner message's, except that a wrapper offset of 0 (as some librdkafka versions and
    kafka-python's builder write it) leaves the inner offsets as they are, and a nonzero wrapper
    offset below the last relative offset is refused.
    """
    if wrapper.magic == 0 or wrapper.offset == 0:
        return 0
    if wrapper.offset < last:
        raise InvalidWrapperError(
            path,
            position,
            "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
            f"'{wrapper.offset}' is less than the last inner message offset '{last}' and it is "
            "not zero.",
        )
    return wrapper.offset - last


def _wrapper(buf: Buffer, batch_position: int, end: int, path: str) -> _LegacyMessage:
    try:
        return _legacy_message(buf, batch_position, end)
    except (Malformed, IndexError, struct.error) as e:
        raise CorruptRecordError(path, batch_position, str(e)) from None


def legacy_wrapper_base_offset(
    buf: Buffer,
    position: int,
    path: str,
    offset: int,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> int:
    """First inner offset of a compressed wrapper; its own offset where it does not decode
    (or decompresses past ``max_batch_bytes``)."""
    try:
        wrapper = _legacy_message(buf, position, len(buf))
        data = _decompressed(wrapper, path, position, max_batch_bytes)
        first, last = _first_and_last(data, path, position)
        return first + _offset_shift(wrapper, last, path, position)
    except (KdumpError, Malformed, IndexError, struct.error):
        return offset


def legacy_wrapper_error(
    buf: Buffer, batch: Batch, path: str, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
) -> KdumpError | None:
    """Why Kafka's deep iterator would refuse this shallow message, if it would.

    verify asks without --deep: such a wrapper cannot be served to a consumer. A payload that
    does not decompress is left to the deep checks, as before.
    """
    if batch.magic > 1 or not batch.attributes & COMPRESSION_MASK:
        return None
    try:
        wrapper = _legacy_message(buf, batch.position, batch.end)
        if wrapper.attributes & COMPRESSION_MASK == ZSTD:
            return _zstd_wrapper(wrapper, path, batch.position)
        if wrapper.magic == 0 or wrapper.offset == 0:
            return None  # inner offsets taken as they are: nothing to refuse
        data = _decompressed(wrapper, path, batch.position, max_batch_bytes)
        _offset_shift(wrapper, _first_and_last(data, path, batch.position)[1], path, batch.position)
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
    """AbstractLegacyRecordBatch.iterator(): the message itself, or a wrapper's inner messages
    (all checked first, as Kafka's deep iterator does, then decoded one at a time)."""
    wrapper = _wrapper(buf, batch.position, batch.end, path)
    if not wrapper.attributes & COMPRESSION_MASK:
        yield _legacy_record(wrapper, wrapper.offset, wrapper.timestamp)
        return
    data = _decompressed(wrapper, path, batch.position, max_batch_bytes)
    shift = _offset_shift(
        wrapper, _first_and_last(data, path, batch.position)[1], path, batch.position
    )
    log_append = wrapper.magic == 1 and bool(wrapper.attributes & TIMESTAMP_TYPE_BIT)
    for msg in _inner_messages(data, path, batch.position):
        yield _legacy_record(
            msg, msg.offset + shift, wrapper.timestamp if log_append else msg.timestamp
        )


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
