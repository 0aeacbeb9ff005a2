"""An operator's repair night (issue 15): output never inside the data, recovery says what a
cut loses, salvage keeps the whole batches after the damage, and the broker's startup residue
is cleaned up."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import CORRUPT, ORACLE, oracle_manifest
from jsonreader import raw
from repair_support import batch_positions, copy_partition, flip_byte, tree
from test_verify import options_from

from kdump.checks.findings import Finding, Severity
from kdump.checks.log import NO_REPAIR, RECOVERED
from kdump.checks.verify import verify_paths


def _sha(data: str | None, encoding: str | None) -> str | None:
    """The sha256 of a key's or value's bytes, read back with the documented reader
    (docs/json.md)."""
    raw_bytes = raw(data, encoding)
    return None if raw_bytes is None else hashlib.sha256(raw_bytes).hexdigest()


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("recover", "--output-dir"),
        ("rebuild-index", "--output-dir"),
        ("trim-index", "--output-dir"),
        ("salvage", "--output-dir"),
        # issue 28.9: --backup-dir there was accepted, kdump's backups among the broker's files
        ("recover", "--backup-dir"),
        ("rebuild-index", "--backup-dir"),
        ("trim-index", "--backup-dir"),
    ],
)
@pytest.mark.parametrize("where", ["partition", "inside-partition", "log-dir", "inside-log-dir"])
def test_output_dir_inside_the_data_is_refused(
    tmp_path: Path, command: str, option: str, where: str
) -> None:
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
        ran = run_kdump([command, option, str(out), str(named)])
        assert ran.exit_code == 3, ran.stdout + ran.stderr
        assert ran.stderr.count("\n") == 1 and "choose one outside" in ran.stderr
        kind = option.strip("-").replace("-dir", " directory")
        assert ran.stderr.startswith(f"kdump: {out}: {kind} ")
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
        assert _sha(g["key"], g["key_encoding"]) == r["keySha256"]
        assert _sha(g["value"], g["value_encoding"]) == r["valueSha256"]
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


@pytest.mark.parametrize("limit", [None, 1000])
def test_salvage_output_past_its_bound_is_one_line_and_nothing_written(
    tmp_path: Path, limit: int | None
) -> None:
    """salvage's JSON Lines are bounded (issue 27: a 22 KB bomb wrote 3.9 GB): past
    --max-output-bytes, or the default (100x the salvaged batches, at least 64 MiB, here made
    small), one line names the file and the batch, exit 3, and nothing is written."""
    from kdump.repair import salvage

    partition, log, _ = _flipped_txn(tmp_path)
    out = tmp_path / "salvaged"
    options = [] if limit is None else ["--max-output-bytes", str(limit)]
    mp = pytest.MonkeyPatch()
    mp.setattr(salvage, "OUTPUT_FLOOR", 1000)
    mp.setattr(salvage, "OUTPUT_RATIO", 0)
    try:
        ran = run_kdump(["salvage", "--output-dir", str(out), *options, str(partition)])
    finally:
        mp.undo()
    assert ran.exit_code == 3, ran.stdout + ran.stderr
    assert ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith(f"kdump: {log}:") and "would pass 1000 bytes" in ran.stderr
    assert "--max-output-bytes" in ran.stderr
    assert not any(p.is_file() for p in out.rglob("*"))


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


# -- after a cut: what the broker's next start does ---------------------------------------------


def _torn_txn(tmp_path: Path) -> tuple[Path, int]:
    """txn-0 in a log dir with checkpoints (recovery point 218, log start 63), its last
    segment's last batch torn: the log end offset after recovery, that batch's base offset."""
    partition = copy_partition("txn-0", tmp_path)
    log_dir = partition.parent
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\ntxn 0 218\n")
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\ntxn 0 63\n")
    log = partition / "00000000000000000186.log"
    start, _ = batch_positions(log)[-1]
    log.write_bytes(log.read_bytes()[: start + 30])
    last = oracle_manifest()["files"]["txn-0"][log.name]["batches"][-1]
    assert last["position"] == start
    return partition, last["baseOffset"]


def test_recover_does_what_the_broker_does_at_its_next_start(tmp_path: Path) -> None:
    partition, end = _torn_txn(tmp_path)
    log_dir = partition.parent
    ran = run_kdump(["recover", "--dry-run", str(log_dir)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    snapshot_line = (
        f"delete    {partition / '00000000000000000218.snapshot'}: above the log end offset "
        f"{end}: ProducerStateManager.truncateAndReload deletes it at startup"
    )
    assert snapshot_line in ran.stdout.splitlines()
    assert (
        f"delete    {partition / '00000000000000000063.snapshot'}: at or below the log start "
        "offset 63"
    ) in ran.stdout
    assert (
        f"replace   {log_dir / 'recovery-point-offset-checkpoint'}: recovery point clamped to "
        f"the log end offset: txn-0 218 -> {end}"
    ) in ran.stdout.splitlines()
    # every line of the dry run is a change, a finding or the summary
    assert not [line for line in ran.stdout.splitlines() if line.startswith("unchanged")]

    ran = run_kdump(["recover", str(log_dir)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == f"0\n1\ntxn 0 {end}\n"
    assert not (partition / "00000000000000000218.snapshot").exists()
    assert not (partition / "00000000000000000063.snapshot").exists()
    kept = (partition / "00000000000000000218.snapshot.kdump-bak").read_bytes()
    assert kept == (ORACLE / "txn-0" / "00000000000000000218.snapshot").read_bytes()
    assert (log_dir / "recovery-point-offset-checkpoint.kdump-bak").read_text() == (
        "0\n1\ntxn 0 218\n"
    )
    assert not [p for p in log_dir.rglob("*kdump-tmp*")]
    ran = run_kdump(["verify", str(log_dir)])
    assert ran.exit_code == 0, ran.stdout
    assert "0 error(s), 0 warning(s)" in ran.stdout


def test_verify_names_what_the_broker_fixes_at_startup(tmp_path: Path) -> None:
    partition, end = _torn_txn(tmp_path)
    log = partition / "00000000000000000186.log"
    torn = oracle_manifest()["files"]["txn-0"][log.name]["batches"][-1]["position"]
    log.write_bytes(log.read_bytes()[:torn])  # cut as an older recover left it
    findings = verify_paths([str(partition.parent)], options_from([])).findings
    snapshot = next(f for f in findings if f.code == "SNAPSHOT_BEYOND_LOG_END")
    assert snapshot.message == (
        f"producer snapshot at offset 218, beyond the log end offset {end}; the broker fixes "
        "this at startup (it deletes the snapshot)"
    )
    assert snapshot.fix == f"kdump recover {partition}"
    point = next(f for f in findings if f.code == "CHECKPOINT_BEYOND_LOG_END")
    assert point.message == (
        f"txn-0: recovery-point-offset-checkpoint says 218, beyond the log end offset {end}; "
        "the broker fixes this at startup (it clamps the recovery point to the log end offset)"
    )
    assert point.fix == f"kdump recover {partition.parent}"
    assert not [f for f in findings if "ends at" in f.message]


def test_recover_refuses_while_the_log_dir_lock_is_held(tmp_path: Path) -> None:
    partition, _ = _torn_txn(tmp_path)
    log_dir = partition.parent
    before = tree(log_dir)
    (log_dir / ".lock").write_bytes(b"")
    with open(log_dir / ".lock", "rb+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        ran = run_kdump(["recover", str(log_dir)])
    assert ran.exit_code == 3 and "locked by" in ran.stderr
    assert tree(log_dir) == before | {".lock": b""}


# -- repair only what is damaged ----------------------------------------------------------------


def test_recover_touches_only_what_verify_flags(tmp_path: Path) -> None:
    damaged, _, _ = _flipped_txn(tmp_path)
    healthy = Path(shutil.copytree(ORACLE / "plain-0", damaged.parent / "plain-0"))
    before = tree(healthy)
    ran = run_kdump(["recover", "--dry-run", str(damaged.parent)])
    assert ran.exit_code == 0
    changed = [line.split()[1] for line in ran.stdout.splitlines()[:-1] if ":" in line]
    assert changed and all(str(damaged / "00000000000000000000.") in p for p in changed[:4])
    assert str(healthy) not in ran.stdout
    replace = next(line for line in ran.stdout.splitlines() if line.startswith("replace"))
    assert "first difference at entry 0: (offset 16, position 1258) -> none" in replace
    assert run_kdump(["recover", str(damaged.parent)]).exit_code == 0
    assert tree(healthy) == before

    # the broker's own rule: without .kafka_cleanshutdown every segment from the recovery point
    ran = run_kdump(["recover", "--dry-run", "--as-broker", "--index-interval-bytes", "100",
                     str(healthy)])  # fmt: skip
    assert ran.stdout.count("replace ") == 2 * 6  # plain-0's 6 segments: .index and .timeindex
    (healthy.parent / "recovery-point-offset-checkpoint").write_text("0\n1\nplain 0 1011\n")
    ran = run_kdump(["recover", "--dry-run", "--as-broker", "--index-interval-bytes", "100",
                     str(healthy)])  # fmt: skip
    assert ran.stdout.count("replace ") == 2 * 2  # segments 1011 and 1256
    (healthy.parent / ".kafka_cleanshutdown").write_text("")
    (healthy / "00000000000000000515.index").unlink()
    ran = run_kdump(["recover", "--dry-run", "--as-broker", str(healthy)])
    # the offset index the broker rebuilds; the time index it would rebuild is the same bytes
    actions = [line.split()[:2] for line in ran.stdout.splitlines()[:-1] if line[:4] != "note"]
    assert actions == [["create", str(healthy / "00000000000000000515.index:")]]


# -- a segment named above its batches' offsets -------------------------------------------------


def test_recover_renames_a_segment_named_above_its_batches(tmp_path: Path) -> None:
    partition = copy_partition("txn-0", tmp_path)
    for f in partition.glob("00000000000000000126.*"):
        if f.suffix != ".snapshot":  # named by the offset of the state it holds: left alone
            f.rename(partition / f.name.replace("126", "180"))
    snapshot = (partition / "00000000000000000126.snapshot").read_bytes()
    findings = verify_paths([str(partition)], options_from([])).findings
    below = [f for f in findings if f.code == "LOG_OFFSET_BELOW_BASE"]
    assert below and all(f.fix == f"kdump recover {partition}" for f in below)
    assert "LogSegmentOffsetOverflowException" in below[0].message
    assert "hasOverflow()" in below[0].message
    assert below[0].message.endswith(
        "kdump recover renames its files to 126 and rebuilds its indexes"
    )
    ran = run_kdump(["recover", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    name = "00000000000000000126.log"
    assert (partition / name).read_bytes() == (ORACLE / "txn-0" / name).read_bytes()
    assert (partition / "00000000000000000126.snapshot").read_bytes() == snapshot
    assert not [p for p in partition.glob("00000000000000000180.*") if "kdump-bak" not in p.name]
    assert run_kdump(["verify", str(partition)]).exit_code == 0


def test_a_rename_that_would_overlap_says_what_to_do_instead(tmp_path: Path) -> None:
    target = _case_copy("log-offset-below-base", tmp_path)
    before = tree(target)
    below = [
        f for f in _verify(target, "log-offset-below-base") if f.code == "LOG_OFFSET_BELOW_BASE"
    ]
    assert below and all(f.fix is None for f in below)
    assert "no rename helps: offsets 60..62 also lie in segment 0" in below[0].message
    ran = run_kdump(["recover", str(target)])
    assert ran.exit_code == 2
    assert tree(target) == before


def test_salvage_of_the_bytes_recover_cut_and_kept(tmp_path: Path) -> None:
    """After recover, the kept NAME.log.kdump-cut-N salvages to the same records and batches."""
    partition, log, cut = _flipped_txn(tmp_path)
    before = tmp_path / "before"
    assert run_kdump(["salvage", "--output-dir", str(before), str(partition)]).exit_code == 0
    assert run_kdump(["recover", str(partition)]).exit_code == 0
    kept = partition / f"{log.name}.kdump-cut-{cut}"
    after = tmp_path / "after"
    ran = run_kdump(["salvage", "--output-dir", str(after), str(kept)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert tree(after) == tree(before) and tree(after)


def test_salvage_after_recover_reads_what_recover_kept(tmp_path: Path) -> None:
    """Issue 28.3: salvage of a partition after recover said "nothing to salvage", though
    recover had printed what salvage keeps. It reads the cut bytes and the later segments
    recover deleted (both kept in the partition), names them, and gets back every whole
    record the dry run counted."""
    partition, log, cut = _flipped_txn(tmp_path)
    files = oracle_manifest()["files"]["txn-0"]
    later = sorted(n for n in files if n.endswith(".log") and n != log.name)
    dry = run_kdump(["recover", "--dry-run", str(partition)]).stdout
    promised = [
        int(n) for n in re.findall(r"kdump salvage keeps \d+ whole one\(s\), (\d+) records", dry)
    ]
    assert len(promised) == 1 + len(later)  # the cut, and each deleted segment's .log
    assert run_kdump(["recover", str(partition)]).exit_code == 0
    out = tmp_path / "salvaged"
    ran = run_kdump(["salvage", "--output-dir", str(out), str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert "nothing to salvage" not in ran.stdout
    kept_cut = f"{partition}/{log.name}.kdump-cut-{cut}"
    assert f"{kept_cut}: the bytes kdump recover cut from {log.name} at position {cut}: " in (
        ran.stdout
    )
    for name in later:
        assert (
            f"{partition}/{name}.kdump-bak: segment {name}, which kdump recover deleted"
            in ran.stdout
        )
    records = [
        json.loads(line)
        for p in sorted((out / partition.name).glob("*.jsonl"))
        for line in p.read_text().splitlines()
    ]
    assert len(records) == sum(promised)
    offsets = [r["offset"] for r in records]
    assert (
        offsets == sorted(offsets) and offsets[-1] == files[later[-1]]["batches"][-1]["lastOffset"]
    )
    # the records of every deleted segment, as Kafka wrote them
    for name in later:
        want = [r["offset"] for b in files[name]["batches"] for r in b["records"]]
        assert set(want) <= set(offsets)


def _records(out: Path) -> list[int]:
    """The offsets of every record salvage wrote under ``out``, in order."""
    return sorted(
        json.loads(line)["offset"]
        for p in out.rglob("*.jsonl")
        for line in p.read_text().splitlines()
    )


def test_salvage_before_recover_names_what_it_cannot_yet_see(tmp_path: Path) -> None:
    """Issue 44.9: salvage run first sees only the damaged segments; the whole ones after the
    damage, which recovery deletes (489 records in the user's trial), were lost to an operator
    who then ran recover and stopped. Salvage names them and the two commands that get them;
    followed, they give every record the dry run promised."""
    partition, log, _ = _flipped_txn(tmp_path)
    later = sorted(p.name for p in partition.glob("*.log") if p.name > log.name)
    assert later
    first = tmp_path / "first"
    ran = run_kdump(["salvage", "--output-dir", str(first), str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    bases = ", ".join(str(int(n[:20])) for n in later)
    lines = ran.stdout.splitlines()
    said = next(i for i, line in enumerate(lines) if "not read yet" in line)
    assert lines[said].startswith(f"{partition}: not read yet: {len(later)} later segment(s) ")
    assert f"({bases}; offsets {int(later[0][:20])}.." in lines[said]
    assert lines[said + 1 : said + 3] == [
        f"  kdump recover {partition}",
        f"  kdump salvage {partition} --output-dir {first}",
    ]
    dry = run_kdump(["recover", "--dry-run", str(partition)]).stdout
    promised = re.findall(r"kdump salvage keeps \d+ whole one\(s\), (\d+) records", dry)
    assert run_kdump(lines[said + 1].split()[1:]).exit_code == 0
    again = run_kdump(lines[said + 2].split()[1:])
    assert again.exit_code == 0 and "not read yet" not in again.stdout
    assert len(_records(first)) == sum(map(int, promised))


def test_recover_with_a_backup_dir_names_it_and_salvage_reads_it(tmp_path: Path) -> None:
    """Issue 44.9: after `recover --backup-dir B` the runbook's step 6 found nothing and
    pointed nowhere, and `salvage B/orders-3` said it held no partition. Recover names the
    salvage of what it kept; salvage reads B/<partition> and B as it reads the partition."""
    reference, _, _ = _flipped_txn(tmp_path / "reference")
    assert run_kdump(["recover", str(reference)]).exit_code == 0
    in_place = tmp_path / "in-place"
    assert run_kdump(["salvage", "--output-dir", str(in_place), str(reference)]).exit_code == 0
    partition, _, _ = _flipped_txn(tmp_path / "elsewhere")
    backups = tmp_path / "B"
    ran = run_kdump(["recover", "--backup-dir", str(backups), str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    kept = backups / partition.name
    said = lines.index(
        f"salvage   {kept}: holds the records recover cut or deleted; where this was the only "
        "replica, write them out (JSON Lines, to produce them again):"
    )
    assert lines[said + 1] == f"  kdump salvage {kept} --output-dir DIR"
    for named in (kept, backups):
        out = tmp_path / f"out-{named.name}"
        salvaged = run_kdump(["salvage", str(named), "--output-dir", str(out)])
        assert salvaged.exit_code == 0, salvaged.stdout + salvaged.stderr
        assert tree(out) == tree(in_place) and tree(out)


def test_verify_after_recover_names_what_it_kept_and_what_the_checkpoint_means(
    tmp_path: Path,
) -> None:
    """Issue 28.7: after a cut, CHECKPOINT_BEYOND_LOG_END on replication-offset-checkpoint had
    no advice; the files recover kept were not mentioned. Now: what the broker does, and how
    many records salvage gets back; each kept file an info with the salvage command."""
    partition, log, cut = _flipped_txn(tmp_path)
    log_dir = partition.parent
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\ntxn 0 218\n")
    assert run_kdump(["recover", str(partition)]).exit_code == 0
    result = verify_paths([str(log_dir)], options_from([]))
    beyond = [f for f in result.findings if f.code == "CHECKPOINT_BEYOND_LOG_END"]
    salvaged = run_kdump(["salvage", "--output-dir", str(tmp_path / "out"), str(partition)])
    records = sum(
        len(p.read_text().splitlines()) for p in (tmp_path / "out" / "txn-0").glob("*.jsonl")
    )
    assert salvaged.exit_code == 0 and records
    assert [(f.severity, f.offset) for f in beyond] == [(Severity.WARNING, 218)]
    message = beyond[0].message
    assert "the broker lowers its high watermark to the log end offset" in message
    assert "a follower fetches them again from the leader" in message
    assert f"kdump recover kept {records} whole record(s) of them: kdump salvage" in message
    kept_findings = [f for f in result.findings if f.code == "PARTITION_KDUMP_KEPT"]
    kept = sorted(Path(f.path).name for f in kept_findings)
    logs = sorted(p.name for p in partition.iterdir() if ".log.kdump-" in p.name)
    assert kept[: len(logs)] == logs and f"{log.name}.kdump-cut-{cut}" in kept
    # issue 44.9: it named 5 of 23 kept files; every one is named, once
    every = sorted(p.name for p in partition.iterdir() if ".kdump-" in p.name)
    said = " ".join(f"{Path(f.path).name}: {f.message}" for f in kept_findings)
    assert len(every) > len(logs) and all(said.count(name) == 1 for name in every), said
    assert all(f.severity is not Severity.ERROR for f in result.findings)


def test_verify_names_a_killed_kdumps_temporary_file_and_its_fix_removes_it(
    tmp_path: Path,
) -> None:
    """Issue 28.2: a run killed with SIGKILL leaves .NAME.kdump-tmp-PID files; verify says so,
    with the command that removes them (a repair of the partition, even with nothing else to
    do). A kdump still running keeps its own."""
    partition = copy_partition("txn-0", tmp_path)
    left = partition / ".00000000000000000000.index.kdump-tmp-999999999-0123456789ab"  # no pid
    left.write_bytes(b"half")
    running = f".00000000000000000000.index.kdump-tmp-{os.getppid()}-0123456789ab"
    mine = partition / running  # a process that runs: a kdump at work, as far as names tell
    mine.write_bytes(b"at work")
    result = verify_paths([str(partition)], options_from([]))
    found = [f for f in result.findings if f.code == "PARTITION_KDUMP_LEFTOVER"]
    assert [(Path(f.path).name, f.severity) for f in found] == [(left.name, Severity.WARNING)]
    assert found[0].fix is not None
    mine.unlink()  # that process is no kdump: its file goes before the fix runs
    _run_fix(found[0].fix)
    assert not left.exists()
    again = verify_paths([str(partition)], options_from([]))
    assert [f.code for f in again.findings if f.severity is not Severity.INFO] == []


def _gap_partition(root: Path, name: str) -> Path:
    """txn-0 without segment 63 (offsets 63..125), in a directory named ``name``."""
    partition = copy_partition("txn-0", root)
    for p in partition.glob("00000000000000000063.*"):
        p.unlink()
    return partition.rename(root / name)


@pytest.mark.parametrize(
    ("name", "kept", "severity", "says"),
    [
        ("txn-0", False, Severity.WARNING, "records are missing, unless the topic is compacted"),
        ("__consumer_offsets-0", False, Severity.INFO, "normal on a compacted topic"),
        ("txn-0", True, Severity.WARNING, "kdump recover cut them from 00000000000000000000.log"),
    ],
)
def test_an_offset_gap_says_what_explains_it(
    tmp_path: Path, name: str, kept: bool, severity: Severity, says: str
) -> None:
    """Issue 28.7: every gap was "normal after compaction or deletion", a segment lost from a
    delete-policy topic too, and the records an (earlier) kdump recover cut off."""
    partition = _gap_partition(tmp_path, name)
    if kept:  # what a recover that kept the later segments left: the cut bytes beside
        log = partition / "00000000000000000000.log"
        data = log.read_bytes()
        start = batch_positions(log)[-1][0]
        log.write_bytes(data[:start])
        (partition / f"{log.name}.kdump-cut-{start}").write_bytes(data[start:])
    result = verify_paths([str(partition)], options_from([]))
    (gap,) = [f for f in result.findings if f.code == "PARTITION_OFFSET_GAP"]
    assert gap.severity is severity and says in gap.message, gap.message
    if kept:
        assert f"(kept in {partition}/00000000000000000000.log.kdump-cut-" in gap.message


def _interrupted(root: Path, swap_is_valid: bool) -> tuple[Path, bytes]:
    """plain-0 as a crash leaves it mid-delete, mid-compaction or mid-swap: with a valid swap,
    segments 515 and 761 compacted (nothing removed) into 515.log.swap; otherwise segment 0's
    files renamed .deleted, a .cleaned output and a .swap above it (a split cut short)."""
    partition = copy_partition("plain-0", root)
    first, second = (partition / f"{b:020d}.log" for b in (515, 761))
    swap = first.read_bytes() + (second.read_bytes() if swap_is_valid else b"")
    (partition / f"{first.name}.swap").write_bytes(swap)
    if not swap_is_valid:
        for p in partition.glob("00000000000000000000.*"):
            p.rename(p.with_name(p.name + ".deleted"))
        (partition / "00000000000000000258.log.cleaned").write_bytes(
            (partition / "00000000000000000258.log").read_bytes()
        )
    return partition, swap


def test_a_cleaned_file_without_its_segment_is_a_warning(tmp_path: Path) -> None:
    """Issue 44.10: a .cleaned file beside the segment it was cleaned from is what a broker
    stopped mid-cleaning leaves (info); one whose segment is gone is not (a warning, with
    kdump recover's fix)."""
    partition = tmp_path / "txn-0"
    shutil.copytree(ORACLE / "txn-0", partition)
    orphan = partition / "00000000000000000007.log.cleaned"
    orphan.write_bytes((partition / "00000000000000000000.log").read_bytes())
    result = verify_paths([str(partition)], options_from([]))
    (found,) = [f for f in result.findings if f.code == "PARTITION_LEFTOVER_FILE"]
    assert (found.path, found.severity) == (str(orphan), Severity.WARNING)
    assert found.fix == f"kdump recover {partition}"


@pytest.mark.parametrize("swap_is_valid", [False, True], ids=["delete-clean-split", "swap"])
def test_recover_settles_leftovers_as_the_broker_does(tmp_path: Path, swap_is_valid: bool) -> None:
    """Issue 28.8: leftover .deleted/.cleaned/.swap files made the report say "nothing to
    rebuild" and recover "0 file(s) would change". verify says what LogLoader does with each;
    recover does it (every deleted file kept), so verify is clean afterwards."""
    partition, swap = _interrupted(tmp_path, swap_is_valid)
    result = verify_paths([str(partition)], options_from([]))
    left = {Path(f.path).name: f for f in result.findings if f.code == "PARTITION_LEFTOVER_FILE"}
    if swap_is_valid:
        swap_name = "00000000000000000515.log.swap"
        assert "the broker completes the swap at startup: renamed to 00000000000000000515.log" in (
            left.pop(swap_name).message
        )
        replaced = sorted(
            p.name for p in partition.glob("00000000000000000[57]*") if p.name != swap_name
        )
        assert sorted(left) == replaced
        assert all(
            "a segment the swap of offsets 515..1010 replaces" in f.message for f in left.values()
        )
    else:
        deleted = left["00000000000000000000.log.deleted"]
        assert deleted.message.endswith("deleted file.delete.delay.ms (60 s) later")
        # the broker's own (issue 44.10): nothing to fix
        assert (deleted.severity, deleted.fix) == (Severity.INFO, None)
        cleaned = left["00000000000000000258.log.cleaned"]
        assert "a compaction's output that was never swapped in" in cleaned.message
        # beside the segment it was cleaned from: a cleaning a stop cut short (issue 44.10)
        assert (cleaned.severity, cleaned.fix) == (Severity.INFO, None)
        assert (
            "part of a segment split that did not finish"
            in left["00000000000000000515.log.swap"].message
        )
    assert all(
        f.fix == f"kdump recover {partition}"
        for f in left.values()
        if f.severity is not Severity.INFO
    )
    before = tree(partition)
    dry = run_kdump(["recover", "--dry-run", str(partition)])
    assert tree(partition) == before
    for name in left:
        assert f"delete    {partition}/{name}: the broker deletes it at startup" in dry.stdout
    if swap_is_valid:
        assert (
            f"rename    {partition}/00000000000000000515.log.swap: to 00000000000000000515.log"
            in dry.stdout
        )
    ran = run_kdump(["recover", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    for name in left:  # each deleted file kept
        assert (partition / f"{name}.kdump-bak").read_bytes() == before[name]
    assert not [
        p for p in partition.iterdir() if p.name.endswith((".deleted", ".cleaned", ".swap"))
    ]
    if swap_is_valid:
        assert (partition / "00000000000000000515.log").read_bytes() == swap
        assert (partition / "00000000000000000515.index").exists()  # rebuilt after the rename
    again = verify_paths([str(partition)], options_from([]))
    # nothing but what recover kept, every file named (issue 44.9)
    assert [(f.code, f.severity) for f in again.findings] == [
        ("PARTITION_KDUMP_KEPT", Severity.INFO)
    ]
    assert all(f"{name}.kdump-bak" in again.findings[0].message for name in left)


_ACTIONS = ("replace ", "create ", "truncate ", "delete ", "rename ")


@pytest.mark.parametrize("swap_is_valid", [False, True], ids=["delete-clean-split", "swap"])
def test_the_dry_run_prints_exactly_what_the_run_does(tmp_path: Path, swap_is_valid: bool) -> None:
    """Issue 44.9: `recover --dry-run` listed 25 files where the run wrote 28: a completed swap
    leaves a segment without indexes, which the run then rebuilt and the dry run, planned on
    the segments as they were, did not show. It plans the rest on the partition as the
    settling leaves it."""
    partition, _ = _interrupted(tmp_path, swap_is_valid)
    dry = run_kdump(["recover", "--dry-run", str(partition)])
    assert dry.exit_code == 0 and dry.stderr == "", dry.stdout + dry.stderr
    ran = run_kdump(["recover", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr

    def actions(out: str) -> list[str]:
        return [line for line in out.splitlines() if line.startswith(_ACTIONS)]

    assert actions(dry.stdout) == actions(ran.stdout)
    if swap_is_valid:
        assert f"create    {partition}/00000000000000000515.index: " in dry.stdout
    written = sum(int(n) for n in re.findall(r"^(\d+) file\(s\) ", ran.stdout, re.M))
    assert f"dry run: {written} file(s) " in dry.stdout
    assert "salvage   " not in ran.stdout  # a segment a swap replaced holds no lost record


@pytest.mark.parametrize("damage", ["zero-tail", "torn-batch"])
def test_kept_bytes_with_nothing_to_salvage_say_so(tmp_path: Path, damage: str) -> None:
    """The runbook's trial (issue 28): after recover cut a power loss's zeros (or a torn last
    batch), verify told to salvage the kept bytes, and salvage then exited 2 for 2335 zeros
    ("bytes that hold no readable batch"). Zeros are no damage: nothing to salvage, exit 0;
    a torn batch is lost whole (exit 2); neither kept file sends one to salvage."""
    partition = copy_partition("plain-0", tmp_path)
    active = max(partition.glob("*.log"))
    end = active.stat().st_size
    if damage == "zero-tail":
        with active.open("ab") as log:
            log.write(bytes(2335))
    else:
        os.truncate(active, batch_positions(active)[-1][1] - 37)
        end = batch_positions(active)[-1][1]
    dry = run_kdump(["recover", "--dry-run", str(partition)]).stdout
    says = "zero bytes (no records)" if damage == "zero-tail" else "with no readable batch in"
    assert says in dry
    assert run_kdump(["recover", str(partition)]).exit_code == 0
    result = verify_paths([str(partition)], options_from([]))
    kept, *others = [f for f in result.findings if f.code == "PARTITION_KDUMP_KEPT"]
    assert Path(kept.path).name == f"{active.name}.kdump-cut-{end}"
    assert all("no records to salvage" in f.message for f in others)  # a snapshot past the cut
    assert "--output-dir" not in kept.message and says in kept.message
    assert "remove the file" in kept.message
    ran = run_kdump(["salvage", "--output-dir", str(tmp_path / "out"), str(partition)])
    assert ran.exit_code == (0 if damage == "zero-tail" else 2), ran.stdout
    nothing = "zeros hold no records" if damage == "zero-tail" else "no whole, valid batch"
    assert ran.stdout.splitlines()[-1] == f"  nothing to salvage: {nothing}" + (
        ", nothing of them is lost" if damage == "zero-tail" else " in them"
    )
    assert "no log has damage" not in ran.stdout and not (tmp_path / "out").exists()
