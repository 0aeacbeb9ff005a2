"""Issue 44 point 1: verify's ``records`` without --deep. A v2 batch's header says how many
records it holds (recordsCount): verify counts them from there; a plain v0/v1 message is one
record; a compressed v0/v1 wrapper's inner messages only decompressing counts, so without
--deep they are left out, the count is shown as a lower bound (``14+``) and JSON says how many
wrappers were not counted. The expected counts are the independent encoder's
(fixtures/generated/expected.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_kdump

from kdump import speedups

GENERATED = Path(__file__).resolve().parent.parent / "fixtures" / "generated"
EXPECTED = json.loads((GENERATED / "expected.json").read_text())["logs"]


def _written(fixture: str) -> tuple[int, int]:
    """Records the encoder wrote into ``fixture``'s whole batches, and its compressed v0/v1
    wrappers."""
    records = wrappers = 0
    for name, log in EXPECTED.items():
        if name.split("/")[0] != fixture:
            continue
        for batch in log["batches"]:
            records += len(batch["records"])
            wrappers += batch["magic"] < 2 and batch["compression"] != "none"
    return records, wrappers


def _summary(*args: str) -> dict[str, object]:
    ran = run_kdump(["verify", "--format", "json", *args])
    assert ran.exit_code in (0, 2), ran.stderr
    (partition,) = json.loads(ran.stdout)["summary"]["by_partition"]
    assert isinstance(partition, dict)
    return partition


@pytest.mark.parametrize("fixture", ["snappy-0", "zstd-0", "gzip-lz4-mixed-0", "big-0"])
@pytest.mark.parametrize("c_code", [True, False], ids=["c", "python"])
def test_v2_records_are_counted_from_the_headers(fixture: str, c_code: bool) -> None:
    records, wrappers = _written(fixture)
    assert wrappers == 0
    path = str(GENERATED / fixture)
    if c_code:
        shallow = _summary(path)
    else:
        with speedups.pure_python():
            shallow = _summary(path)
    assert shallow["records"] == records
    assert shallow["wrappers_not_counted"] == 0
    assert _summary("--deep", path)["records"] == records


@pytest.mark.parametrize("fixture", ["v0-0", "v1-0"])
def test_compressed_legacy_wrappers_are_counted_only_with_deep(fixture: str) -> None:
    records, wrappers = _written(fixture)
    assert wrappers > 0, "the fixture holds compressed wrappers"
    path = str(GENERATED / fixture)
    shallow, deep = _summary(path), _summary("--deep", path)
    assert deep["records"] == records and deep["wrappers_not_counted"] == 0
    assert shallow["wrappers_not_counted"] == wrappers
    assert isinstance(shallow["records"], int) and shallow["records"] < records

    text = run_kdump(["verify", path]).stdout
    row = next(line for line in text.splitlines() if line.startswith(f" {fixture} "))
    cells = [cell.strip() for cell in row.split("|")]
    assert f"{shallow['records']}+" in cells  # a lower bound, said as one
    deep_row = next(
        line
        for line in run_kdump(["verify", "--deep", path]).stdout.splitlines()
        if line.startswith(f" {fixture} ")
    )
    assert str(records) in [cell.strip() for cell in deep_row.split("|")]


def test_the_table_has_no_dash_for_records_without_deep() -> None:
    text = run_kdump(["verify", str(GENERATED / "big-0")]).stdout
    header, _, row = text.splitlines()[1:4]
    columns = [c.strip() for c in header.split("|")]
    cells = [c.strip() for c in row.split("|")]
    assert cells[columns.index("records")] == str(_written("big-0")[0])
