"""The check of a rebuild's new index files before they replace anything (kdump.repair.recheck)
reads what the rebuild's own walk gathered as it made their entries, instead of walking the log
a second time: its findings must be those a second walk gives, on every distinct fixture
segment, with Kafka's interval and with intervals that put an entry at every batch or at very
few."""

from __future__ import annotations

import hashlib
import pickle
import tempfile
from array import array
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FIXTURES, ORACLE, REALFILES
from hypothesis import given
from test_repair_properties import INTERVALS, SETTINGS, segment_logs, write_partition

from kdump.checks import gather as gather_module
from kdump.checks.gather import ROW, IndexGather
from kdump.checks.options import VerifyOptions
from kdump.checks.verify import verify_paths
from kdump.format.walk import COLUMNS, BatchRun
from kdump.repair import recheck
from kdump.repair.apply import RepairSession, WriteOptions
from kdump.repair.plan import (
    Scope,
    SegmentPlan,
    plan_rebuild_index,
    plan_recover,
    resolve_targets,
)
from kdump.repair.rebuild import IndexConfig
from kdump.speedups import pure_python

INPUTS = [str(ORACLE), str(FIXTURES / "corrupt"), str(REALFILES)]


def _digest(data: bytes | None) -> bytes | None:
    return None if data is None else hashlib.sha256(data).digest()


def recheck_case(plan: SegmentPlan) -> tuple[object, ...]:
    """What the recheck of a plan reads, less the file names: the log's bytes and where the plan
    keeps them, the base offsets, whether the rebuild's walk gathered, the files it writes. The
    corrupt fixtures are copies of the oracle partitions with one file damaged, and most genuine
    segments are empty: of some 650 plans, about 115 are cases of their own."""
    changes = tuple(
        (c.kind, c.changed, c.delete, c.truncate_at, c.new_size, _digest(c.content))
        for c in plan.changes
    )
    log = _digest(plan.segment.log_path.read_bytes())
    segment = (plan.segment.base_offset, plan.new_base, plan.is_active, plan.valid_end)
    return (log, segment, plan.scan is None, changes)


@pytest.mark.parametrize("interval", [0, 4096, 1 << 20])
@pytest.mark.parametrize("cut", [False, True], ids=["rebuild-index", "recover"])
def test_the_rebuilds_own_rows_check_as_a_second_walk_does(
    tmp_path: Path, interval: int, cut: bool
) -> None:
    config = IndexConfig(interval)
    targets = resolve_targets(INPUTS)
    if cut:
        plans = plan_recover(targets, config, scope=Scope.ALL)
    else:
        plans = plan_rebuild_index(targets, config)
    gathered = walked = 0
    cases: set[tuple[object, ...]] = set()
    with RepairSession(WriteOptions(output_dir=tmp_path, backup=False)) as session:
        for plan in plans:
            case = recheck_case(plan)
            if case in cases:
                continue
            cases.add(case)
            staged = session.stage(plan)
            if not staged:
                continue
            if plan.scan is not None:
                gathered += 1
            else:
                walked += 1
            one_walk = recheck.recheck_staged(plan, staged, config)
            two_walks = recheck.recheck_staged(replace(plan, scan=None), staged, config)
            assert one_walk == two_walks, plan.segment.log_path
    assert gathered > 50 and gathered > 5 * walked


def test_a_rebuild_reads_the_log_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a sound partition no segment's check walks the log again."""

    def second_walk(*args: object) -> None:
        raise AssertionError("the recheck walked the log again")

    monkeypatch.setattr(recheck, "gather_log", second_walk)
    config = IndexConfig()
    with RepairSession(WriteOptions(output_dir=tmp_path, backup=False)) as session:
        plans = list(plan_rebuild_index(resolve_targets([str(ORACLE / "plain-0")]), config))
        for plan in plans:
            staged = session.stage(plan, plan.changes)
            assert staged and recheck.recheck_staged(plan, staged, config) == []


def _run(*batches: tuple[int, int, int, int]) -> BatchRun:
    """A run of batches given as (position, base offset, last offset, max timestamp)."""
    columns = {name: array("q", [0] * len(batches)) for name in COLUMNS}
    for i, (position, base, last, max_ts) in enumerate(batches):
        columns["position"][i], columns["base_offset"][i] = position, base
        columns["last_offset"][i], columns["max_timestamp"][i] = last, max_ts
    return BatchRun(len(batches), [columns[name] for name in COLUMNS])


FIRST = _run((0, 0, 4, 100), (70, 5, 9, 300), (140, 10, 14, 200))
SECOND = _run((210, 15, 19, 250), (280, 20, 24, 400))


def _fixed(positions: list[int], offsets: list[int]) -> IndexGather:
    gather = IndexGather(None, None)
    gather.wanted_positions, gather.wanted_offsets = array("q", positions), array("q", offsets)
    gather._position_room = array("q", [0]) * (ROW * len(positions))
    gather._offset_room = array("q", [0]) * (ROW * len(offsets))
    for run in (FIRST, SECOND):
        gather.feed(run)
    return gather


@pytest.mark.parametrize("c", [True, False], ids=["C", "Python"])
def test_a_key_named_after_its_batch_went_by_has_the_row_a_walk_gives(c: bool) -> None:
    """A time index entry made in the second run names offset 9, whose batch (the last to
    raise the max timestamp, 300) was in the first: the row is the one a gather that knew the
    key before the walk finds."""
    with nullcontext() if c else pure_python():
        growing = IndexGather.growing()
        growing.want(array("q", [70]), array("q", [4]))
        growing.feed(FIRST)
        growing.want(array("q", [210, 280]), array("q", [9, 24]))
        growing.feed(SECOND)
        fixed = _fixed([70, 210, 280], [4, 9, 24])
    assert growing.complete
    assert list(growing.position_rows) == list(fixed.position_rows)
    assert list(growing.offset_rows) == list(fixed.offset_rows)


def _no_mapping(size: int) -> memoryview:
    raise OSError(12, "Cannot allocate memory")  # a strict overcommit policy


@pytest.mark.parametrize("kind", ["array", "mapping", "refused"])
@pytest.mark.parametrize("room", [(0, 0), (1, 1), (64, 64)], ids=["none", "short", "enough"])
def test_room_made_up_front_or_grown_holds_the_same_rows(
    monkeypatch: pytest.MonkeyPatch, kind: str, room: tuple[int, int]
) -> None:
    """Room for the keys made up front (a rebuild makes room for the most its index files can
    hold), too little and grown, in an array, an anonymous mapping or, where the mapping is
    refused, an array grown as keys come: the rows a gather that knew its keys before the walk
    finds, and the same once the gather went to another process (a --jobs worker's result is
    pickled)."""
    if kind != "array":
        monkeypatch.setattr(gather_module, "MAPPED_ROOM", 0)
    if kind == "refused":
        monkeypatch.setattr(gather_module, "_mapped_room", _no_mapping)
    growing = IndexGather.growing(*room)
    growing.want(array("q", [0, 70]), array("q", [4]))
    growing.feed(FIRST)
    growing.want(array("q", [210, 280]), array("q", [9, 19, 24]))
    growing.feed(SECOND)
    fixed = _fixed([0, 70, 210, 280], [4, 9, 19, 24])
    for gather in (growing, pickle.loads(pickle.dumps(growing))):
        assert gather.complete
        assert list(gather.position_rows) == list(fixed.position_rows)
        assert list(gather.offset_rows) == list(fixed.offset_rows)
        assert gather.offset_row(19) == fixed.offset_row(19) is not None
        assert gather.position_row(210) == fixed.position_row(210) is not None


@pytest.mark.parametrize("name", ["plain-0", "variety-0", "txn-0", "legacyv1-0"])
def test_verify_finds_the_same_with_rows_in_a_mapping(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Kafka-written partitions: verify's findings and summaries are the same whether the
    index checks' rows lie in arrays or in anonymous mappings, or in arrays where a mapping
    is refused."""
    want = verify_paths([str(ORACLE / name)], VerifyOptions())
    monkeypatch.setattr(gather_module, "MAPPED_ROOM", 0)
    assert verify_paths([str(ORACLE / name)], VerifyOptions()) == want
    monkeypatch.setattr(gather_module, "_mapped_room", _no_mapping)  # room for every key anyway
    assert verify_paths([str(ORACLE / name)], VerifyOptions()) == want


@pytest.mark.parametrize(
    ("positions", "offsets"),
    [
        ([], [12]),  # batch 10..14 went by, and it did not raise the max (200 < 300)
        ([], [3]),  # batch 0..4 raised the max, but a later one did since
        ([70], []),  # a position behind the walk
        ([], [9, 12]),  # two keys whose batches went by
    ],
)
def test_a_key_that_cannot_be_named_late_leaves_the_gather_incomplete(
    positions: list[int], offsets: list[int]
) -> None:
    growing = IndexGather.growing()
    growing.want(array("q", [0]), array("q", []))
    growing.feed(FIRST)
    growing.want(array("q", positions), array("q", offsets))
    assert not growing.complete


@SETTINGS
@given(segment=segment_logs(), interval=INTERVALS)
def test_on_random_logs_too(segment: tuple[int, bytes], interval: int) -> None:
    """Logs by an independent encoder, timestamps going back, gaps, compression: the same."""
    base, log = segment
    config = IndexConfig(interval)
    with tempfile.TemporaryDirectory() as tmp:
        partition = write_partition(Path(tmp), base, log)
        with RepairSession(WriteOptions(output_dir=Path(tmp) / "out", backup=False)) as session:
            for plan in plan_rebuild_index(resolve_targets([str(partition)]), config):
                staged = session.stage(plan, plan.changes)
                one_walk = recheck.recheck_staged(plan, staged, config)
                two_walks = recheck.recheck_staged(replace(plan, scan=None), staged, config)
                assert one_walk == two_walks
