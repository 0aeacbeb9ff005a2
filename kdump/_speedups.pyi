from typing import Any

from kdump.crc import Buffer

WALK_COLUMNS: tuple[str, ...]

def hardware_crc() -> bool: ...
def set_hardware_crc(on: bool, /) -> bool: ...
def crc32c(buf: Buffer, start: int = 0, end: int = ..., /) -> int: ...
def advise(buf: Buffer, start: int, end: int, advice: int, /) -> int: ...
def pack_entries(
    firsts: Buffer,
    seconds: Buffer,
    base_offset: int,
    time_index: bool,
    last_first: int,
    last_second: int,
    /,
) -> tuple[bytes, int, int, int] | None: ...
def walk_v2(
    buf: Buffer,
    start: int,
    stop: int,
    end: int,
    max_size: int,
    limit: int,
    check_crc: bool,
    until_invalid: bool,
    share: CrcShare | None = None,
    /,
) -> tuple[int, bytes, int]: ...

class CrcShare:
    """A walk's CRC work shared with its read-ahead thread."""

    def help(self, kicks: int, /) -> bool: ...
    def kicks(self) -> int: ...
    def counts(self) -> tuple[int, int]: ...
    def kick(self) -> None: ...
    def close(self) -> None: ...

def column_range(column: Buffer, stop: int, /) -> tuple[int, int] | None: ...
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
def index_keys(index: Buffer, used: int, base_offset: int, time_index: bool, /) -> bytes: ...
def gather(
    positions: Buffer,
    base_offsets: Buffer,
    last_offsets: Buffer,
    max_timestamps: Buffer,
    wanted_positions: Buffer,
    wanted_offsets: Buffer,
    position_rows: Buffer,
    offset_rows: Buffer,
    state: tuple[int, ...],
    /,
) -> tuple[int, ...]: ...
def offset_index_check(
    index: Buffer, used: int, base_offset: int, rows: Buffer, valid_bytes: int, last_log: int, /
) -> tuple[list[int], int, int, int]: ...
def time_index_check(index: Buffer, used: int, base_offset: int, rows: Buffer, /) -> list[int]: ...
def render_batches(
    buf: Buffer,
    columns: tuple[Buffer, ...],
    start: int,
    as_json: bool,
    batch_template: str,
    record_template: str | None,
    key_decoder: int,
    value_decoder: int,
    last_offset: int,
    max_output: int,
    /,
) -> tuple[bytes, int, int, list[tuple[int, int]], int]: ...
def render_payload(
    payload: Buffer,
    columns: tuple[Buffer, ...],
    index: int,
    as_json: bool,
    batch_template: str,
    record_template: str,
    key_decoder: int,
    value_decoder: int,
    last_offset: int,
    position: int = 0,
    first: int = 0,
    max_output: int = ...,
    /,
) -> tuple[bytes, int, list[tuple[int, int]], int, int] | None: ...

RENDER_FIELDS: tuple[str, ...]

def deep_check(
    buf: Buffer, columns: tuple[Buffer, ...], start: int, payload: Buffer | None, /
) -> tuple[int, int, list[int]]: ...
def v2_records(
    payload: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None,
    base_sequence: int,
    record_cls: type[tuple[Any, ...]],
    header_cls: type[tuple[Any, ...]],
    start: int = 0,
    first: int = 0,
    max_records: int = ...,
    max_bytes: int = ...,
    /,
) -> tuple[list[Any], int, tuple[int, int, int, int] | None] | None: ...
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
