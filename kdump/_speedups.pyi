from typing import Any

from kdump.crc import Buffer

WALK_COLUMNS: tuple[str, ...]

def hardware_crc() -> bool: ...
def set_hardware_crc(on: bool, /) -> bool: ...
def crc32c(buf: Buffer, start: int = 0, end: int = ..., /) -> int: ...
def walk_v2(
    buf: Buffer,
    start: int,
    stop: int,
    end: int,
    max_size: int,
    limit: int,
    check_crc: bool,
    until_invalid: bool,
    /,
) -> tuple[int, bytes, int]: ...
def flag_batches(
    base_offsets: Buffer,
    last_offsets: Buffer,
    epochs: Buffer,
    magics: Buffer,
    valids: Buffer,
    producer_ids: Buffer,
    attributes: Buffer,
    segment_base: int,
    has_prev: bool,
    prev_last: int,
    epoch: int,
    producers: int,
    /,
) -> tuple[list[int], int, tuple[int, int] | None, bool, int, int]: ...
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
