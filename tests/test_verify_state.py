"""What ``verify --state`` trusts across runs (issue 39 point 5), the active segment's verified
prefix and the default state file (issue 44 points 4 and 9).

The review: a forged state (a byte flipped in a closed segment, its recorded identity made
again) hid the damage with exit 0; a ``verified_ms`` in the future meant a segment was never
read again; the file was written 0644 and read whoever owned it; NaN or a wrong type in it
crashed every run. A state is now read only where this user owns it and no one else may
write it, typed and bounded; the identity holds the ctime, which no user sets."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch, write_partition
from clirun import run_kdump

from kdump.checks import verify_state
from kdump.checks.segment import check_segment
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.checks.verify_state import AuditOptions
from kdump.format.names import LOG_SUFFIX, segment_file_name
from kdump.unified_log import local_segments

NOBODY = 65534


def _partition(root: Path, bases: tuple[int, ...] = (0, 100, 200)) -> Path:
    return write_partition(root / "audit-0", bases)


def _run(part: Path, state: Path, deep: bool = False, **audit: Any) -> VerifyResult:
    options = AuditOptions(str(state), **{"recheck_fraction": 0, **audit})
    return verify_paths([str(part)], VerifyOptions(deep=deep), audit=options)


def _size(part: Path, *bases: int) -> int:
    return sum((part / segment_file_name(b, LOG_SUFFIX)).stat().st_size for b in bases)


def _verdict(result: VerifyResult) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return [f.to_dict() for f in result.findings], result.summary()


# -- trust --------------------------------------------------------------------------------------


def test_the_state_is_written_0600_and_a_file_another_user_may_write_is_not_trusted(
    tmp_path: Path,
) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert _run(part, state).audit.bytes_unchanged_skipped  # trusted: incremental
    kept = state.read_bytes()
    for spoil, says in (
        (lambda: os.chmod(state, 0o620), "writable by group (mode 0620)"),
        (lambda: os.chmod(state, 0o602), "writable by others (mode 0602)"),
        (lambda: os.chown(state, NOBODY, -1), f"owned by uid {NOBODY}"),
    ):
        state.write_bytes(kept)
        os.chown(state, os.geteuid(), -1)
        os.chmod(state, 0o600)
        spoil()
        ran = run_kdump(["verify", str(part), "--state", str(state), "--format", "json"])
        assert ran.exit_code == 0
        assert ran.stderr.startswith(f"kdump: warning: {state}: {says}"), ran.stderr
        assert "not trusted; verifying everything and leaving it as it is" in ran.stderr
        assert json.loads(ran.stdout)["run"]["bytes_unchanged_skipped"] == 0
        assert state.read_bytes() == kept  # never replaced: its owner's to remove


def test_a_symlink_at_the_state_path_is_not_followed(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    target = tmp_path / "elsewhere.json"
    _run(part, target)
    kept = target.read_bytes()
    state.symlink_to(target)
    ran = run_kdump(["verify", str(part), "--state", str(state)])
    assert ran.exit_code == 0
    assert f"{state}: a symbolic link, not followed" in ran.stderr
    assert state.is_symlink() and target.read_bytes() == kept


def test_a_forged_identity_of_a_flipped_byte_is_caught_by_the_ctime(tmp_path: Path) -> None:
    """The broker's user flips a byte in a closed segment and puts its mtime back
    (``touch -d``): size, mtime and the batch headers are as verified. The ctime is not (no
    user sets it): the segment is read again and the damage found."""
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    log = part / segment_file_name(100, LOG_SUFFIX)
    before = log.stat()
    data = bytearray(log.read_bytes())
    data[400] ^= 0x01  # inside a record of the first batch: its CRC fails
    log.write_bytes(bytes(data))
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = _run(part, state)
    assert "LOG_CRC_MISMATCH" in {f.code for f in result.findings}
    assert result.audit.bytes_verified >= _size(part, 100)


def test_a_verification_in_the_future_does_not_count(tmp_path: Path) -> None:
    """A ``verified_ms`` ahead of the clock (a forgery, a clock that was wrong) kept a segment
    from ever being read again and oldest_verified_ms from alerting: it counts as never
    verified now."""
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    doc = json.loads(state.read_text())
    for record in doc["segments"].values():
        record["verified_ms"] += 365 * 86_400_000
    state.write_text(json.dumps(doc))
    os.chmod(state, 0o600)
    result = _run(part, state)
    assert result.audit.bytes_verified == _size(part, 0, 100)
    assert result.audit.oldest_verified_ms is not None
    assert (
        result.audit.oldest_verified_ms
        <= json.loads(state.read_text())["segments"][
            str(part.resolve() / segment_file_name(0, LOG_SUFFIX))
        ]["verified_ms"]
    )


SPOILED = {
    "nan": (lambda r: r["scan"].update(batches=float("nan")), "NaN is not a JSON number"),
    "infinity": (lambda r: r.update(verified_ms=float("inf")), "Infinity is not a JSON number"),
    "float": (lambda r: r.update(verified_ms=1.5), ".verified_ms: the number 1.5, not an"),
    "negative-size": (lambda r: r["identity"].update(size=-1), ".identity.size: -1 is outside"),
    "identity-list": (lambda r: r.update(identity=[]), ".identity: an array, not an object"),
    "digest": (lambda r: r["identity"].update(digest="x"), "'x' is not of the form kdump"),
    "stop": (lambda r: r["scan"].update(stop=["exploded", 0, 0]), ".scan.stop: not a walk's end"),
    "warning-kept": (
        lambda r: r["findings"].append(
            {"code": "LOG_CRC_MISMATCH", "severity": "error", "path": "/p", "message": "m"}
        ),
        "not a finding a segment verified clean has",
    ),
    "planted-fix": (
        lambda r: r["findings"].append(
            {
                "code": "LOG_OFFSET_GAP",
                "severity": "info",
                "path": "/p",
                "message": "m",
                "fix": "kdump recover /; rm -rf /",
            }
        ),
        "not a finding a segment verified clean has",
    ),
    "escape-message": (
        lambda r: r["findings"].append(
            {"code": "NO_SUCH_CODE", "severity": "info", "path": "/p", "message": "\x1b[2J"}
        ),
        "not a finding a segment verified clean has",
    ),
}


@pytest.mark.parametrize("name", sorted(SPOILED))
def test_a_state_of_the_wrong_types_is_a_warning_and_a_full_run(tmp_path: Path, name: str) -> None:
    """NaN, Infinity and wrong types crashed every run (``unexpected ValueError``); a finding
    kept with a clean segment is information of a code kdump knows, with no command."""
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    doc = json.loads(state.read_text())
    spoil, says = SPOILED[name]
    spoil(next(iter(doc["segments"].values())))
    state.write_text(json.dumps(doc, separators=(",", ":")))  # as kdump writes it
    os.chmod(state, 0o600)
    ran = run_kdump(["verify", str(part), "--state", str(state), "--format", "json"])
    assert ran.exit_code == 0, ran.stderr
    (line,) = ran.stderr.splitlines()
    assert line.startswith(f"kdump: warning: {state}: ") and says in line, line
    assert line.endswith("; verifying everything")
    assert json.loads(ran.stdout)["run"]["bytes_unchanged_skipped"] == 0


def test_a_state_too_large_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    monkeypatch.setattr(verify_state, "MAX_STATE_BYTES", 100)
    result = _run(part, state)
    assert result.audit.bytes_unchanged_skipped == 0
    assert "more than the 100 kdump reads back" in (result.audit.state_warning or "")


def test_a_shallow_verification_does_not_stand_for_a_deep_one(tmp_path: Path) -> None:
    from conftest import ORACLE

    part, state = tmp_path / "plain-0", tmp_path / "state.json"
    shutil.copytree(ORACLE / "plain-0", part)  # records that decode (--deep reads them)
    _run(part, state)
    every = sum(p.stat().st_size for p in part.glob("*.log"))
    assert _run(part, state, deep=True).audit.bytes_verified == every
    assert _run(part, state, deep=True).audit.bytes_verified == 0
    assert _run(part, state).audit.bytes_verified == 0  # a deep one stands for a shallow one


# -- the active segment's verified prefix (issue 44 point 4) -----------------------------------


def _append(part: Path, base: int, offsets: range, tail: bytes = b"") -> None:
    """Batches appended to the segment ``base``'s .log, as a broker appends them (below the
    index interval: no index entry)."""
    log = part / segment_file_name(base, LOG_SUFFIX)
    batches = b"".join(
        v2_batch(o, bytes([o % 251]) * 300, timestamp=1700000000000 + o) for o in offsets
    )
    with open(log, "ab") as f:
        f.write(batches + tail)


def test_what_was_appended_is_all_that_is_read_and_the_verdict_is_a_full_reads(
    tmp_path: Path,
) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    before = _size(part, 200)
    _append(part, 200, range(300, 305))
    result = _run(part, state)
    assert result.audit.bytes_verified == _size(part, 200) - before
    assert result.audit.bytes_unchanged_skipped == _size(part, 0, 100) + before
    full = verify_paths([str(part)], VerifyOptions())
    assert _verdict(result) == _verdict(full)
    # damage appended is found, as a full read finds it
    _append(part, 200, range(305, 306), tail=b"\x00\x00\x00\x00\x00\x00\x01\x2c\x00\x00\x01")
    damaged = _run(part, state)
    assert "LOG_TRUNCATED_TAIL" in {f.code for f in damaged.findings}
    assert _verdict(damaged) == _verdict(verify_paths([str(part)], VerifyOptions()))


def test_a_changed_prefix_is_read_whole(tmp_path: Path) -> None:
    part, state = _partition(tmp_path), tmp_path / "state.json"
    _run(part, state)
    log = part / segment_file_name(200, LOG_SUFFIX)
    data = bytearray(log.read_bytes())
    data[20] ^= 0xFF  # the first batch's header: its CRC field
    log.write_bytes(bytes(data))
    result = _run(part, state)
    assert result.audit.bytes_verified == _size(part, 200)
    assert "LOG_CRC_MISMATCH" in {f.code for f in result.findings}
    # a new file (the segment written again, its inode another) is read whole too
    _run(part, state)
    copy = log.with_suffix(".new")
    copy.write_bytes(log.read_bytes())
    os.replace(copy, log)
    assert _run(part, state).audit.bytes_verified == _size(part, 200)


ORACLE_LOGS = ["plain-0", "txn-0", "activeprealloc-0", "gzip-0", "variety-0", "legacyv1-0"]


@pytest.mark.parametrize("name", ORACLE_LOGS)
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_a_resumed_walk_is_a_whole_walk(tmp_path: Path, name: str, deep: bool) -> None:
    """Each Kafka-written active segment cut at every batch (its indexes as Kafka had them:
    the entries into the bytes kept), walked, and the walk resumed on the whole files: where
    the state would keep the prefix (nothing found but what the whole index files give again),
    the facts and findings are those of a walk of the whole, byte for byte."""
    from conftest import ORACLE

    from kdump.checks.segment import Resume
    from kdump.format.walk import iter_batches

    source = ORACLE / name
    options = VerifyOptions(deep=deep)
    whole = check_segment(local_segments(source)[-1], options)
    log = sorted(source.glob("*.log"))[-1]
    data = log.read_bytes()
    batches = list(iter_batches(data, str(log)))
    resumed = 0
    for cut in range(1, len(batches)):
        prefix = tmp_path / f"cut{cut}" / name
        shutil.copytree(source, prefix)
        _cut(prefix / log.name, batches[cut].position, batches[cut - 1].last_offset)
        segment = local_segments(prefix)[-1]
        walked = check_segment(segment, options)
        if verify_state.prefix_record(segment, walked.scan, walked.findings, 0) is None:
            continue
        assert walked.scan is not None
        index, time_index = segment.offset_index, segment.time_index
        k = 0 if index is None else index.used_entries
        k_time = 0 if time_index is None else time_index.used_entries
        again = check_segment(
            local_segments(source)[-1], options, resume=Resume(walked.scan, k, k_time)
        )
        assert again.scan == whole.scan and again.scan.stop == whole.scan.stop
        assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in whole.findings]
        resumed += 1
    assert resumed, "no cut left a prefix to keep"


def _cut(log: Path, position: int, last_offset: int) -> None:
    """``log`` cut at ``position``, its indexes' entries past it zeroed (the broker's active
    index is preallocated: zeros after the entries written)."""
    import struct

    log.write_bytes(log.read_bytes()[:position])
    base = int(log.stem)
    for suffix, size, keep in (
        (".index", 8, lambda e: struct.unpack(">ii", e)[1] < position),
        (".timeindex", 12, lambda e: base + struct.unpack(">qi", e)[1] <= last_offset),
    ):
        index = log.with_suffix(suffix)
        if not index.exists():
            continue
        raw = index.read_bytes()
        entries = [raw[i : i + size] for i in range(0, len(raw) // size * size, size)]
        kept = [e for e in entries if e != bytes(size) and keep(e)]
        index.write_bytes(b"".join(kept) + bytes(len(raw) - size * len(kept)))


# -- the default state file, and a state that cannot be written (issue 44 point 9) -------------


def test_state_without_a_path_uses_the_state_directory_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    part = _partition(tmp_path)
    monkeypatch.setattr(verify_state, "ROOT_STATE_DIR", str(tmp_path / "var-lib-kdump"))
    for run in range(2):
        ran = run_kdump(["verify", str(part), "--state"])
        assert ran.exit_code == 0, ran.stderr
        (state,) = (tmp_path / "var-lib-kdump").iterdir()
        assert f"state: {state}" in ran.stdout
        assert stat.S_IMODE(state.stat().st_mode) == 0o600
        assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
        assert ("not read (--state)" in ran.stdout) == (run == 1)
    doc = run_kdump(["verify", str(part), "--state=", "--format", "json"])
    assert json.loads(doc.stdout)["run"]["state"] == str(state)


def test_the_state_directory_of_a_user_and_of_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_STATE_HOME", "/home/u/.state")
    assert verify_state.default_state_dir() == Path("/home/u/.state/kdump")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", "/home/u")
    assert verify_state.default_state_dir() == Path("/home/u/.local/state/kdump")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("XDG_STATE_HOME", "/home/u/.state")  # sudo -E: not the user's for root
    assert verify_state.default_state_dir() == Path("/var/lib/kdump")
    one = verify_state.default_state_path(["/data/a"])
    assert one != verify_state.default_state_path(["/data/b"])
    assert one.name.startswith("verify-data_a-")


def test_a_state_that_cannot_be_written_is_refused_before_any_work(tmp_path: Path) -> None:
    part = _partition(tmp_path)
    ran = run_kdump(["verify", str(part), "--state", str(tmp_path / "no-such-dir" / "s.json")])
    assert ran.exit_code == 3 and ran.stdout == ""
    assert "cannot write it: no such directory" in ran.stderr
    assert len(ran.stderr.splitlines()) == 1


def test_a_state_that_fails_to_save_keeps_the_runs_findings_and_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kdump.storage import outputs

    part = tmp_path / "damaged-0"
    shutil.copytree(_partition(tmp_path), part)
    with open(part / segment_file_name(200, LOG_SUFFIX), "ab") as f:
        f.write(b"\x01\x02\x03")  # a torn tail: an error

    def full_disk(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs, "write_textfile", full_disk)
    ran = run_kdump(["verify", str(part), "--state", str(tmp_path / "s.json")])
    assert ran.exit_code == 2
    assert "LOG_TRUNCATED_TAIL" in ran.stdout
    assert "s.json: not saved (No space left on device)" in ran.stderr
