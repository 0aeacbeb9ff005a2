"""`kdump explain` from the command line: the JSON document's keys and types (what scripts
read), text with UTC times beside epoch ms, the settings files, and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import ORACLE
from explainbuild import HOUR, T0, batch, checkpoint, segment

from kdump.units import iso

SEGMENT_KEYS = {
    "base_offset": int,
    "last_offset": int,
    "size": int,
    "first_timestamp": int,
    "max_timestamp": int,
    "roll_causes": list,
    "active": bool,
    "deletable": (str, type(None)),
    "deletable_at": (int, type(None)),
}
COMPACTION_KEYS = {
    "first_dirty_offset": int,
    "first_uncleanable_offset": int,
    "clean_bytes": int,
    "dirty_bytes": int,
    "dirty_ratio": float,
    "cleanable": bool,
    "reason": str,
    "droppable_records": int,
    "droppable_bytes": int,
}
ROLL_CAUSES = {"size", "time", "offset_index_full", "time_index_full", "offset_overflow", "unknown"}


def partitions(tmp_path: Path) -> Path:
    log_dir = tmp_path / "logdir"
    for topic in ("orders", "compacted"):
        d = log_dir / f"{topic}-0"
        segment(d, [batch(0, [(b"k", b"v"), (b"k", b"w")], T0)])
        segment(d, [batch(2, [(b"k", b"x")], T0 + 2 * HOUR)])
    checkpoint(log_dir, "replication-offset-checkpoint", {("orders", 0): 3, ("compacted", 0): 3})
    return log_dir


def explain_json(*args: str | Path) -> dict[str, Any]:
    ran = run_kdump(["explain", "--format", "json", *map(str, args)])
    assert ran.exit_code == 0, ran.stderr
    doc: dict[str, Any] = json.loads(ran.stdout)
    return doc


def check_types(obj: dict[str, Any], keys: dict[str, Any]) -> None:
    for key, kind in keys.items():
        assert key in obj, key
        assert isinstance(obj[key], kind), (key, obj[key])
        assert not (kind is int and isinstance(obj[key], bool)), key


def test_json_shape(tmp_path: Path) -> None:
    log_dir = partitions(tmp_path)
    (tmp_path / "describe.txt").write_text(
        "All configs for topic compacted are:\n"
        "  cleanup.policy=compact sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
    )
    doc = explain_json(
        log_dir, "--describe-output", tmp_path / "describe.txt", "--now", str(T0 + 3 * HOUR)
    )
    by_topic = {p["topic"]: p for p in doc["partitions"]}
    assert set(by_topic) == {"orders", "compacted"}
    for p in doc["partitions"]:
        check_types(p, {"path": str, "topic": str, "partition": int, "settings": dict})
        assert p["settings"]["segment.bytes"] == 1073741824
        assert p["segments"] == len(p["by_segment"])
        for s in p["by_segment"]:
            check_types(s, SEGMENT_KEYS)
            assert set(s["roll_causes"]) <= ROLL_CAUSES
            assert s["deletable"] in (None, "time", "size", "log_start_offset")
        r = p["retention"]
        check_types(r, {"deletable_segments": int, "deletable_bytes": int})
        blocked = r["blocked_by"]
        assert blocked is None or {"base_offset", "reason"} <= set(blocked)
    assert by_topic["orders"]["compaction"] is None
    assert by_topic["orders"]["setting_sources"]["cleanup.policy"]["source"] == "default"
    compacted = by_topic["compacted"]
    assert compacted["settings"]["cleanup.policy"] == ["compact"]
    assert compacted["setting_sources"]["cleanup.policy"]["source"] == "describe output"
    check_types(compacted["compaction"], COMPACTION_KEYS)
    # the answer itself, from the rules: segment 0 rolled (2 h later, under segment.ms 7 d:
    # unknown); retention.ms 7 d keeps both; the cleaner maps k -> 2 (segment 0 only is
    # dirty, the active segment bounds it) and drops nothing: k's later record is in the
    # active segment, outside the map
    seg0 = by_topic["orders"]["by_segment"][0]
    assert seg0["roll_causes"] == ["unknown"]
    assert seg0["deletable_at"] == T0 + 7 * 24 * HOUR + 1
    c = compacted["compaction"]
    assert (c["first_dirty_offset"], c["first_uncleanable_offset"]) == (0, 2)
    assert (c["clean_bytes"], c["dirty_ratio"]) == (0, 1.0)
    assert c["droppable_records"] == 1  # offset 0: k appears again at 1


def test_text_names_settings_and_shows_utc(tmp_path: Path) -> None:
    log_dir = partitions(tmp_path)
    (tmp_path / "server.properties").write_text("log.retention.hours=1\n")
    ran = run_kdump(
        [
            "explain",
            str(log_dir / "orders-0"),
            "--server-properties",
            str(tmp_path / "server.properties"),
            "--config",
            "segment.ms=3600000",
            "--now",
            "2023-11-15T01:13:20Z",
        ]
    )
    assert ran.exit_code == 0, ran.stderr
    out = ran.stdout
    assert "now: 1700010800000 (2023-11-15T01:13:20.000Z)" in out
    assert "retention.ms=3600000" in out and "(log.retention.hours=1)" in out
    assert "segment.ms=3600000  [--config segment.ms=3600000]" in out
    # 2 h between the first batches > segment.ms 1 h: a time roll; data 3 h old > 1 h
    assert "00000000000000000000: time" in out
    assert "deletable now: 1 segment(s)" in out
    assert "\x1b[" not in out  # plain text on a pipe
    # where each largest timestamp was read, in brackets: printed, never taken for rich markup
    assert re.search(r"\(2023-[0-9T:.-]+Z\) \[(time index|log)[^]]*\]", out), out


def test_bad_setting_exits_3_with_one_line(tmp_path: Path) -> None:
    ran = run_kdump(["explain", str(partitions(tmp_path)), "--config", "segment.bytes=1000"])
    assert ran.exit_code == 3
    assert ran.stdout == ""
    assert ran.stderr == (
        "kdump: --config segment.bytes=1000: Invalid value 1000 for configuration "
        "segment.bytes: Value must be at least 1048576\n"
    )


def test_unreadable_checkpoint_is_read_as_absent_and_named(tmp_path: Path) -> None:
    """As the broker reads it, and as verify, txn and lookup do: absent; named with its byte."""
    log_dir = partitions(tmp_path)
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\norders 0\n")
    ran = run_kdump(["explain", str(log_dir / "orders-0")])
    assert (ran.exit_code, ran.stderr) == (0, "")
    assert f"{log_dir / 'replication-offset-checkpoint'}:4: " in ran.stdout
    assert "read as absent, as the broker reads it" in ran.stdout
    assert "no replication-offset-checkpoint entry: assumed the log end offset" in ran.stdout


def test_missing_path_and_bad_now_exit_3(tmp_path: Path) -> None:
    assert run_kdump(["explain", str(tmp_path / "nope")]).exit_code == 3
    ran = run_kdump(["explain", str(partitions(tmp_path)), "--now", "yesterday"])
    assert ran.exit_code == 3 and "yesterday" in ran.stderr


def test_byte_counts_for_people() -> None:
    """Text output gives exact bytes and, from 1 KiB, their size in binary units beside them."""
    from kdump.units import byte_count

    assert byte_count(1023) == "1023 bytes"
    assert byte_count(159864) == "159864 bytes (156.1 KiB)"
    assert byte_count(1 << 30) == "1073741824 bytes (1.0 GiB)"


@pytest.mark.parametrize("width", [80, 100, 200])
def test_segments_table_fits_a_terminal_with_every_time_whole(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """An 80-column terminal cut the segments table's times to ``170000…`` and ``(2023-…`` and
    folded ``[time index (last entry)]`` over five lines (the runbook trial, issue 28 point
    13's kind): less important columns go first, then the epoch ms beside each UTC time, then
    its milliseconds; never an ellipsis."""
    import io

    from kdump.commands.options import config_layers
    from kdump.explain import ExplainOptions, explain_paths
    from kdump.render.explain import render_text

    monkeypatch.setenv("COLUMNS", str(width))
    result = explain_paths(
        [str(ORACLE / "plain-0")], config_layers((), None, None), ExplainOptions(now=T0)
    )
    out = io.StringIO()
    render_text(result, out, True)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "largest timestamp" in line)
    table = lines[start : start + 2 + len(result.partitions[0].segments)]
    assert all(len(line) <= width for line in table) and "…" not in "\n".join(table)
    rows = [line.split() for line in table[2:]]
    assert [row[0] for row in rows] == ["0", "258", "515", "761", "1011", "1256"]
    largest = [s.facts.largest_timestamp for s in result.partitions[0].segments]
    for row, ms in zip(rows, largest, strict=True):
        assert re.search(re.escape(iso(ms)[:19]), " ".join(row)), row
        assert (str(ms) in row) == (width == 200)


def test_a_power_loss_zero_tail_is_named_as_verify_names_it(tmp_path: Path) -> None:
    """Issue 28 point 6's kind, in explain: its note called 2335 zeros after the last batch
    'batch size 0 is below the minimum record overhead (14)'; it is verify's LOG_ZERO_TAIL."""
    import shutil

    partition = tmp_path / "plain-0"
    shutil.copytree(ORACLE / "plain-0", partition)
    active = max(partition.glob("*.log"))
    end = active.stat().st_size
    with active.open("ab") as log:
        log.write(bytes(2335))
    ran = run_kdump(["explain", str(partition)])
    assert ran.exit_code == 0, ran.stderr
    (note,) = [line for line in ran.stdout.splitlines() if line.startswith("note: ")]
    assert note.startswith(f"note: {active}:{end}: LOG_ZERO_TAIL: 2335 zero bytes after the last")
    assert "minimum record overhead" not in note and note.endswith(": kdump verify tells more")
