"""kdump lookup: Kafka's own index and segment answers (manifest.json), a brute-force scan for
every offset and record timestamp of the fixtures, the bytes a lookup reads, fallbacks on
damaged indexes, the log start offset checkpoint, and the command line."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from clirun import run_kdump
from conftest import (
    GENERATED,
    ORACLE,
    offset_index_at,
    oracle_files,
    oracle_manifest,
    time_index_at,
)

from kdump.discovery import open_partition
from kdump.format.batch import Batch
from kdump.format.index import SearchType
from kdump.format.records import Record
from kdump.lookup import (
    Lookup,
    Outcome,
    find_offset_by_timestamp,
    lookup_offset,
    lookup_timestamp,
    translate_offset,
)
from kdump.segment import check_index
from kdump.storage.local import open_log_file
from kdump.storage.records import FileRecords
from kdump.unified_log import UnifiedLog, local_segments
from kdump.units import iso as iso_text
from kdump.units import parse_timestamp

ORACLE_DIRS = sorted(oracle_manifest()["directories"])
GENERATED_DIRS = sorted(p.name for p in GENERATED.iterdir() if p.is_dir())
ALL_DIRS = [ORACLE / d for d in ORACLE_DIRS] + [GENERATED / d for d in GENERATED_DIRS]


def expected(directory: str, name: str) -> dict[str, Any]:
    return oracle_manifest()["files"][directory][name]


@cache
def opened(directory: Path) -> UnifiedLog:
    return open_partition(str(directory))


def segment_named(directory: Path, name: str) -> Any:
    return next(s for s in opened(directory).segments if Path(s.log_path).name == name)


# -- brute force: every batch and record of a partition, in log order, no index --------------


class Located(NamedTuple):
    log_path: str
    batch: Batch
    record: Record | None


def every_batch(directory: Path) -> Iterator[tuple[str, FileRecords, Batch]]:
    for segment in local_segments(directory):
        if Path(segment.log_path).is_file():
            log = open_log_file(segment.log_path)
            for batch in log.batches():
                yield str(segment.log_path), log, batch


@cache
def every_record(directory: Path) -> tuple[Located, ...]:
    return tuple(
        Located(path, batch, record)
        for path, log, batch in every_batch(directory)
        for record in log.records(batch)
    )


def brute_offsets(directory: Path, offsets: list[int]) -> Iterator[Located | None]:
    """For each offset (ascending): the first batch in log order whose last offset ≥ it, and
    the first record ≥ it in that batch."""
    batches = every_batch(directory)
    current = next(batches, None)
    for offset in offsets:
        while current is not None and current[2].last_offset < offset:
            current = next(batches, None)
        if current is None:
            yield None
            continue
        path, log, batch = current
        record = next((r for r in log.records(batch) if r.offset >= offset), None)
        yield Located(path, batch, record)


def brute_offset(directory: Path, offset: int) -> Located | None:
    return next(brute_offsets(directory, [offset]))


def brute_timestamp(directory: Path, timestamp: int, log_start: int) -> Located | None:
    """The first record in log order with timestamp ≥ T at or after the log start."""
    return next(
        (
            r
            for r in every_record(directory)
            if r.record is not None
            and r.record.timestamp >= timestamp
            and r.record.offset >= log_start
        ),
        None,
    )


def found(result: Lookup) -> Located | None:
    if result.outcome is not Outcome.FOUND:
        return None
    assert result.segment is not None and result.batch is not None
    return Located(result.segment, result.batch, result.record)


def same(a: Located | None, b: Located | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.log_path, a.batch.position, a.record and a.record.offset) == (
        b.log_path,
        b.batch.position,
        b.record and b.record.offset,
    )


# -- Kafka's index answers, through the lookup library ---------------------------------------


def opened_index(directory: str, name: str) -> tuple[Any, int]:
    """The index file and how many entries kdump searches (checked against its .log)."""
    path = ORACLE / directory / name
    index = offset_index_at(path) if name.endswith(".index") else time_index_at(path)
    checked = check_index(path, index, (path.with_suffix(".log")).stat().st_size)
    assert checked.entries is not None
    return index, checked.entries


INDEX_FILES = oracle_files(".index") + oracle_files(".timeindex")


@pytest.mark.parametrize(("directory", "name"), INDEX_FILES)
def test_index_floor_matches_kafka(directory: str, name: str) -> None:
    """OffsetIndex.lookup / TimeIndex.lookup: Kafka's answers where Kafka trusts every whole
    entry of the file; over the written entries only, the true floor (the same answers unless
    the file has a preallocated zero tail)."""
    index, entries = opened_index(directory, name)
    miss = (index.base_offset, 0) if name.endswith(".index") else (-1, index.base_offset)

    def floor(index: Any, target: int, entries: int) -> tuple[int, int]:
        """The FLOOR search with its probes kept (what kdump lookup shows), Kafka's miss."""
        found = index.search(target, SearchType.FLOOR, entries).entry
        return miss if found is None else tuple(found)

    used = [index.entry(i) for i in range(entries)]
    preallocated = index.zero_tail_entries > 0
    for target, answer in expected(directory, name)["lookup"].items():
        t = int(target)
        assert list(floor(index, t, index.entries)) == answer, target
        ours = floor(index, t, entries)
        assert tuple(ours) == tuple(max((e for e in used if e[0] <= t), default=miss)), target
        if not preallocated:
            assert list(ours) == answer, target


@pytest.mark.parametrize(("directory", "name"), INDEX_FILES)
def test_floor_and_ceiling_equal_brute_force(directory: str, name: str) -> None:
    index, entries = opened_index(directory, name)
    used = [index.entry(i) for i in range(entries)]
    keys = [e[0] for e in used]
    targets = {int(t) for t in expected(directory, name)["lookup"]}
    targets |= {k + d for k in keys for d in (-1, 0, 1)}
    for t in sorted(targets):
        floor = index.search(t, SearchType.FLOOR, entries)
        ceiling = index.search(t, SearchType.CEILING, entries)
        assert floor.entry == max((e for e in used if e[0] <= t), default=None), t
        assert ceiling.entry == min((e for e in used if e[0] >= t), default=None), t
        for search in (floor, ceiling):
            assert all(p.comparison == (p.entry[0] > t) - (p.entry[0] < t) for p in search.probes)
        if floor.slot != -1:
            # lo only ever takes slots the search compared
            assert floor.slot in {p.slot for p in floor.probes}


def test_ceiling_answers_an_exact_first_entry_where_kafka_skips_it() -> None:
    index = offset_index_at(ORACLE / "plain-0" / "00000000000000000000.index")
    first, second = index.entry(0), index.entry(1)
    assert index.ceiling(first.offset) == second  # Kafka's search, kept as Kafka has it
    assert index.search(first.offset, SearchType.CEILING).entry == first
    assert index.search(first.offset + 1, SearchType.CEILING).entry == second


@pytest.mark.parametrize(("directory", "name"), oracle_files(".log"))
def test_segment_queries_match_kafka(directory: str, name: str) -> None:
    """LogSegment.translateOffset, findOffsetByTimestamp(ts, baseOffset), readNextOffset."""
    queries = expected(directory, name)["logSegmentQueries"]
    segment = segment_named(ORACLE / directory, name)
    for target, answer in queries["translateOffset_offset_position_size"].items():
        batch = translate_offset(segment, int(target)).batch
        got = None if batch is None else [batch.last_offset, batch.position, batch.size]
        assert got == answer, target
    for ts, answer in queries["findOffsetByTimestamp_timestamp_offset_leaderEpoch"].items():
        result = find_offset_by_timestamp(segment, int(ts), segment.base_offset).answer
        assert (None if result is None else list(result)) == answer, ts
    assert segment.next_offset == queries["readNextOffset"]


# -- every offset and every record timestamp against a brute-force scan ----------------------


@pytest.mark.parametrize("directory", ALL_DIRS, ids=lambda p: p.name)
def test_every_offset_equals_brute_force(directory: Path) -> None:
    log = opened(directory)
    # a fetch answers from the files as they are: up to their end, past a damaged batch too
    lso, leo = log.log_start_offset, log.log_end_offset_on_disk
    assert lso == log.base_offsets[0]
    offsets = {r.record.offset for r in every_record(directory) if r.record is not None}
    assert offsets, "fixture without records"
    targets = sorted(offsets | set(range(lso, leo)))
    for offset, want in zip(targets, brute_offsets(directory, targets), strict=True):
        result = lookup_offset(log, offset)
        assert same(found(result), want), offset
        assert result.record is not None and result.record.offset == offset, offset
    assert lookup_offset(log, leo).outcome is Outcome.AT_LOG_END
    assert lookup_offset(log, leo + 1).outcome is Outcome.OFFSET_OUT_OF_RANGE
    assert lookup_offset(log, lso - 1).outcome is Outcome.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize("directory", ALL_DIRS, ids=lambda p: p.name)
def test_every_record_timestamp_equals_brute_force(directory: Path) -> None:
    log = opened(directory)
    lso = log.log_start_offset
    stamps = {r.record.timestamp for r in every_record(directory) if r.record is not None}
    targets = {0} | {t + d for t in stamps if t >= 0 for d in (0, 1)}
    for t in sorted(targets):
        result = lookup_timestamp(log, t)
        want = brute_timestamp(directory, t, lso)
        assert same(found(result), want), t
        if want is not None:
            assert result.answer is not None and result.answer.timestamp >= t
        else:
            assert result.outcome is Outcome.NO_OFFSET


# -- the bytes a lookup reads -----------------------------------------------------------------


def appends(directory: str) -> list[tuple[str, int, int]]:
    """(log path, start, end) of each LogSegment.append call that wrote the partition: one per
    batch, unless the manifest's events list the follower's multi-batch chunks."""
    chunks: list[int] = []
    for event in oracle_manifest()["directories"][directory]["events"]:
        m = re.search(r"batches per chunk: \[([\d, ]+)\]", event)
        if m:
            chunks = [int(n) for n in m[1].split(",")]
    batches = list(every_batch(ORACLE / directory))
    sizes = chunks or [1] * len(batches)
    assert sum(sizes) == len(batches)
    out, i = [], 0
    for n in sizes:
        group = batches[i : i + n]
        assert len({path for path, _, _ in group}) == 1, "an append never spans segments"
        out.append((group[0][0], group[0][2].position, group[-1][2].end))
        i += n
    return out


def append_size_at(spans: list[tuple[str, int, int]], path: str, position: int) -> int:
    return next((e - s for p, s, e in spans if p == path and s <= position < e), 0)


@pytest.mark.parametrize("directory", ["plain-0", "followerlive-0"])
def test_lookup_reads_one_interval_plus_one_append(directory: str) -> None:
    """From the index entry's position P, the next entry lies at most one interval plus the
    append that crosses P + interval further on, and the target is in the append before it or
    in the append that entry starts (LogSegment.append indexes per call)."""
    interval = int(oracle_manifest()["directories"][directory]["config"]["index.interval.bytes"])
    spans = appends(directory)
    log = opened(ORACLE / directory)
    worst = 0
    for offset in range(log.log_start_offset, log.log_end_offset):
        result = lookup_offset(log, offset)
        scan, batch = result.scan, result.batch
        assert scan is not None and batch is not None and result.segment is not None
        assert result.warnings == ()
        straddle = append_size_at(spans, result.segment, scan.position + interval)
        holding = append_size_at(spans, result.segment, batch.position)
        assert result.bytes_scanned <= interval + straddle + holding, offset
        assert result.bytes_scanned == batch.end - scan.position
        worst = max(worst, result.bytes_scanned - interval - holding)
    assert worst > 0, "the bound was never approached: the test would not catch a full scan"


def test_recovered_index_bounds_reads_by_batches(tmp_path: Path) -> None:
    """With the index LogSegment.recover() writes (one candidate per batch), the bound is one
    interval plus two batches, even for the follower-written log."""
    copy = copy_partition("followerlive-0", tmp_path)
    files = oracle_manifest()["files"]["followerlive-0"]
    for name, exp in files.items():
        if name.endswith(".log"):
            rebuilt = exp["recoveredIndexBytes"]["index.interval.bytes=1024"]
            (copy / name).with_suffix(".index").write_bytes(bytes.fromhex(rebuilt["indexHex"]))
    log = open_partition(str(copy))
    for offset in range(log.log_start_offset, log.log_end_offset):
        result = lookup_offset(log, offset)
        scan, batch = result.scan, result.batch
        assert scan is not None and batch is not None and result.warnings == ()
        seg = open_log_file(result.segment or "")
        crossing = next(
            (b.size for b in seg.batches(scan.position) if b.end > scan.position + 1024), 0
        )
        assert result.bytes_scanned <= 1024 + crossing + batch.size, offset


# -- damaged indexes: a warning, and the same answer --------------------------------------------


def copy_partition(directory: str, tmp_path: Path, parent: str = "logdir") -> Path:
    target = tmp_path / parent / directory
    shutil.copytree(ORACLE / directory, target)
    return target


def answers(log: UnifiedLog, offsets: range, stamps: list[int]) -> list[Any]:
    out: list[Any] = []
    for o in offsets:
        r = found(lookup_offset(log, o))
        out.append(None if r is None else (Path(r.log_path).name, r.batch.position, r.record))
    for t in stamps:
        out.append(lookup_timestamp(log, t).answer)
    return out


@cache
def healthy_answers() -> tuple[range, list[int], list[Any]]:
    """Every offset and record timestamp of plain-0, and the lookups' answers on it: one
    partition, the same for each damage."""
    healthy = opened(ORACLE / "plain-0")
    stamps = sorted(
        {r.record.timestamp for r in every_record(ORACLE / "plain-0") if r.record is not None}
    )
    offsets = range(healthy.log_start_offset, healthy.log_end_offset + 1)
    return offsets, stamps, answers(healthy, offsets, stamps)


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "deleted":
        path.unlink()
    elif how == "misaligned":
        path.write_bytes(data[:-3])
    elif how == "zero-filled":
        path.write_bytes(bytes(len(data)))
    elif how == "preallocated":
        path.write_bytes(data + bytes(1024 * path.stat().st_size))
    elif how == "out of order":
        size = 8 if path.suffix == ".index" else 12
        path.write_bytes(data[size : 2 * size] + data[:size] + data[2 * size :])


WARNING_WORDS = {
    "deleted": "missing",
    "misaligned": "neither positive nor a multiple of",
    "zero-filled": "are zero (preallocated, never written)",
    "preallocated": "preallocated:",
    "out of order": "corrupt: entry 1",
}


@pytest.mark.parametrize("how", sorted(WARNING_WORDS))
@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_damaged_index_warns_and_answers_right(tmp_path: Path, suffix: str, how: str) -> None:
    healthy = opened(ORACLE / "plain-0")
    segment = healthy.segments[1]
    offsets, stamps, want = healthy_answers()
    copy = copy_partition("plain-0", tmp_path)
    damage(copy / Path(segment.log_path).with_suffix(suffix).name, how)
    log = open_partition(str(copy))
    assert answers(log, offsets, stamps) == want
    inside = segment.base_offset + 1
    result = lookup_offset(log, inside) if suffix == ".index" else None
    if result is None:
        first_stamp = next(
            r.record.timestamp
            for r in every_record(ORACLE / "plain-0")
            if r.record is not None and r.record.offset == inside
        )
        result = lookup_timestamp(log, first_stamp)
    assert result.outcome is Outcome.FOUND
    assert any(WARNING_WORDS[how] in w for w in result.warnings), result.warnings
    if suffix == ".index" and how != "preallocated":
        assert result.scan is not None and result.scan.position == 0


def test_entry_pointing_inside_a_batch_restarts_at_zero(tmp_path: Path) -> None:
    copy = copy_partition("plain-0", tmp_path)
    index = copy / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    data[4:8] = (int.from_bytes(data[4:8], "big") + 1).to_bytes(4, "big")  # entry 0 position + 1
    index.write_bytes(bytes(data))
    log = open_partition(str(copy))
    first = offset_index_at(ORACLE / "plain-0" / "00000000000000000000.index").entry(0)
    result = lookup_offset(log, first.offset)
    assert result.scan is not None and result.scan.position == 0
    assert any("scanning from position 0" in w for w in result.warnings)
    assert same(_relocate(found(result), copy), brute_offset(ORACLE / "plain-0", first.offset))


def _relocate(located: Located | None, copy: Path) -> Located | None:
    if located is None:
        return None
    name = Path(located.log_path).relative_to(copy)
    return located._replace(log_path=str(ORACLE / "plain-0" / name))


def test_preallocated_active_segment_searches_written_entries() -> None:
    log = opened(ORACLE / "activeprealloc-0")
    active = log.segments[-1]
    assert active.checked_offset_index.entries == 2 and active.checked_time_index.entries == 2
    result = lookup_offset(log, log.log_end_offset - 1)
    assert result.scan is not None and result.scan.start.entry is not None
    assert any("preallocated: 2 of 1310720" in w for w in result.warnings)
    # Kafka's own search over the zero tail answers (base, 0) for every offset
    index = active.checked_offset_index.index
    assert index is not None
    assert index.lookup(log.log_end_offset - 1, index.entries) == (
        active.base_offset,
        0,
    )


# -- the log start offset --------------------------------------------------------------------


def write_checkpoint(logdir: Path, lines: list[str]) -> None:
    (logdir / "log-start-offset-checkpoint").write_text(
        "\n".join(["0", str(len(lines)), *lines]) + "\n"
    )


def test_log_start_offset_checkpoint_moves_the_start(tmp_path: Path) -> None:
    copy = copy_partition("plain-0", tmp_path)
    records = every_record(ORACLE / "plain-0")
    start = records[len(records) // 4].record
    assert start is not None and start.offset not in opened(ORACLE / "plain-0").base_offsets
    write_checkpoint(copy.parent, ["other 0 999999", f"plain 0 {start.offset}"])
    log = open_partition(str(copy))
    assert log.log_start_offset == start.offset
    below = lookup_offset(log, start.offset - 1)
    assert below.outcome is Outcome.OFFSET_OUT_OF_RANGE
    assert lookup_offset(log, start.offset).record == start
    earlier = next(r.record for r in records if r.record and r.record.offset == start.offset - 1)
    answer = lookup_timestamp(log, earlier.timestamp).answer
    assert answer is not None and answer.offset == start.offset


def test_broker_stops_at_the_first_segment_even_below_the_log_start(tmp_path: Path) -> None:
    """UnifiedLog.fetchOffsetByTimestamp picks the first segment whose largest timestamp ≥ T
    without regard to the log start, then finds nothing in it: the broker answers -1."""
    copy = copy_partition("plain-0", tmp_path)
    second = opened(ORACLE / "plain-0").segments[1].base_offset
    write_checkpoint(copy.parent, [f"plain 0 {second}"])
    result = lookup_timestamp(open_partition(str(copy)), 0)
    assert result.outcome is Outcome.NO_OFFSET
    assert result.segment is not None and result.segment.endswith("00000000000000000000.log")


def test_checkpoint_for_another_partition_changes_nothing(tmp_path: Path) -> None:
    copy = copy_partition("plain-0", tmp_path)
    write_checkpoint(copy.parent, ["plain 1 500", "plainer 0 500"])
    assert open_partition(str(copy)).log_start_offset == 0


def test_malformed_checkpoint_is_read_as_absent_and_said(tmp_path: Path) -> None:
    """As the broker reads it (and verify, explain, txn): absent, and the lookup says why."""
    copy = copy_partition("plain-0", tmp_path)
    (copy.parent / "log-start-offset-checkpoint").write_text("0\n2\nplain 0 5\n")
    log = open_partition(str(copy))
    assert log.log_start_offset == 0
    result = lookup_offset(log, 3)
    assert result.outcome is Outcome.FOUND
    assert any("Expected [2] entries in checkpoint file" in w for w in result.warnings)


# -- timestamps on the command line ----------------------------------------------------------


def test_parse_timestamp() -> None:
    t0 = 1700000000111
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=t0)
    assert parse_timestamp(str(t0)) == t0
    assert parse_timestamp(moment.isoformat()) == t0
    assert parse_timestamp(moment.isoformat().replace("+00:00", "Z")) == t0
    plus_two = moment.astimezone(timezone(timedelta(hours=2)))
    assert parse_timestamp(plus_two.isoformat()) == t0
    for bad, why in [
        ("2023-11-14T22:13:20", "needs a zone"),
        ("-1", "special queries"),
        ("yesterday", "not epoch milliseconds"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_timestamp(bad)


# -- the command line ------------------------------------------------------------------------


def kafka_case() -> tuple[str, int, list[int], list[int]]:
    """An offset whose index entry and batch Kafka reported: (segment, offset, entry, batch)."""
    for name in sorted(oracle_manifest()["files"]["plain-0"]):
        if not name.endswith(".index"):
            continue
        lookups = expected("plain-0", name)["lookup"]
        translate = expected("plain-0", name.replace(".index", ".log"))["logSegmentQueries"][
            "translateOffset_offset_position_size"
        ]
        for target in sorted(lookups, key=int):
            entry = lookups[target]
            if entry[1] > 0 and target in translate:
                return name.replace(".index", ".log"), int(target), entry, translate[target]
    raise AssertionError("no offset with both answers in the manifest")


def dumped(log: str) -> tuple[list[str], list[dict[str, Any]]]:
    text = run_kdump(["dump", "--deep-iteration", log])
    objects = run_kdump(["dump", "--format", "jsonl", "--deep-iteration", log])
    assert text.exit_code == objects.exit_code == 0
    return text.stdout.splitlines(), [json.loads(line) for line in objects.stdout.splitlines()]


def test_cli_json_matches_kafka_and_dump() -> None:
    name, offset, entry, (last, position, size) = kafka_case()
    log = str(ORACLE / "plain-0" / name)
    ran = run_kdump(
        ["lookup", str(ORACLE / "plain-0"), "--offset", str(offset), "--format", "json"]
    )
    assert ran.exit_code == 0 and ran.stderr == ""
    obj = json.loads(ran.stdout)
    assert obj["segment"] == log
    assert obj["index_entry"] == entry
    assert obj["scan_start"] == entry[1]
    assert obj["bytes_scanned"] == position + size - entry[1]
    _, objects = dumped(log)
    batch = next(o for o in objects if o["type"] == "batch" and o["position"] == position)
    record = next(o for o in objects if o["type"] == "record" and o["offset"] == offset)
    assert batch["last_offset"] == last
    assert obj["batch"] == batch
    assert obj["record"] == record


def test_cli_text_matches_kafka_and_dump() -> None:
    name, offset, entry, (_, position, size) = kafka_case()
    log = str(ORACLE / "plain-0" / name)
    ran = run_kdump(["lookup", str(ORACLE / "plain-0"), "--offset", str(offset)])
    assert ran.exit_code == 0 and ran.stderr == ""
    lines = ran.stdout.splitlines()
    assert lines[0] == f"segment: {log}"
    assert lines[1] == f"index entry: offset: {entry[0]} position: {entry[1]}"
    assert lines[2] == f"scan start: {entry[1]}"
    assert lines[3].startswith(f"bytes scanned: {position + size - entry[1]} (")
    dump_lines, _ = dumped(log)
    batch_at = dump_lines.index(next(x for x in dump_lines if f" position: {position} " in x))
    record_line = next(x for x in dump_lines[batch_at:] if x.startswith(f"| offset: {offset} "))
    assert lines[4:] == [dump_lines[batch_at], record_line]


def test_cli_timestamp_text_json_and_iso() -> None:
    name = "00000000000000000000.log"
    queries = expected("plain-0", name)["logSegmentQueries"]
    answers = queries["findOffsetByTimestamp_timestamp_offset_leaderEpoch"]
    target, answer = next((int(t), a) for t, a in answers.items() if a and int(t) > 0)
    iso = (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=target)).astimezone(
        timezone(timedelta(hours=-5))
    )
    directory = str(ORACLE / "plain-0")
    for given in (str(target), iso.isoformat()):
        ran = run_kdump(["lookup", directory, "--timestamp", given, "--format", "json"])
        assert ran.exit_code == 0, ran.stderr
        obj = json.loads(ran.stdout)
        assert obj["target"] == target
        assert [obj["list_offsets"][k] for k in ("timestamp", "offset", "leader_epoch")] == answer
        assert obj["record"]["offset"] == answer[1]
    text = run_kdump(["lookup", directory, "--timestamp", str(target)])
    assert text.exit_code == 0
    shown = f"{answer[0]} ({iso_text(answer[0])})" if answer[0] >= 0 else str(answer[0])
    assert text.stdout.splitlines()[-1] == (
        f"ListOffsets: timestamp: {shown} offset: {answer[1]} leaderEpoch: {answer[2]}"
    )


def test_cli_explain_shows_segments_probes_and_scan() -> None:
    name, offset, entry, _ = kafka_case()
    ran = run_kdump(["lookup", str(ORACLE / "plain-0"), "--offset", str(offset), "--explain"])
    assert ran.exit_code == 0
    out = ran.stdout
    assert f"Segments considered for offset {offset}" in out
    assert f"{name.replace('.log', '.index')}: FLOOR {offset} over" in out
    assert "chosen: slot " in out and f"offset {entry[0]} position {entry[1]}" in out
    assert "Scan" in out and "vs target" in out
    assert f"index entry: offset: {entry[0]} position: {entry[1]}" in out


def test_cli_out_of_range_exits_1() -> None:
    directory = str(ORACLE / "plain-0")
    leo = oracle_manifest()["directories"]["plain-0"]["log_end_offset"]
    beyond = run_kdump(["lookup", directory, "--offset", str(leo + 1)])
    assert beyond.exit_code == 1
    assert beyond.stdout == (
        f"offset {leo + 1} is above the log end offset {leo}: the broker answers "
        "OFFSET_OUT_OF_RANGE\n"
    )
    at_end = run_kdump(["lookup", directory, "--offset", str(leo), "--format", "json"])
    assert at_end.exit_code == 1 and json.loads(at_end.stdout)["outcome"] == "at_log_end"
    below = run_kdump(["lookup", directory, "--offset", "-1"])
    assert below.exit_code == 1 and "below the log start offset 0" in below.stdout
    last = max(r.record.timestamp for r in every_record(ORACLE / "plain-0") if r.record)
    late = run_kdump(["lookup", directory, "--timestamp", str(last + 1), "--format", "json"])
    assert late.exit_code == 1
    obj = json.loads(late.stdout)
    assert obj["outcome"] == "no_offset" and obj["record"] is None
    assert "answers offset -1" in obj["message"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["lookup", "no/such/dir", "--offset", "1"], "no/such/dir: no such directory"),
        (["lookup", str(ORACLE), "--offset", "1"], "holds 8 partitions"),
        (["lookup", str(ORACLE / "plain-0"), "--timestamp", "noon"], "not epoch milliseconds"),
        (["lookup", str(ORACLE / "plain-0")], "exactly one of --offset and --timestamp"),
    ],
)
def test_cli_bad_input_exits_3(args: list[str], says: str) -> None:
    ran = run_kdump(args)
    assert ran.exit_code == 3
    assert ran.stdout == ""
    assert says in ran.stderr
    assert "Traceback" not in ran.stderr


def test_cli_warns_on_stderr_and_still_answers() -> None:
    log = opened(ORACLE / "activeprealloc-0")
    ran = run_kdump(
        ["lookup", str(ORACLE / "activeprealloc-0"), "--offset", str(log.log_end_offset - 1)]
    )
    assert ran.exit_code == 0
    assert ran.stderr.startswith("kdump: warning: ")
    assert "preallocated: 2 of 1310720 entries" in ran.stderr
    assert f"| offset: {log.log_end_offset - 1} " in ran.stdout


# -- a log recovery cuts: a power loss's zero tail, a torn batch, a gap ------------------------


def test_zero_tail_lookups_answer_from_the_segments_and_say_where_the_cut_is(
    tmp_path: Path,
) -> None:
    """A power loss left zeros after the active segment's last batch (issue 28 point 4): every
    offset and timestamp below them answers as before; a read into them says where they begin
    (exit 2), and the offset there is the log end once recovery cuts them."""
    copy = copy_partition("plain-0", tmp_path)
    active = max(copy.glob("*.log"))
    end = active.stat().st_size
    with active.open("ab") as log:
        log.write(bytes(2335))
    healthy, zeroed = opened(ORACLE / "plain-0"), open_partition(str(copy))
    leo = healthy.log_end_offset
    stamps = [r.record.timestamp for r in every_record(ORACLE / "plain-0") if r.record][::97]
    want = answers(healthy, range(0, leo, 37), stamps)
    assert answers(zeroed, range(0, leo, 37), stamps) == want
    assert all(lookup_offset(zeroed, o).outcome is Outcome.FOUND for o in (0, leo - 1))
    ran = run_kdump(["lookup", str(copy), "--offset", str(leo), "--format", "json"])
    obj = json.loads(ran.stdout)
    assert (ran.exit_code, obj["outcome"]) == (2, "damaged")
    assert f"{active}:{end}, where LOG_ZERO_TAIL: 2335 zero bytes after the last" in obj["message"]
    assert "minimum record overhead" not in obj["message"]  # zeros, named as verify names them
    (warning,) = obj["warnings"]
    assert f"offset {leo} is where recovery cuts the log ({active}:{end}" in warning
    assert "then it is the log end offset, and a fetch there returns no records" in warning
    assert "OFFSET_OUT_OF_RANGE" not in warning


def test_past_a_bad_batch_the_cut_offset_is_the_log_end_and_later_ones_out_of_range(
    tmp_path: Path,
) -> None:
    """A flipped byte mid-log: the broker reads the files as they are, then recovery cuts at the
    bad batch; that batch's first offset becomes the log end (an empty fetch), later offsets
    OFFSET_OUT_OF_RANGE."""
    copy = copy_partition("plain-0", tmp_path)
    log_path = copy / "00000000000000000515.log"
    data = bytearray(log_path.read_bytes())
    data[len(data) // 2] ^= 0x40
    log_path.write_bytes(bytes(data))
    log = open_partition(str(copy))
    assert log.damaged_from is not None
    cut = log.damaged_from.offset
    (at_cut,) = lookup_offset(log, cut).warnings
    assert f"offset {cut} is where recovery cuts the log" in at_cut
    assert "then it is the log end offset" in at_cut and "OFFSET_OUT_OF_RANGE" not in at_cut
    (past,) = lookup_offset(log, cut + 300).warnings
    assert f"offset {cut + 300} lies past where recovery cuts the log" in past
    assert "answers OFFSET_OUT_OF_RANGE for it once it recovers that segment" in past


def test_offset_no_longer_in_the_log_is_next_not_found(tmp_path: Path) -> None:
    """Offsets a deleted segment held (issue 28 point 5): the fetch returns the batch holding the
    next offset there is; the answer says so, outcome `next`, exit 1, in text and JSON."""
    copy = copy_partition("plain-0", tmp_path)
    for file in copy.glob("00000000000000000515.*"):
        file.unlink()
    args = ["lookup", str(copy), "--offset", "600"]
    text, as_json = run_kdump(args), run_kdump([*args, "--format", "json"])
    assert (text.exit_code, as_json.exit_code) == (1, 1)
    assert "| offset: 761 " in text.stdout
    assert text.stdout.endswith(
        "offset 600 is not in the log (compacted, deleted or cut away): a fetch at 600 returns "
        "the batch holding offset 761, from there on\n"
    )
    obj = json.loads(as_json.stdout)
    assert (obj["outcome"], obj["record"]["offset"]) == ("next", 761)


def test_a_log_dir_is_refused_in_one_short_line(tmp_path: Path) -> None:
    """Issue 44.9: `lookup LOGDIR --offset 1` named every partition of the log dir on one
    line (63 of them in the trial): a few, the rest counted, and one to give."""
    for p in range(63):
        shutil.copytree(ORACLE / "txn-0", tmp_path / f"orders-{p}")
    ran = run_kdump(["lookup", str(tmp_path), "--offset", "1"])
    assert ran.exit_code == 3 and ran.stdout == ""
    assert ran.stderr == (
        f"kdump: {tmp_path}: holds 63 partitions (orders-0, orders-1, orders-2 and 60 more): "
        f"give one, such as {tmp_path}/orders-0\n"
    )
