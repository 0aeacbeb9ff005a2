"""The batch filter of `kdump dump`/`kdump --files` (and `kdump txn`): --producer-id,
--producer-epoch, --leader-epoch, --offset-range, --time-range, decided on batch headers so a
batch left out is never decoded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batchbytes import v2_batch
from clirun import run_kdump
from txnlog import PartitionWriter

from kdump.format.filters import BatchFilter, Range, parse_range
from kdump.storage.local import open_log_file
from kdump.units import parse_timestamp

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """offset 0: producer 5 epoch 1, leader epoch 3, T0; 1..2: producer 6 epoch 0, leader
    epoch 3, T0+1s; 3: no producer, leader epoch 0, T0, records that do not decode; 4: producer
    5 epoch 2, leader epoch 4, T0+5s."""
    w = PartitionWriter(tmp_path_factory.mktemp("filters") / "f-0")
    w.data(1, T0, 5, 1, 0, False, 3)
    w.data(2, T0 + 1000, 6, 0, 0, True, 3)
    w.raw(v2_batch(3, b"\x07" * 20, records_count=1, timestamp=T0), 1)
    w.data(1, T0 + 5000, 5, 2, 0, False, 4)
    return w.write() / f"{0:020d}.log"


def base_offsets(out: str) -> list[int]:
    return [int(line.split()[1]) for line in out.splitlines() if line.startswith("baseOffset:")]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], [0, 1, 3, 4]),
        (["--producer-id", "5"], [0, 4]),
        (["--producer-id", "5", "--producer-epoch", "2"], [4]),
        (["--leader-epoch", "3"], [0, 1]),
        (["--offset-range", "2:3"], [1, 3]),  # 1..2 overlaps 2:3
        (["--offset-range", ":0"], [0]),
        (["--offset-range", "4:"], [4]),
        (["--time-range", f"{T0 + 1}:{T0 + 5000}"], [1, 4]),
        (["--time-range", "2023-11-14T22:13:21Z:2023-11-14T22:13:25Z"], [1, 4]),
        (["--time-range", "2023-11-14T22:13:20+00:00:"], [0, 1, 3, 4]),
    ],
)
def test_dump_shows_only_the_batches_the_filter_keeps(
    log: Path, options: list[str], expected: list[int]
) -> None:
    ran = run_kdump(["dump", *options, str(log)])
    assert base_offsets(ran.stdout) == expected
    files = run_kdump(["--files", str(log), *options])
    assert base_offsets(files.stdout) == expected


def test_a_batch_left_out_is_not_decoded(log: Path) -> None:
    """Batch 3's records do not decode: a deep dump fails there, unless the filter drops it."""
    whole = run_kdump(["dump", "--deep-iteration", str(log)])
    assert whole.exit_code != 0 and "runs past the batch" in whole.stderr
    kept = run_kdump(["dump", "--deep-iteration", "--producer-id", "5", str(log)])
    assert (kept.exit_code, kept.stderr) == (0, "")
    offsets = [line.split()[2] for line in kept.stdout.splitlines() if line.startswith("| offset")]
    assert offsets == ["0", "4"]
    jsonl = run_kdump(
        ["dump", "--format", "jsonl", "--print-data-log", "--offset-range", ":2", str(log)]
    )
    assert (jsonl.exit_code, jsonl.stderr) == (0, "")
    objects = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [o["base_offset"] for o in objects if o["type"] == "batch"] == [0, 1]
    assert [o["offset"] for o in objects if o["type"] == "record"] == [0, 1, 2]


def test_gaps_a_filter_makes_are_not_offsets_out_of_order(log: Path) -> None:
    ran = run_kdump(["dump", "--deep-iteration", "--producer-id", "5", str(log)])
    assert "Non-consecutive" not in ran.stdout + ran.stderr


def test_select_and_apply_on_a_run(log: Path) -> None:
    (run,) = list(open_log_file(log).walk())
    flt = BatchFilter(producer_id=6)
    assert flt.select(run) == [1] and [flt.matches(run, i) for i in range(run.n)] == [
        False,
        True,
        False,
        False,
    ]
    kept = flt.apply(run)
    assert (kept.n, list(kept.base_offset), list(kept.position)) == (1, [1], [run.position[1]])
    assert BatchFilter().apply(run) is run


def test_ranges() -> None:
    assert parse_range("5:10") == Range(5, 10)
    assert parse_range(":10") == Range(None, 10)
    assert parse_range("2023-11-14T22:13:20Z:", parse_timestamp) == Range(T0, None)
    assert parse_range("2023-11-14T23:13:20+01:00:1700000001000", parse_timestamp) == Range(
        T0, T0 + 1000
    )
    for bad in ("5", ":", "10:5", "x:y"):
        with pytest.raises(ValueError):
            parse_range(bad)
    ran = run_kdump(["dump", "--time-range", "yesterday:", "x.log"])
    assert ran.exit_code == 3 and "--time-range" in ran.stderr
