"""Test-only: partition directories laid out the way a broker writes them, for kdump explain.

Batches come from kafka-python's DefaultRecordBatchBuilder (an encoder independent of kdump);
control markers and delete horizons are patched into its bytes as FORMAT.md §2 describes;
``.index`` and ``.timeindex`` are written with struct.pack by LogSegment.recover's rule
(FORMAT.md §5); checkpoints as OffsetCheckpointFile writes them (FORMAT.md §1).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from batchbytes import fix_crc
from kafka.record.default_records import DefaultRecordBatchBuilder

from kdump.config import ConfigLayers, parse_config_option
from kdump.explain import ExplainOptions, PartitionExplanation, explain_paths

T0 = 1_700_000_000_000
HOUR = 3_600_000
OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
ABORTED_TXN = struct.Struct(">hqqqq")
CONTROL_BIT, DELETE_HORIZON_BIT = 0x20, 0x40


@dataclass(frozen=True)
class Built:
    """One batch's bytes and what the test knows about it (not read back from kdump)."""

    data: bytes
    base_offset: int
    last_offset: int
    max_timestamp: int
    records: int

    @property
    def size(self) -> int:
        return len(self.data)


def batch(
    base_offset: int,
    records: Sequence[tuple[bytes | None, bytes | None]] | int = 1,
    timestamp: int = T0,
    *,
    value_size: int = 10,
    producer_id: int = -1,
    producer_epoch: int = -1,
    transactional: bool = False,
    delete_horizon: int | None = None,
    last_offset: int | None = None,
) -> Built:
    """A v2 batch; ``records`` is (key, value) pairs or a count of keyed records of
    ``value_size`` bytes. All records carry ``timestamp``. ``last_offset`` spreads the
    records' offsets up to it (offset deltas 0..n-1 otherwise)."""
    if isinstance(records, int):
        records = [(b"key%d" % i, b"v" * value_size) for i in range(records)]
    n = len(records)
    deltas = list(range(n))
    if last_offset is not None:
        deltas[-1] = last_offset - base_offset
    sequence = 0 if producer_id >= 0 else -1
    builder = DefaultRecordBatchBuilder(
        2, 0, transactional, producer_id, producer_epoch, sequence, 1 << 24
    )
    for delta, (key, value) in zip(deltas, records, strict=True):
        assert builder.append(delta, timestamp, key, value, []) is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)
    if delete_horizon is not None:
        (attributes,) = struct.unpack_from(">h", buf, 21)
        struct.pack_into(">h", buf, 21, attributes | DELETE_HORIZON_BIT)
        struct.pack_into(">q", buf, 27, delete_horizon)  # the horizon lives in baseTimestamp
        fix_crc(buf, 0)
    return Built(bytes(buf), base_offset, base_offset + deltas[-1], timestamp, n)


def marker(
    offset: int,
    commit: bool,
    producer_id: int,
    timestamp: int = T0,
    producer_epoch: int = 0,
    delete_horizon: int | None = None,
) -> Built:
    """An end-transaction control batch: key (version 0, type 1 COMMIT / 0 ABORT), value
    (version 0, coordinator epoch 0)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    builder = DefaultRecordBatchBuilder(2, 0, True, producer_id, producer_epoch, -1, 1 << 20)
    builder.append(0, timestamp, key, struct.pack(">hi", 0, 0), [])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, offset)
    (attributes,) = struct.unpack_from(">h", buf, 21)
    attributes |= CONTROL_BIT
    if delete_horizon is not None:
        attributes |= DELETE_HORIZON_BIT
        struct.pack_into(">q", buf, 27, delete_horizon)
    struct.pack_into(">h", buf, 21, attributes)
    fix_crc(buf, 0)
    return Built(bytes(buf), offset, offset, timestamp, 1)


def indexes(
    base_offset: int, batches: Sequence[Built], interval: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """LogSegment.recover's entries: (relative offset, position) and (timestamp, relative
    offset), with the closing time index entry a roll appends."""
    valid = last_entry = 0
    max_ts, offset_of_max = -1, -1
    index: list[tuple[int, int]] = []
    time_index: list[tuple[int, int]] = []
    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max = b.max_timestamp, b.last_offset
        if valid - last_entry > interval:
            index.append((b.last_offset - base_offset, valid))
            if max_ts > (time_index[-1][0] if time_index else -1):
                time_index.append((max_ts, offset_of_max - base_offset))
            last_entry = valid
        valid += b.size
    if max_ts > (time_index[-1][0] if time_index else -1):
        time_index.append((max_ts, offset_of_max - base_offset))
    return index, time_index


def segment(
    directory: Path,
    batches: Sequence[Built],
    base_offset: int | None = None,
    *,
    interval: int = 4096,
    zero_time_entries: int = 0,
    time_entries: Sequence[tuple[int, int]] | None = None,
    time_index: bool = True,
) -> Path:
    """Write ``<base>.log``, ``.index`` and ``.timeindex``; ``zero_time_entries`` pads the time
    index as a preallocated one left by an unclean stop; ``time_entries`` replaces its
    entries (a damaged index)."""
    directory.mkdir(parents=True, exist_ok=True)
    base = batches[0].base_offset if base_offset is None else base_offset
    name = f"{base:020d}"
    log = directory / f"{name}.log"
    log.write_bytes(b"".join(b.data for b in batches))
    index, times = indexes(base, batches, interval)
    if time_entries is not None:
        times = list(time_entries)
    (directory / f"{name}.index").write_bytes(b"".join(OFFSET_ENTRY.pack(*e) for e in index))
    if time_index:
        data = b"".join(TIME_ENTRY.pack(*e) for e in times) + bytes(12 * zero_time_entries)
        (directory / f"{name}.timeindex").write_bytes(data)
    return log


def txn_index(
    directory: Path, base_offset: int, entries: Sequence[tuple[int, int, int, int]]
) -> None:
    """``.txnindex``: (producer id, first offset, last offset, last stable offset) each."""
    data = b"".join(ABORTED_TXN.pack(0, *e) for e in entries)
    (directory / f"{base_offset:020d}.txnindex").write_bytes(data)


def checkpoint(log_dir: Path, name: str, entries: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in entries.items()]
    (log_dir / name).write_text("\n".join(lines) + "\n")


def explain_one(
    path: Path,
    *configs: str,
    now: int = T0 + HOUR,
    deep: bool = False,
    offset_map_bytes: int | None = None,
) -> PartitionExplanation:
    """kdump explain's library on one partition, with ``--config`` settings."""
    layers = ConfigLayers(options=tuple(parse_config_option(c) for c in configs))
    options = ExplainOptions(now=now, deep=deep, offset_map_bytes=offset_map_bytes)
    result = explain_paths([str(path)], layers, options)
    assert len(result.partitions) == 1, result
    return result.partitions[0]
