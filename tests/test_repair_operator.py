"""An operator's repair night (issue 15): output never inside the data, recovery says what a
cut loses, salvage keeps the whole batches after the damage, and the broker's startup residue
is cleaned up."""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import FIXTURES, oracle_manifest
from repair_support import batch_positions, copy_partition, flip_byte, tree
from test_verify import options_from

from kdump.checks.findings import Finding, Severity
from kdump.checks.log import NO_REPAIR, RECOVERED
from kdump.checks.verify import verify_paths

CORRUPT = FIXTURES / "corrupt"


def _sha(data: str | None) -> str | None:
    return None if data is None else hashlib.sha256(base64.b64decode(data)).hexdigest()


@pytest.mark.parametrize("command", ["recover", "rebuild-index", "trim-index", "salvage"])
@pytest.mark.parametrize("where", ["partition", "inside-partition", "log-dir", "inside-log-dir"])
def test_output_dir_inside_the_data_is_refused(tmp_path: Path, command: str, where: str) -> None:
    partition = copy_partition("txn-0", tmp_path)
    log_dir = partition.parent
    out = {
        "partition": partition,
        "inside-partition": partition / "out",
        "log-dir": log_dir,
        "inside-log-dir": log_dir / "out",
    }[where]
    before = tree(log_dir)
    for named in (partition, log_dir):
        ran = run_kdump([command, "--output-dir", str(out), str(named)])
        assert ran.exit_code == 3, ran.stdout + ran.stderr
        assert ran.stderr.count("\n") == 1 and "choose one outside" in ran.stderr
        assert ran.stderr.startswith(f"kdump: {out}: output directory ")
        assert tree(log_dir) == before


def _flipped_txn(tmp_path: Path) -> tuple[Path, Path, int]:
    """txn-0 with one byte flipped in the payload of segment 0's fourth batch."""
    partition = copy_partition("txn-0", tmp_path)
    log = partition / "00000000000000000000.log"
    start, end = batch_positions(log)[3]
    flip_byte(log, (start + end) // 2)
    return partition, log, start


def test_one_flipped_byte_dry_run_says_what_is_lost_and_salvage_keeps_the_rest(
    tmp_path: Path,
) -> None:
    partition, log, cut = _flipped_txn(tmp_path)
    batches = oracle_manifest()["files"]["txn-0"][log.name]["batches"]
    damaged = next(i for i, b in enumerate(batches) if b["position"] == cut)
    lost = batches[damaged:]
    after = batches[damaged + 1 :]
    records = sum(b["count"] for b in lost)
    ran = run_kdump(["recover", "--dry-run", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert (
        f"cut at position {cut}: {log.stat().st_size - cut} bytes removed "
        f"({log.stat().st_size} -> {cut} bytes): removes {len(lost)} batches, {records} records, "
        f"offsets {lost[0]['baseOffset']}..{lost[-1]['lastOffset']}"
    ) in ran.stdout

    out = tmp_path / "salvaged"
    ran = run_kdump(["salvage", "--output-dir", str(out), str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    first = after[0]["baseOffset"]
    jsonl = out / partition.name / f"{first:020d}.jsonl"
    got = [json.loads(line) for line in jsonl.read_text().splitlines()]
    want = [(b, r) for b in after for r in b["records"]]
    assert len(got) == len(want) == sum(b["count"] for b in after)
    for g, (b, r) in zip(got, want, strict=True):
        assert g["offset"] == r["offset"] and g["timestamp"] == r["timestamp"]
        assert _sha(g["key"]) == r["keySha256"] and _sha(g["value"]) == r["valueSha256"]
        assert [h["key"] for h in g["headers"]] == r["headerKeys"]
        assert g["producer_id"] == b["producerId"] and g["sequence"] == r["sequence"]
        assert g["is_transactional"] == b["isTransactional"]
        assert g["is_control"] == b["isControl"]
        assert g["reproducible"] is not (b["isTransactional"] or b["isControl"])
    # the .log holds the salvaged batches byte for byte, and kdump reads it
    salvaged = out / partition.name / f"{first:020d}.log"
    data = log.read_bytes()
    start = after[0]["position"]
    assert salvaged.read_bytes() == data[start:]
    ran = run_kdump(["verify", str(salvaged)])
    assert ran.exit_code in (0, 1) and " 0 error(s)" in ran.stdout


def test_salvage_of_a_healthy_partition_writes_nothing(tmp_path: Path) -> None:
    partition = copy_partition("txn-0", tmp_path)
    ran = run_kdump(["salvage", "--output-dir", str(tmp_path / "o"), str(partition)])
    assert ran.exit_code == 0
    assert "nothing to salvage" in ran.stdout
    assert not (tmp_path / "o").exists()


# -- every fix: printed is a command that removes its finding ----------------------------------

CASES = json.loads((CORRUPT / "cases.json").read_text())


def _case_copy(name: str, root: Path) -> Path:
    """The case's files copied under ``root``; the path verify is given."""
    c = CASES[name]
    if (CORRUPT / name).exists():
        shutil.copytree(CORRUPT / name, root / name)
        return root / name / c["target"]
    source = (CORRUPT / name / c["target"]).resolve()  # a case verifying an oracle dir in place
    return Path(shutil.copytree(source, root / name / source.name))


def _verify(target: Path, name: str) -> list[Finding]:
    return verify_paths([str(target)], options_from(CASES[name]["options"])).findings


def _run_fix(fix: str) -> None:
    argv = shlex.split(fix)
    if argv[0] == "kdump":
        ran = run_kdump(argv[1:])
        assert ran.exit_code in (0, 2), f"{fix}: {ran.stdout}{ran.stderr}"
    else:
        assert argv[0] == "rm", fix  # the only other command a fix may be
        subprocess.run(argv, check=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_printed_fix_removes_its_finding(tmp_path: Path, name: str) -> None:
    target = _case_copy(name, tmp_path)
    before = _verify(target, name)
    for fix in sorted({f.fix for f in before if f.fix}):
        _run_fix(fix)
    after = {(f.code, f.path) for f in _verify(target, name)}
    for f in before:
        if f.fix:
            assert (f.code, f.path) not in after, f"{f.code} {f.path}: [fix: {f.fix}] left it"
        elif f.severity is Severity.ERROR and f.code in RECOVERED | NO_REPAIR.keys():
            # no fix: the finding says what happens and what to do instead
            if f.code == "LOG_OFFSET_BELOW_BASE":
                assert "no rename helps" in f.message and "move this segment" in f.message
            else:
                assert f.message.endswith(NO_REPAIR[f.code]), f


@pytest.mark.parametrize("name", sorted(n for n in CASES if (CORRUPT / n).exists()))
def test_verify_is_clean_after_recover_on_every_fixture_it_repairs(
    tmp_path: Path, name: str
) -> None:
    target = _case_copy(name, tmp_path)
    before = {(f.code, f.path): f for f in _verify(target, name)}
    ran = run_kdump(["recover", str(target)])
    assert ran.exit_code in (0, 2), ran.stdout + ran.stderr
    after = [f for f in _verify(target, name) if f.severity is not Severity.INFO]
    for f in after:
        # what is left was there before, and is nothing recover (or any fix) claims to repair
        was = before.get((f.code, f.path))
        assert was is not None, f"recover made {f.code} {f.path}: {f.message}"
        assert was.fix is None or was.fix.startswith("rm "), f"recover left {f.code} {f.path}"
