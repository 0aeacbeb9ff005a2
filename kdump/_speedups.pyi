from typing import Any

from kdump.crc import Buffer

HARDWARE_CRC: int

def crc32c(buf: Buffer, start: int = 0, end: int = ..., /) -> int: ...
def install_is_valid(cls: type[tuple[Any, ...]], /) -> None: ...
def v2_batches(
    buf: Buffer, start: int, end: int, max_size: int, limit: int, cls: type[tuple[Any, ...]], /
) -> tuple[list[Any], int]: ...

PRODUCERS_IGNORED: int
PRODUCERS_TRANSACTIONAL: int
PRODUCERS_ALL: int

def scan_v2(
    buf: Buffer,
    start: int,
    stop: int,
    end: int,
    segment_base: int,
    prev_last: int,
    epoch: int,
    limit: int,
    producers: int,
    /,
) -> tuple[int, int, int, tuple[int, int] | None, bytes, bytes, bytes, bytes]: ...
def offset_index_walk(
    index: Buffer,
    used: int,
    base_offset: int,
    positions: Buffer,
    last_offsets: Buffer,
    valid_bytes: int,
    last_log: int,
    /,
) -> tuple[list[int], int, int]: ...
def time_index_walk(
    index: Buffer,
    used: int,
    base_offset: int,
    base_offsets: Buffer,
    last_offsets: Buffer,
    max_timestamps: Buffer,
    /,
) -> list[int]: ...
def v2_records(
    payload: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None,
    base_sequence: int,
    record_cls: type[tuple[Any, ...]],
    header_cls: type[tuple[Any, ...]],
    /,
) -> tuple[list[Any], int, tuple[int, str] | None] | None: ...
def index_points(
    positions: Buffer,
    last_offsets: Buffer,
    max_timestamps: Buffer,
    interval: int,
    last_entry: int,
    max_ts: int,
    offset_of_max_ts: int,
    /,
) -> tuple[int, int, int, bytes, bytes, bytes, bytes]: ...
