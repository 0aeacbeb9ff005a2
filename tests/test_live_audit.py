"""Issue 30: verify beside a live broker: page-cache neutral, throttled, nice, incremental,
resumable within a budget."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch, write_partition
from clirun import run_kdump

from kdump import parallel, speedups, unified_log
from kdump.checks.audit import AuditOptions
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.format.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from kdump.storage import libc, reading
from kdump.storage.reading import PAGE, RateLimit, ReadPolicy, residency, uncached_ranges
from kdump.unified_log import FACT_KEYS

MIB = 1 << 20


def _write_log(part: Path, base: int, mib: int, seed: int = 0) -> Path:
    """A .log of ``mib`` MiB of uncompressed 64 KiB v2 batches (the independent encoder)."""
    part.mkdir(parents=True, exist_ok=True)
    payload = 64 * 1024 - 61
    batches = [v2_batch(base + i, bytes([(i + seed) % 251]) * payload) for i in range(mib * 16)]
    path = part / segment_file_name(base, LOG_SUFFIX)
    with open(path, "wb") as f:
        f.write(b"".join(batches))
        f.flush()
        os.fsync(f.fileno())  # dirty pages are not dropped: written back first
    return path


def _resident(path: Path) -> bytes:
    found = residency(path)
    if found is None:
        pytest.skip(f"{path}: mincore cannot see this file's page cache")
    return found


def _drop(path: Path, start: int = 0) -> None:
    for pause in (0.01, 0.05, 0.2, 1.0):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, start, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if not any(_resident(path)[start // PAGE :]):
            return
        time.sleep(pause)  # read-ahead in flight: its pages are dropped once read
    if any(_resident(path)[start // PAGE :]):
        # tmpfs and overlay upper layers keep pages that have no disk behind them
        pytest.skip(f"{path}: this filesystem keeps its pages cached (tmpfs, overlay?)")


def _kdump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdump", *map(str, args)], capture_output=True, text=True
    )


def _shares(before: bytes, after: bytes) -> tuple[float, float]:
    """Of the pages resident before, the share still resident; of the others, the share now
    resident."""
    kept = [a for b, a in zip(before, after, strict=True) if b]
    added = [a for b, a in zip(before, after, strict=True) if not b]
    return sum(kept) / max(1, len(kept)), sum(added) / max(1, len(added))


@pytest.fixture
def half_cached(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A partition of one 24 MiB segment (three of the walk's windows) whose first half is in
    the page cache (read by this process) and whose second half is not."""
    part = tmp_path / "live-0"
    log = _write_log(part, 0, 24)
    _drop(log)
    with open(log, "rb") as f:
        # no read-ahead: it can land past the half after the read has returned
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        f.read(12 * MIB)
    _drop(log, 12 * MIB)
    before = _resident(log)
    assert 0 < sum(before) < len(before)
    return part, log, before


@pytest.mark.parametrize("deep", [(), ("--deep",)], ids=["shallow", "deep"])
def test_verify_leaves_the_page_cache_as_it_found_it(
    half_cached: tuple[Path, Path, bytes], deep: tuple[str, ...]
) -> None:
    part, log, before = half_cached
    done = _kdump("verify", part, "--format", "json", *deep)
    assert done.returncode in (0, 1, 2), done.stderr  # the payloads are not records: --deep says so
    assert json.loads(done.stdout)["summary"]["bytes"] == log.stat().st_size
    kept, added = _shares(before, _resident(log))
    assert kept >= 0.99
    assert added <= 0.02


def test_keep_cache_leaves_what_verify_read_cached(half_cached: tuple[Path, Path, bytes]) -> None:
    part, log, before = half_cached
    done = _kdump("verify", part, "--keep-cache", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    kept, added = _shares(before, _resident(log))
    assert kept >= 0.99
    assert added >= 0.9


def test_verify_leaves_no_index_file_cached_either(tmp_path: Path) -> None:
    part = write_partition(tmp_path / "cold-0", (0, 100))
    files = sorted(part.iterdir())
    assert {f.suffix for f in files} == {".log", ".index", ".timeindex"}
    for f in files:
        with open(f, "rb+") as out:
            os.fsync(out.fileno())
        _drop(f)
    done = _kdump("verify", part, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert {f.name: sum(_resident(f)) for f in files} == {f.name: 0 for f in files}


@pytest.mark.skipif(speedups.native() is None, reason="no C module built")
def test_the_c_module_and_ctypes_ask_the_kernel_alike(tmp_path: Path) -> None:
    """cachestat and mincore are the C module's calls, ctypes's without it: the same answers,
    span by span, and the same residency made of them."""
    path = _write_log(tmp_path, 0, 24)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        os.pread(fd, size, 0)
        _drop(path, 10 * MIB)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        os.pread(fd, MIB // 2, 12 * MIB)
        native = speedups.native()
        assert native is not None and libc.available()
        for start, span in ((0, 8 * MIB), (8 * MIB, 8 * MIB), (16 * MIB, size - 16 * MIB)):
            assert native.cached_pages(fd, start, span) == libc.cached_pages(fd, start, span)
            assert native.mincore(fd, start, span) == libc.mincore(fd, start, span)
        assert native.mincore(fd, 1, PAGE) is None  # not page aligned: not asked
        with speedups.pure_python():
            through_ctypes = reading.resident_pages(fd, size)
        assert through_ctypes is not None and through_ctypes == reading.resident_pages(fd, size)
    finally:
        os.close(fd)


def test_uncached_ranges_are_the_absent_pages() -> None:
    vector = bytes([1, 0, 0, 1, 0b10, 1, 0])  # bits other than bit 0 are reserved
    assert uncached_ranges(vector) == [
        (1 * PAGE, 3 * PAGE),
        (4 * PAGE, 5 * PAGE),
        (6 * PAGE, 7 * PAGE),
    ]


def test_a_counted_residency_answers_as_mincore_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cachestat's counts stand in for mincore's page walk over spans all or none of whose
    pages are cached; a span partly cached gets mincore's vector, page for page."""
    path = _write_log(tmp_path, 0, 24)  # three 8 MiB spans
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        os.pread(fd, size, 0)
        whole = reading.resident_pages(fd, size)
        _drop(path, 10 * MIB)  # the first span cached, the second partly, the third not
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead past the read
        os.pread(fd, MIB // 2, 12 * MIB)
        part = reading.resident_pages(fd, size)
        monkeypatch.setattr(reading, "_HAS_CACHESTAT", False)
        assert reading.resident_pages(fd, size) == part
        os.pread(fd, size, 0)
        walked = reading.resident_pages(fd, size)
    finally:
        os.close(fd)
    assert whole == walked == b"\x01" * (size // PAGE)
    assert part is not None and part[: 10 * MIB // PAGE] == b"\x01" * (10 * MIB // PAGE)
    assert any(b & 1 for b in part[12 * MIB // PAGE : 13 * MIB // PAGE])
    assert not any(b & 1 for b in part[13 * MIB // PAGE :])


def test_what_the_broker_appends_during_a_walk_stays_cached(tmp_path: Path) -> None:
    """The active segment grows while verify reads it: the pages past its size at open are the
    broker's newest, which its consumers read next; none is dropped."""
    log = _write_log(tmp_path / "grow-0", 0, 2)
    _drop(log)
    fd = os.open(log, os.O_RDONLY)
    try:
        guard = ReadPolicy.live().guard(fd, os.fstat(fd).st_size)
        assert guard is not None
        with open(log, "ab") as f:  # the broker appends, and the pages are read back
            f.write(b"\x01" * MIB)
            f.flush()
            os.fsync(f.fileno())
        with open(log, "rb") as f:
            f.read()
        guard.close()
    finally:
        os.close(fd)
    resident = _resident(log)
    assert not any(resident[: 2 * MIB // PAGE])
    assert all(resident[2 * MIB // PAGE :])


# --- incremental: --state ----------------------------------------------------------------------


def _partition(root: Path, bases: tuple[int, ...] = (0, 100, 200)) -> Path:
    return write_partition(root / "audit-0", bases)


def _run(part: Path, state: Path | None, **audit: Any) -> VerifyResult:
    options = AuditOptions(None if state is None else str(state), **audit)
    return verify_paths([str(part)], VerifyOptions(), audit=options)


def _sizes(part: Path, *bases: int) -> int:
    return sum((part / segment_file_name(b, LOG_SUFFIX)).stat().st_size for b in bases)


def _same_verdict(a: VerifyResult, b: VerifyResult) -> None:
    assert [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings]
    assert a.summary() == b.summary()


def test_a_second_run_of_an_idle_partition_reads_nothing_and_says_the_same(
    tmp_path: Path,
) -> None:
    """Issue 44 point 4: the active segment's verified prefix is not read again either."""
    part, state = _partition(tmp_path), tmp_path / "state.json"
    first = _run(part, state, recheck_fraction=0)
    assert first.audit.bytes_verified == _sizes(part, 0, 100, 200)
    second = _run(part, state, recheck_fraction=0)
    assert second.audit.bytes_verified == 0
    assert second.audit.bytes_unchanged_skipped == _sizes(part, 0, 100, 200)
    assert second.audit.oldest_verified_ms == first.audit.oldest_verified_ms
    assert not second.audit.partial
    _same_verdict(first, second)


def test_a_second_run_reads_an_unchanged_segment_s_batch_headers_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted where the storage layer reads a local file: the header reads of the segments'
    identities, and every read or open of a file through ``LocalStorage``."""
    from kdump.checks import verify_state
    from kdump.format.layout import RECORD_BATCH_OVERHEAD
    from kdump.storage.local import LocalStorage

    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    reads: list[tuple[str, int]] = []
    real_ranges, real_read, real_open = (
        verify_state.read_ranges,
        LocalStorage.read,
        LocalStorage.open_log,
    )

    def ranges(path: Any, spans: list[tuple[int, int]], *policy: ReadPolicy) -> Any:
        reads.extend((Path(path).name, end - start) for start, end in spans)
        return real_ranges(path, spans, *policy)

    def read(self: LocalStorage, name: str, *args: Any) -> Any:
        reads.append((name, -1))
        return real_read(self, name, *args)

    def open_log(self: LocalStorage, name: str) -> Any:
        reads.append((name, -1))
        return real_open(self, name)

    monkeypatch.setattr(verify_state, "read_ranges", ranges)
    monkeypatch.setattr(LocalStorage, "read", read)
    monkeypatch.setattr(LocalStorage, "open_log", open_log)
    _run(part, state, recheck_fraction=0)
    closed = {segment_file_name(b, s) for b in (0, 100) for s in (LOG_SUFFIX, INDEX_SUFFIX)}
    closed |= {segment_file_name(b, TIME_INDEX_SUFFIX) for b in (0, 100)}
    on_closed = [(name, n) for name, n in reads if name in closed]
    # the first and the last batch header of each closed .log, nothing of its indexes
    assert sorted(on_closed) == sorted(
        (segment_file_name(b, LOG_SUFFIX), RECORD_BATCH_OVERHEAD) for b in (0, 100) for _ in "fl"
    )
    assert any(name == segment_file_name(200, LOG_SUFFIX) for name, _ in reads)


def test_header_reads_ask_the_kernel_about_their_own_pages_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two headers of a large segment cost a page's mincore each, not the whole file's; the
    page cache is left as it was."""
    log = _write_log(tmp_path / "live-0", 0, 8)
    _drop(log)
    with open(log, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        f.read(PAGE)  # the first header's page is the broker's, the last one's is not
    before = _resident(log)
    asked: list[int] = []
    real = reading.resident_pages

    def resident_pages(fd: int, size: int, *start: int) -> bytes | None:
        asked.append(size)
        return real(fd, size, *start)

    monkeypatch.setattr(reading, "resident_pages", resident_pages)
    size = log.stat().st_size
    last = size - 64 * 1024
    _, got = reading.read_ranges(log, [(0, 61), (last, last + 61)], ReadPolicy.live())
    assert [len(b) for b in got] == [61, 61]
    assert asked and max(asked) <= 2 * PAGE
    monkeypatch.undo()
    assert _resident(log) == before


def test_a_closed_segment_changed_in_place_is_a_finding_and_read_again(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    with open(part / segment_file_name(0, LOG_SUFFIX), "r+b") as f:  # same inode
        f.seek(500)
        f.write(b"\xff")
    second = _run(part, state, recheck_fraction=0)
    assert {f.code for f in second.findings} == {"SEGMENT_CHANGED", "LOG_CRC_MISMATCH"}
    assert second.audit.bytes_verified == _sizes(part, 0)


def test_a_closed_segment_replaced_by_a_new_file_is_read_again_without_a_finding(
    tmp_path: Path,
) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    log = part / segment_file_name(100, LOG_SUFFIX)
    copy = log.with_suffix(".cleaned")
    copy.write_bytes(log.read_bytes())
    os.replace(copy, log)  # as the cleaner swaps a segment in: a new inode
    second = _run(part, state, recheck_fraction=0)
    assert second.findings == []
    assert second.audit.bytes_verified == _sizes(part, 100)


def test_rechecks_go_longest_unread_first_and_fractions_carry_over(tmp_path: Path) -> None:
    part, state = _partition(tmp_path, (0, 100, 200, 300, 400)), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    doc = json.loads(state.read_text())
    ages = {"0": 4, "100": 1, "200": 3, "300": 2}  # days since verified
    for key, record in doc["segments"].items():
        record["verified_ms"] -= ages[str(int(Path(key).stem))] * 86_400_000
    state.write_text(json.dumps(doc))
    read = []
    for _ in range(3):  # 4 unchanged closed segments at 3/8: 1.5 re-reads a run
        before = {int(Path(k).stem): r["verified_ms"] for k, r in _records(state)}
        result = _run(part, state, recheck_fraction=3 / 8)
        after = {int(Path(k).stem): r["verified_ms"] for k, r in _records(state)}
        read.append(sorted(b for b in before if after[b] != before[b]))
    # the longest unread first: 0 (4 days), then 200 (3) and 300 (2), then 100 (1)
    assert read == [[0], [200, 300], [100]]
    assert result.audit.bytes_verified == _sizes(part, 100)


def _records(state: Path) -> list[tuple[str, Any]]:
    return list(json.loads(state.read_text())["segments"].items())


def test_a_segment_unread_for_30_days_is_read_whatever_the_fraction(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    doc = json.loads(state.read_text())
    old = next(k for k in doc["segments"] if k.endswith(segment_file_name(100, LOG_SUFFIX)))
    doc["segments"][old]["verified_ms"] -= 30 * 86_400_000
    state.write_text(json.dumps(doc))
    assert _run(part, state, recheck_fraction=0).audit.bytes_verified == _sizes(part, 100)


def _bad_facts(state: Path) -> bytes:
    doc = json.loads(state.read_text())
    for record in doc["segments"].values():
        record["scan"]["batches"] = "many"
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("contents", "reason"),
    [
        (lambda state: state.read_bytes()[:60], "its contents are damaged (not whole JSON)"),
        (lambda _: b'{"format": "kdump-verify-state", "version": 99}', "version 99, not 2"),
        (_bad_facts, "].scan: a segment's facts are not numbers"),
    ],
)
def test_a_damaged_or_foreign_state_file_is_a_warning_and_a_full_run(
    tmp_path: Path, contents: Any, reason: str
) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    state.write_bytes(contents(state))
    ran = run_kdump(["verify", str(part), "--state", str(state), "--format", "json"])
    assert ran.exit_code == 0
    assert ran.stderr.startswith(f"kdump: warning: {state}: ")
    assert ran.stderr.endswith(f"{reason}; verifying everything\n")
    assert len(ran.stderr.splitlines()) == 1
    run = json.loads(ran.stdout)["run"]
    assert run["bytes_verified"] == _sizes(part, 0, 100, 200)
    assert run["bytes_unchanged_skipped"] == 0
    # the run wrote a good state: the next one is incremental again
    assert _run(part, state, recheck_fraction=0).audit.bytes_unchanged_skipped


@pytest.mark.parametrize(
    "contents", [b"\x00\xffnot json", b'{"format": "something-else"}', b"retention.ms=1\n"]
)
def test_a_file_kdump_did_not_write_is_never_replaced(tmp_path: Path, contents: bytes) -> None:
    """A mistyped --state path naming an operator's file: a full run, the file left alone."""
    part, state = _partition(tmp_path), tmp_path / "mine.conf"
    state.write_bytes(contents)
    for _ in range(2):
        ran = run_kdump(["verify", str(part), "--state", str(state), "--format", "json"])
        assert ran.exit_code == 0
        assert ran.stderr == (
            f"kdump: warning: {state}: not a kdump verify state file; verifying everything and "
            "leaving it as it is (remove it or give --state another path)\n"
        )
        assert json.loads(ran.stdout)["run"]["bytes_unchanged_skipped"] == 0
        assert state.read_bytes() == contents


def test_the_state_file_is_replaced_atomically_and_forgets_deleted_segments(
    tmp_path: Path,
) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        (part / segment_file_name(0, suffix)).unlink()  # retention
    _run(part, state, recheck_fraction=0)
    keys = json.loads(state.read_text())["segments"]
    assert [Path(k).name for k in keys] == [segment_file_name(100, LOG_SUFFIX)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit-0", "state.json"]


# --- a budget, an interruption --------------------------------------------------------------


def test_a_budget_stops_at_a_segment_boundary_and_the_next_run_goes_on(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    read = []
    for _ in range(3):
        # a budget spent at once: one segment a run
        result = _run(part, state, recheck_fraction=0, budget_ms=0)
        read.append((result.audit.bytes_verified, result.audit.partial))
    assert read == [
        (_sizes(part, 0), True),
        (_sizes(part, 100), True),
        (_sizes(part, 200), False),
    ]
    assert _run(part, state, recheck_fraction=0).audit.bytes_verified == 0


def test_a_partial_run_says_so_in_text_json_and_prom(tmp_path: Path) -> None:
    part, state, prom = _partition(tmp_path), tmp_path / "state.json", tmp_path / "v.prom"
    args = ["verify", str(part), "--state", str(state), "--budget", "0s", "--prom", str(prom)]
    text = run_kdump(args)
    assert text.exit_code == 0
    first_unread = part / segment_file_name(100, LOG_SUFFIX)
    assert f"partial: stopped before {first_unread} (--budget, or interrupted)" in text.stdout
    assert 'kdump_run_partial{command="verify"} 1\n' in prom.read_text()
    assert f'kdump_verified_bytes{{command="verify"}} {_sizes(part, 0)}\n' in prom.read_text()
    run = json.loads(run_kdump([*args, "--format", "json"]).stdout)["run"]
    second_unread = str(part / segment_file_name(200, LOG_SUFFIX))
    assert (run["partial"], run["stopped_at"]) == (True, second_unread)
    assert run["bytes_unchanged_skipped"] == _sizes(part, 0)
    assert json.loads(state.read_text())["stopped_at"] == second_unread


def test_partitions_a_budget_left_unread_are_said_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44.7: `--budget 0s` printed counts for partitions it never read: their facts
    walked every segment after the budget was spent. Not read: said so, no count, no fact
    (null), and nothing read after the stop."""
    logs = tmp_path / "logs"
    for p in range(3):
        write_partition(logs / f"audit-{p}", (0, 100))
    walked: list[str] = []
    real = unified_log.recover_scan  # the partition's own walk of a segment, for its facts

    def counted(log: Any, *args: Any, **kw: Any) -> Any:
        walked.append(log.path)
        return real(log, *args, **kw)

    monkeypatch.setattr(unified_log, "recover_scan", counted)
    result = _run(logs, None, budget_ms=0)
    assert result.audit.partial and walked == []  # the one segment the budget allows, only
    rows = {Path(r.path).name: r.summary for r in result.partitions}
    assert [s.read for s in rows.values()] == ["partly", "none", "none"]
    unread = rows["audit-2"].to_dict()
    assert unread["segments_read"] == unread["batches"] == 0
    assert {k: v for k, v in unread.items() if k in FACT_KEYS and v is not None} == {
        "path": str(logs / "audit-2"),
        "topic": "audit",
        "partition": 2,
    }
    text = run_kdump(["verify", "--budget", "0s", str(logs)]).stdout
    line = next(line for line in text.splitlines() if line.startswith(" audit-2 "))
    cells = [cell.strip() for cell in line.split("|")]
    assert cells[1] == "not read" and set(cells[2:]) == {"-"}, text
    assert "1, partly" in text


def test_a_budget_bounds_a_throttled_run(tmp_path: Path) -> None:
    """Issue 39 point 7: with --max-io-rate a run read as much as without a budget (200
    segments at 200 KiB/s: 9.4 s with or without --budget 1s) and kept only the first segments;
    the partition's facts read the rest. Now no segment is begun after the budget, one being
    read is left at its next read (the rate's wait cut short), and the facts read nothing
    more. At the rate, the whole takes 8 s or more (the throttle sees to it, whatever the
    machine); under a budget of 1 s the run ends long before."""
    part = write_partition(tmp_path / "throttled-0", tuple(range(0, 600, 10)), batches=10)
    total = sum(p.stat().st_size for p in part.glob("*.log"))
    rate = total // 8  # bytes a second: 8 s for the whole
    start = time.monotonic()
    ran = _kdump("verify", part, "--max-io-rate", str(rate), "--budget", "1s", "--format", "json")
    took = time.monotonic() - start
    run = json.loads(ran.stdout)["run"]
    assert run["partial"] and run["bytes_verified"] < total / 3, run
    assert took < 5, f"a 1 s budget took {took:.1f} s"


def test_rereads_a_budget_left_undone_are_owed_to_the_next_run(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state, recheck_fraction=0)
    stopped = _run(part, state, recheck_fraction=1, budget_ms=0)  # the active one, then stop
    assert stopped.audit.bytes_verified == 0  # its verified prefix: nothing appended
    assert stopped.audit.stopped_at == str(part / segment_file_name(0, LOG_SUFFIX))
    owed = _run(part, state, recheck_fraction=0)
    assert owed.audit.bytes_verified == _sizes(part, 0, 100)


class _StopAfterOne:
    def total(self, amount: int) -> None:
        pass

    def advance(self, amount: int, what: str) -> None:
        raise KeyboardInterrupt


def test_an_interrupted_run_keeps_what_it_verified(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    with pytest.raises(KeyboardInterrupt):
        verify_paths(
            [str(part)], VerifyOptions(), _StopAfterOne(), audit=AuditOptions(str(state), 0)
        )
    doc = json.loads(state.read_text())
    assert [Path(k).name for k in doc["segments"]] == [segment_file_name(0, LOG_SUFFIX)]
    assert doc["stopped_at"] == str(part / segment_file_name(100, LOG_SUFFIX))
    assert _run(part, state, recheck_fraction=0).audit.bytes_verified == _sizes(part, 100, 200)


# --- throttled, nice ------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_rate_limit_holds_over_the_whole_run() -> None:
    clock = _Clock()
    limit = RateLimit(100, clock, clock.sleep)
    limit.take(50)  # 0.5 s of reading at 100 B/s, done at once: wait for it
    clock.now += 2.0  # a slow stretch (another file opened, checks): credit, not a burst cap
    limit.take(150)
    limit.take(100)
    assert clock.slept == [0.5, 0.5]
    assert clock.now == 100.0 + 300 / 100


def test_max_io_rate_bounds_a_verify_from_below(tmp_path: Path) -> None:
    part = tmp_path / "rate-0"
    size = _write_log(part, 0, 2).stat().st_size
    start = time.monotonic()
    ran = run_kdump(["verify", str(part), "--max-io-rate", "4MiB/s", "-q"])
    took = time.monotonic() - start
    assert ran.exit_code == 0, ran.stderr
    assert took >= size / (4 * MIB)


def test_nice_runs_at_the_lowest_priorities() -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("ioprio_get's number is known here for x86_64")
    probe = (
        "import ctypes, os\n"
        "from kdump.storage.reading import lower_priority\n"
        "notes = lower_priority()\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(os.nice(0), libc.syscall(252, 1, 0) >> 13, notes)\n"  # ioprio_get(WHO_PROCESS)
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split(maxsplit=2) == ["19", "3", "[]\n"]


def test_a_reader_the_kernel_hides_the_cache_from_drops_nothing() -> None:
    """Linux 5.2+ answers mincore about a file's page cache only to its owner or a writer: to
    anyone else every page looks cached, whatever is. Such a reader cannot tell what its walk
    brought in: it leaves the cache alone, and verify says so."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to read as another user")
    folder = Path(tempfile.mkdtemp(prefix="kdump-blind-"))
    try:
        folder.chmod(0o755)
        log = _write_log(folder / "blind-0", 0, 1)
        log.parent.chmod(0o755)
        log.chmod(0o644)
        _drop(log)  # no page cached
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # as nobody: the kernel's answer, and the policy's
            os.close(read)
            os.setuid(65534)
            fd = os.open(log, os.O_RDONLY)
            size = os.fstat(fd).st_size
            vec = libc.mincore(fd, 0, size)  # the kernel's own answer, asked as is
            assert vec is not None
            seen = sum(b & 1 for b in vec)
            policy = ReadPolicy.live()
            answer = f"{seen} {policy.blind_to(log)} {policy.guard(fd, size) is None}"
            os.write(write, answer.encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            answer = pipe.read()
        os.waitpid(child, 0)
        assert answer == f"{log.stat().st_size // PAGE} True True"
        assert not any(_resident(log))
    finally:
        shutil.rmtree(folder)


def test_forked_workers_each_take_their_share_of_the_rate() -> None:
    clock = _Clock()
    limit = RateLimit(100, clock, clock.sleep)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a --jobs 2 worker (kdump.parallel tells it the run's processes)
        os.close(read)
        parallel._processes = 2
        limit.take(100)
        os.write(write, repr(clock.slept).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        slept = pipe.read()
    os.waitpid(child, 0)
    assert slept == "[2.0]"  # 100 bytes at half of 100 B/s
