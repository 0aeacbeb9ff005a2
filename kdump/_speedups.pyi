# kdump/_speedups.c, as mypy sees it through kdump.speedups.native(). Each result the Python
# code reads field by field is a struct sequence of the module (a named tuple); results with a
# Python twin (flag_batches: kdump.format.walk.Flags, offset_index_check: the reference in
# kdump.checks) are plain tuples, named where the call site takes them, and so is v2_records',
# made once per batch. gather's state is its GatherState, and read back by name.
# tests/test_speedups.py checks this stub against the built module (mypy's stubtest).

from typing import Any, Final, Protocol, final

from _typeshed import ReadableBuffer, WriteableBuffer, structseq

WALK_COLUMNS: tuple[str, ...]
RENDER_FIELDS: tuple[str, ...]
RECORD_FIELDS: tuple[str, ...]
RECORD_FAULTS: tuple[str, ...]
LAYOUT: dict[str, int]

HARDWARE_CRC: str | None

def hardware_crc() -> bool: ...
def set_hardware_crc(on: bool, /) -> bool: ...
def crc32c(buf: ReadableBuffer, start: int = 0, end: int = ..., /) -> int: ...
def advise(buf: ReadableBuffer, start: int, end: int, advice: int, /) -> int: ...
def start_writeback(fd: int, /) -> int: ...
def cached_pages(fd: int, start: int, size: int, /) -> int: ...
def mincore(fd: int, start: int, size: int, /) -> bytes | None: ...

@final
class RunColumns:
    """A run's int64 columns (walk_v2), read through the buffer protocol."""
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __len__(self) -> int:
        """Its size in bytes."""
    @property
    def facts(self) -> tuple[int, int, int, int, int, bool, int, int] | None:
        """(least max timestamp, greatest max timestamp, transactional or control batches,
        batches with a delete horizon, batches with a producer id, plain, failed CRCs) of the
        run's batches (kdump.format.walk.RunFacts); None for none."""

@final
class WalkedRun(structseq[Any], tuple[int, RunColumns, int]):
    __match_args__: Final = ("n", "columns", "position")
    @property
    def n(self) -> int: ...
    @property
    def columns(self) -> RunColumns:
        """WALK_COLUMNS int64 columns one after the other, each with room for
        len(columns) // (8 * WALK_COLUMNS) values, its first n the run's (room n where the
        run ended short of its limit)."""
    @property
    def position(self) -> int:
        """Where the next run starts."""

def walk_v2(
    buf: ReadableBuffer,
    start: int,
    stop: int,
    end: int,
    max_size: int,
    limit: int,
    check_crc: bool,
    until_invalid: bool,
    share: CrcShare | None = None,
    /,
) -> WalkedRun: ...

@final
class CrcShareCounts(structseq[int], tuple[int, int]):
    __match_args__: Final = ("posted", "helped")
    @property
    def posted(self) -> int: ...
    @property
    def helped(self) -> int: ...

@final
class CrcShare:
    """A walk's CRC work shared with its read-ahead thread."""

    def help(self, kicks: int, /) -> bool: ...
    def kicks(self) -> int: ...
    def counts(self) -> CrcShareCounts: ...
    def kick(self) -> None: ...
    def close(self) -> None: ...

def column_range(column: ReadableBuffer, stop: int, /) -> tuple[int, int] | None: ...
def count_masked(column: ReadableBuffer, mask: int, /) -> int: ...
def flag_batches(
    base_offsets: ReadableBuffer,
    last_offsets: ReadableBuffer,
    epochs: ReadableBuffer,
    magics: ReadableBuffer,
    valids: ReadableBuffer,
    producer_ids: ReadableBuffer,
    attributes: ReadableBuffer,
    segment_base: int,
    has_prev: bool,
    prev_last: int,
    epoch: int,
    producers: int,
    /,
) -> tuple[list[int], int, tuple[int, int] | None, bool, int, int]: ...
def index_keys(
    index: ReadableBuffer, used: int, base_offset: int, time_index: bool, /
) -> bytes: ...

class _GatherFields(Protocol):
    """What gather reads from the state handed in, by name: kdump.checks.gather.GatherState
    (the Python reference's), or the GatherState of the run before."""

    @property
    def cursor_p(self) -> int: ...
    @property
    def has_prev(self) -> int: ...
    @property
    def prev_last(self) -> int: ...
    @property
    def cursor_o(self) -> int: ...
    @property
    def before(self) -> int: ...
    @property
    def prow_n(self) -> int: ...
    @property
    def orow_n(self) -> int: ...
    @property
    def has_raised(self) -> int: ...
    @property
    def raised_base(self) -> int: ...
    @property
    def raised_last(self) -> int: ...
    @property
    def raised_max_ts(self) -> int: ...
    @property
    def raised_before(self) -> int: ...
    @property
    def raised_prev_last(self) -> int: ...
    @property
    def rising(self) -> int: ...

@final
class GatherState(
    structseq[int],
    tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int],
    _GatherFields,
):
    __match_args__: Final = (
        "cursor_p",
        "has_prev",
        "prev_last",
        "cursor_o",
        "before",
        "prow_n",
        "orow_n",
        "has_raised",
        "raised_base",
        "raised_last",
        "raised_max_ts",
        "raised_before",
        "raised_prev_last",
        "rising",
    )

def gather(
    positions: ReadableBuffer,
    base_offsets: ReadableBuffer,
    last_offsets: ReadableBuffer,
    max_timestamps: ReadableBuffer,
    wanted_positions: ReadableBuffer,
    wanted_offsets: ReadableBuffer,
    position_rows: WriteableBuffer,
    offset_rows: WriteableBuffer,
    state: _GatherFields,
    /,
) -> GatherState: ...
def offset_index_check(
    index: ReadableBuffer,
    used: int,
    base_offset: int,
    rows: ReadableBuffer,
    valid_bytes: int,
    last_log: int,
    /,
) -> tuple[list[int], int, int, int]: ...
def time_index_check(
    index: ReadableBuffer, used: int, base_offset: int, rows: ReadableBuffer, /
) -> list[int]: ...
def java_utf8(buf: ReadableBuffer, /) -> bytes: ...

@final
class PackedEntries(structseq[Any], tuple[bytes, int, int, int]):
    __match_args__: Final = ("data", "entries", "last_first", "last_second")
    @property
    def data(self) -> bytes:
        """The entries as the index file holds them."""
    @property
    def entries(self) -> int: ...
    @property
    def last_first(self) -> int:
        """The last entry's first value: its offset (timestamp in a time index)."""
    @property
    def last_second(self) -> int:
        """The last entry's second value: its position (offset in a time index)."""

def pack_entries(
    firsts: ReadableBuffer,
    seconds: ReadableBuffer,
    base_offset: int,
    time_index: bool,
    last_first: int,
    last_second: int,
    /,
) -> PackedEntries | None: ...

@final
class IndexPoints(structseq[Any], tuple[int, int, int, bytes, bytes, bytes, bytes]):
    __match_args__: Final = (
        "last_entry",
        "max_ts",
        "offset_of_max_ts",
        "offsets",
        "positions",
        "timestamps",
        "time_offsets",
    )
    @property
    def last_entry(self) -> int: ...
    @property
    def max_ts(self) -> int: ...
    @property
    def offset_of_max_ts(self) -> int: ...
    @property
    def offsets(self) -> bytes:
        """The new offset index entries' offsets (int64s), then ``positions`` theirs."""
    @property
    def positions(self) -> bytes: ...
    @property
    def timestamps(self) -> bytes:
        """The new time index entries' timestamps (int64s), then ``time_offsets`` theirs."""
    @property
    def time_offsets(self) -> bytes: ...

def index_points(
    positions: ReadableBuffer,
    last_offsets: ReadableBuffer,
    max_timestamps: ReadableBuffer,
    interval: int,
    last_entry: int,
    max_ts: int,
    offset_of_max_ts: int,
    /,
) -> IndexPoints: ...

@final
class RenderedRun(structseq[Any], tuple[bytes, int, int, list[tuple[int, int]], int]):
    __match_args__: Final = ("data", "next_index", "last_offset", "gaps", "invalid")
    @property
    def data(self) -> bytes: ...
    @property
    def next_index(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def gaps(self) -> list[tuple[int, int]]:
        """(last offset, next offset) pairs that do not follow each other."""
    @property
    def invalid(self) -> int:
        """Batches whose CRC fails."""

def render_batches(
    buf: ReadableBuffer,
    columns: tuple[ReadableBuffer, ...],
    start: int,
    as_json: bool,
    batch_template: str,
    record_template: str | None,
    key_decoder: int,
    value_decoder: int,
    last_offset: int,
    max_output: int,
    max_headers: int = ...,
    /,
) -> RenderedRun: ...

_Resume = tuple[int, int, int, bool]
"""Where a record's line stopped part way: its template's field, the string in it, the byte of
that string, and whether that string is UTF-8 (render_payload's cursor)."""

@final
class RenderedPayload(
    structseq[Any], tuple[bytes, int, list[tuple[int, int]], int, int, _Resume | None]
):
    __match_args__: Final = ("data", "last_offset", "gaps", "position", "next_record", "resume")
    @property
    def data(self) -> bytes: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def gaps(self) -> list[tuple[int, int]]: ...
    @property
    def position(self) -> int:
        """Where in the payload the next call goes on."""
    @property
    def next_record(self) -> int:
        """The record it goes on from (the batch's record count: done)."""
    @property
    def resume(self) -> _Resume | None:
        """None, or where in that record's line the next call goes on (given back to it)."""

def render_payload(
    payload: ReadableBuffer,
    columns: tuple[ReadableBuffer, ...],
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
    max_headers: int = ...,
    resume: _Resume | None = None,
    /,
) -> RenderedPayload | None: ...

@final
class DeepChecked(structseq[Any], tuple[int, int, list[int]]):
    __match_args__: Final = ("next_index", "records", "flagged")
    @property
    def next_index(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def flagged(self) -> list[int]:
        """Batches the Python checks must look at."""

def deep_check(
    buf: ReadableBuffer,
    columns: tuple[ReadableBuffer, ...],
    start: int,
    payload: ReadableBuffer | None,
    /,
) -> DeepChecked: ...

@final
class Record:
    """kdump.format.records.Record made in C: it reads, compares, prints and pickles as it."""

def set_record_class(record: type[tuple[Any, ...]], /) -> None: ...

@final
class RecordError(structseq[int], tuple[int, int, int, int]):
    __match_args__: Final = ("record", "fault", "detail", "detail2")
    @property
    def record(self) -> int:
        """The number of the record that does not decode."""
    @property
    def fault(self) -> int:
        """Why: a kdump.format.records.RecordFault."""
    @property
    def detail(self) -> int: ...
    @property
    def detail2(self) -> int: ...

def v2_records(
    payload: ReadableBuffer,
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
    max_headers: int = ...,
    /,
) -> tuple[list[Any], int, RecordError | None] | None:
    """None, or the records (C Records standing in for ``record_cls``, with ``header_cls``
    headers), where decoding stopped in the payload, and what stopped it. A plain tuple: it
    is made once per slice (a struct sequence cost 5% on one-record batches)."""

CLEAN_STATS: tuple[str, ...]

def omap_put(map: WriteableBuffer, slots: int, key: ReadableBuffer, offset: int, /) -> bool: ...
def omap_get(map: WriteableBuffer, slots: int, key: ReadableBuffer, /) -> int: ...
def omap_put_records(
    map: WriteableBuffer,
    slots: int,
    limit: int,
    entries: int,
    payload: ReadableBuffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None,
    min_offset: int,
    /,
) -> tuple[int, int, int] | None: ...
def omap_put_run(
    buf: ReadableBuffer,
    position: int,
    end: int,
    map: WriteableBuffer,
    slots: int,
    limit: int,
    entries: int,
    min_offset: int,
    /,
) -> tuple[int, int, int, int, int]: ...
def clean_run(
    buf: ReadableBuffer,
    position: int,
    end: int,
    map: WriteableBuffer,
    slots: int,
    latest: int,
    now: int,
    high_watermark: int,
    delete_retention_ms: int,
    max_output: int,
    /,
) -> tuple[int, bytes, bytes, tuple[int | None, ...]]: ...
def clean_records(
    payload: ReadableBuffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None,
    map: WriteableBuffer,
    slots: int,
    latest: int,
    now: int,
    horizon: int | None,
    delete_retention_ms: int,
    /,
) -> tuple[int, int, int, int, bytes | None, bytes, tuple[int | None, ...]] | None: ...
