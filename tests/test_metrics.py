"""--prom FILE on verify, txn and explain, and verify's JSON ``run`` object.

The files are read back with the Prometheus client library's own parser (the one the
Python exporters use), not with kdump's; the cron story (a run that fails after one that
worked) is played through the console entry point.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import CORRUPT, ORACLE, REALFILES, REPO, script_module
from prometheus_client.parser import text_string_to_metric_families

from kdump import __version__
from kdump.metrics import COMMANDS, FAMILIES, PREFIX
from kdump.render.prom import Family, escape_label_value, previous_value, render
from kdump.storage.outputs import write_textfile

V0_LOG_DIR = REALFILES / "Bheem6005__kafka" / "kafka-logs"  # broker.id=0, 5 INDEX_MISSING
V1_LOG_DIR = REALFILES / "nomanazeem__Kafka-java" / "kafka-logs"  # node.id=1, directory.id


def parse(path: Path) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Family name -> (labels, value) of each sample, as prometheus_client reads the file."""
    text = path.read_text()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = [(dict(s.labels), s.value) for s in family.samples]
    # every family has its HELP and TYPE lines
    for name in out:
        assert f"# HELP {name} " in text and f"# TYPE {name} gauge" in text
    return out


def one(families: dict[str, Any], name: str, **labels: str) -> float:
    found = [v for got, v in families[name] if all(got.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, (name, labels, families.get(name))
    return float(found[0])


def log_dir_with(tmp: Path, *sources: Path, name: str = "logdir") -> Path:
    log_dir = tmp / name
    log_dir.mkdir()
    for source in sources:
        shutil.copytree(source, log_dir / source.name)
    return log_dir


# --- verify ------------------------------------------------------------------------------------


def test_verify_prom_findings_per_partition_with_findings_and_totals(tmp_path: Path) -> None:
    prom = tmp_path / "kdump.prom"
    ran = run_kdump(["verify", str(V0_LOG_DIR), "--prom", str(prom), "-q"])
    assert ran.exit_code == 0
    m = parse(prom)
    log_dir = str(V0_LOG_DIR.resolve())
    findings = m["kdump_findings"]
    assert sorted((s["topic"], s["partition"]) for s, _ in findings) == [
        ("__consumer_offsets", "0"),
        ("__consumer_offsets", "2"),
        ("__consumer_offsets", "31"),
        ("__consumer_offsets", "34"),
        ("cities", "0"),
    ]
    for labels, value in findings:
        assert labels == {**labels, "command": "verify", "log_dir": log_dir}
        assert (labels["code"], labels["severity"], value) == ("INDEX_MISSING", "warning", 1)
    totals = {s["severity"]: v for s, v in m["kdump_log_dir_findings"]}
    assert totals == {"error": 0, "warning": 5, "info": 0}
    assert one(m, "kdump_partitions_checked", log_dir=log_dir) == 51
    assert one(m, "kdump_segments_checked", log_dir=log_dir) == 51
    assert one(m, "kdump_scanned_bytes", log_dir=log_dir) == 2689
    assert one(m, "kdump_exit_status", command="verify") == 0
    assert one(m, "kdump_build_info", version=__version__) == 1
    assert one(m, "kdump_log_dir_info", broker_id="0", cluster_id="P4mWrUMKRvm3AylnZYNBaQ") == 1
    started = one(m, "kdump_last_run_timestamp_seconds")
    assert one(m, "kdump_last_success_timestamp_seconds") == started
    assert 0 < one(m, "kdump_run_duration_seconds") < 60


def test_a_healthy_broker_exports_a_handful_of_series(tmp_path: Path) -> None:
    log_dir = log_dir_with(tmp_path, ORACLE / "plain-0", ORACLE / "gzip-0", ORACLE / "lz4-0")
    prom = tmp_path / "kdump.prom"
    assert run_kdump(["verify", str(log_dir), "--prom", str(prom)]).exit_code == 0
    m = parse(prom)
    assert "kdump_findings" not in m  # no partition has a finding
    assert sum(len(samples) for samples in m.values()) <= 12
    assert one(m, "kdump_partitions_checked") == 3


def test_exit_status_follows_fail_on_and_errors(tmp_path: Path) -> None:
    prom = tmp_path / "kdump.prom"
    crc = CORRUPT / "log-crc-mismatch"
    assert run_kdump(["verify", str(crc), "--prom", str(prom)]).exit_code == 2
    m = parse(prom)
    assert one(m, "kdump_exit_status") == 2
    assert one(m, "kdump_findings", code="LOG_CRC_MISMATCH", topic="txn", partition="0") == 1
    # errors found is a completed run: its time is the last success
    assert one(m, "kdump_last_success_timestamp_seconds") == one(
        m, "kdump_last_run_timestamp_seconds"
    )
    ran = run_kdump(["verify", str(V0_LOG_DIR), "--prom", str(prom), "--fail-on", "warning"])
    assert ran.exit_code == 1 and one(parse(prom), "kdump_exit_status") == 1


def test_a_failed_run_carries_the_last_success_forward(tmp_path: Path) -> None:
    prom = tmp_path / "kdump.prom"
    assert run_kdump(["verify", str(ORACLE / "plain-0"), "--prom", str(prom)]).exit_code == 0
    before = parse(prom)
    success = one(before, "kdump_last_success_timestamp_seconds")
    ran = run_kdump(["verify", str(tmp_path / "gone"), "--prom", str(prom)])
    assert ran.exit_code == 3
    assert ran.stderr == f"kdump: {tmp_path / 'gone'}: no such file or directory\n"
    after = parse(prom)
    assert one(after, "kdump_exit_status") == 3
    assert one(after, "kdump_last_success_timestamp_seconds") == success
    assert one(after, "kdump_last_run_timestamp_seconds") >= success
    assert "kdump_findings" not in after and "kdump_partitions_checked" not in after


def test_a_first_run_that_fails_has_no_last_success(tmp_path: Path) -> None:
    prom = tmp_path / "kdump.prom"
    assert run_kdump(["verify", str(tmp_path / "gone"), "--prom", str(prom)]).exit_code == 3
    m = parse(prom)
    assert one(m, "kdump_exit_status") == 3
    assert "kdump_last_success_timestamp_seconds" not in m


def test_an_unwritable_prom_file_is_one_line_and_exit_3(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "kdump.prom"
    ran = run_kdump(["verify", str(ORACLE / "plain-0"), "--prom", str(target)])
    assert ran.exit_code == 3
    assert ran.stderr.startswith("kdump: ") and str(tmp_path / "missing-dir") in ran.stderr
    assert "Traceback" not in ran.stderr and ran.stderr.count("\n") == 1


def test_label_values_are_escaped(tmp_path: Path) -> None:
    topic = 'we"ird\\topic'
    log_dir = tmp_path / "log\ndir"
    log_dir.mkdir()
    shutil.copytree(CORRUPT / "index-missing" / "txn-0", log_dir / f"{topic}-3")
    prom = tmp_path / "kdump.prom"
    run_kdump(["verify", str(log_dir), "--prom", str(prom)])
    text = prom.read_text()
    # a line feed in a name is ``\x0a`` in every output, a label too (issue 39: one name, one
    # line; kdump.untrusted.metric_label), then escaped as the format escapes a backslash
    assert 'topic="we\\"ird\\\\topic"' in text and "log\\\\x0adir" in text
    m = parse(prom)
    ((labels, value),) = m["kdump_findings"]
    assert value == 1
    shown = str(log_dir).replace("\n", "\\x0a")
    assert (labels["topic"], labels["partition"], labels["log_dir"]) == (topic, "3", shown)
    assert escape_label_value('a\\b"c\nd\x1b') == 'a\\\\b\\"c\\\\x0ad\\\\x1b'


# --- the writer --------------------------------------------------------------------------------


def test_written_atomically_through_a_temporary_file_not_named_prom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "kdump.prom"
    target.write_text("old\n")
    seen: list[tuple[str, str, str]] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        seen.append((os.path.dirname(src), os.path.basename(src), Path(src).read_text()))
        assert target.read_text() == "old\n"  # the old file stays whole until the rename
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    family = Family("kdump_x", "help\\text\nwith a newline").add(1.5, a='"')
    write_textfile(target, render([family]))
    ((directory, name, text),) = seen
    assert directory == str(tmp_path) and not name.endswith(".prom")
    assert target.read_text() == text
    assert text.splitlines()[0] == "# HELP kdump_x help\\\\text\\nwith a newline"
    assert os.listdir(tmp_path) == ["kdump.prom"]
    assert stat.S_IMODE(target.stat().st_mode) & 0o044 == 0o044  # the collector can read it


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "kdump.prom"
    target.write_text("old\n")

    def fail(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        write_textfile(target, "new\n")
    assert os.listdir(tmp_path) == ["kdump.prom"] and target.read_text() == "old\n"


def test_previous_value_reads_back_what_render_wrote(tmp_path: Path) -> None:
    target = tmp_path / "kdump.prom"
    family = Family("kdump_last_success_timestamp_seconds", "h").add(17.25, command='v"e\\r')
    write_textfile(target, render([family]))
    got = previous_value(target, "kdump_last_success_timestamp_seconds", {"command": 'v"e\\r'})
    assert got == 17.25
    assert previous_value(tmp_path / "none.prom", "kdump_x", {}) is None


# --- txn and explain ---------------------------------------------------------------------------


def test_txn_prom_open_and_hanging_transactions(tmp_path: Path) -> None:
    prom = tmp_path / "txn.prom"
    ran = run_kdump(["txn", str(ORACLE / "txn-0"), "--prom", str(prom)])
    assert ran.exit_code == 2
    m = parse(prom)
    where = {"topic": "txn", "partition": "0", "command": "txn"}
    assert one(m, "kdump_open_transactions", **where) == 1
    assert one(m, "kdump_hanging_transactions", **where) == 1
    assert one(m, "kdump_lso_blocked_records", **where) == 7
    assert one(m, "kdump_lso_blocked_bytes", **where) == 533
    assert one(m, "kdump_findings", code="TXN_HANGING", severity="error") == 1
    assert one(m, "kdump_exit_status", command="txn") == 2
    assert one(m, "kdump_log_dir_hanging_transactions") == 1


def test_explain_prom_retention_and_compaction(tmp_path: Path) -> None:
    prom = tmp_path / "explain.prom"
    ran = run_kdump(["explain", str(V0_LOG_DIR), "--prom", str(prom)])
    assert ran.exit_code == 0
    m = parse(prom)
    log_dir = str(V0_LOG_DIR.resolve())
    assert one(m, "kdump_partitions_checked", command="explain", log_dir=log_dir) == 51
    # __consumer_offsets is compacted (Kafka's internal-topic config): only cities-0's one
    # segment is past the default 7 days
    cities = V0_LOG_DIR / "cities-0" / "00000000000000000000.log"
    assert one(m, "kdump_retention_deletable_segments", log_dir=log_dir) == 1
    assert one(m, "kdump_retention_deletable_bytes", log_dir=log_dir) == cities.stat().st_size
    assert one(m, "kdump_retention_blocked_partitions", kind="policy") == 50
    assert one(m, "kdump_compaction_cleanable_partitions") == 0
    assert one(m, "kdump_exit_status", command="explain") == 0


# --- the registry of families and docs/metrics.md ----------------------------------------------


def test_the_metrics_pages_table_is_the_generators_output() -> None:
    page = (REPO / "docs" / "metrics.md").read_text()
    assert script_module("make_metrics_doc").metrics_doc(page) == page, (
        "run scripts/make_metrics_doc.py"
    )
    for name in FAMILIES:
        assert f"| `{PREFIX}{name}` |" in page


def test_every_family_a_command_writes_is_the_registrys(tmp_path: Path) -> None:
    """Each command that takes --prom, run as cron runs it: every family it writes is in
    kdump.metrics.FAMILIES (so on the metrics page), with the labels and the command the page
    gives it; and between them the runs write every family of the registry."""
    from test_replicas import unclean_election

    copy = log_dir_with(tmp_path, ORACLE / "plain-0", ORACLE / "txn-0")
    a, b = unclean_election(tmp_path / "replicas")
    runs = {
        "verify": [str(V0_LOG_DIR), "-q"],
        "verify --state": [str(copy), "--state", str(tmp_path / "state.json"), "--budget", "1h"],
        "txn": [str(ORACLE / "txn-0")],
        "explain": [str(V0_LOG_DIR)],
        "replicas": [str(a), str(b)],
        "startup": [str(V1_LOG_DIR)],
    }
    written: set[str] = set()
    for run, args in runs.items():
        command = run.split()[0]
        prom = tmp_path / f"{run}.prom"
        ran = run_kdump([command, *args, "--prom", str(prom)])
        assert ran.exit_code in (0, 1, 2), (run, ran.stderr)
        for name, samples in parse(prom).items():
            family = FAMILIES[name.removeprefix(PREFIX)]
            assert command in family.commands, (run, name)
            for labels, _ in samples:
                assert list(labels) == ["command", *family.labels], (run, name)
                assert labels["command"] == command
            written.add(family.name)
    assert set(FAMILIES) - written == set()
    assert set(COMMANDS) == {run.split()[0] for run in runs} == commands_with_prom()


def commands_with_prom() -> set[str]:
    """The CLI's commands that have a --prom option."""
    import click

    from kdump.cli import cli

    ctx = click.Context(cli, info_name="kdump")
    found = set()
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if command is not None and any("--prom" in p.opts for p in command.params):
            found.add(name)
    return found


# --- verify --format json: the run object -------------------------------------------------------


def run_object(*paths: Path) -> dict[str, Any]:
    ran = run_kdump(["verify", "--format", "json", *map(str, paths)])
    assert ran.exit_code in (0, 2)
    doc = json.loads(ran.stdout)
    assert set(doc) == {"findings", "summary", "run"}
    return dict(doc["run"])


def test_json_run_object_from_a_version_0_meta_properties() -> None:
    run = run_object(V0_LOG_DIR)
    assert run["command"] == "verify" and run["kdump_version"] == __version__
    assert isinstance(run["started"], int) and run["started_iso"].endswith("Z")
    assert 0 < run["duration_seconds"] < 60 and run["host"]
    assert (run["broker_id"], run["cluster_id"]) == (0, "P4mWrUMKRvm3AylnZYNBaQ")
    (log_dir,) = run["log_dirs"]
    assert log_dir == {
        "path": str(V0_LOG_DIR.resolve()),
        "meta_properties_version": 0,
        "broker_id": 0,
        "cluster_id": "P4mWrUMKRvm3AylnZYNBaQ",
        "directory_id": None,
        "error": None,
    }
    assert run["findings_by_code"] == {"INDEX_MISSING": 5}


def test_json_run_object_from_a_version_1_meta_properties() -> None:
    run = run_object(V1_LOG_DIR)
    assert (run["broker_id"], run["cluster_id"]) == (1, "5L6g3nShT-eMCtK--X86sw")
    assert run["log_dirs"][0]["directory_id"] == "WvVzx-Xl3swcqvxXsPbjww"
    assert run["log_dirs"][0]["meta_properties_version"] == 1


def test_json_run_object_without_meta_properties_and_with_a_broken_one(tmp_path: Path) -> None:
    run = run_object(ORACLE / "plain-0")
    assert (run["broker_id"], run["cluster_id"], run["findings_by_code"]) == (None, None, {})
    log_dir = log_dir_with(tmp_path, ORACLE / "plain-0")
    (log_dir / "meta.properties").write_text("version=7\n")
    run = run_object(log_dir)
    assert run["log_dirs"][0]["error"] == (
        f"{log_dir}/meta.properties:0: line 1: Unknown meta.properties version number 7"
    )


def test_alert_summaries_show_no_age_for_a_series_that_is_absent() -> None:
    """absent() yields 1, so an age printed with humanizeDuration would read "1s": no rule
    of docs/metrics.md both prints an age and fires on absent()."""
    text = (REPO / "docs" / "metrics.md").read_text()
    rules = re.split(r"\n\s*- alert: ", text.split("```yaml", 1)[1].split("```", 1)[0])[1:]
    assert len(rules) >= 4
    for rule in rules:
        expr = re.search(r"expr: (.*)", rule)
        assert expr is not None
        if "humanizeDuration" in rule:
            assert "absent(" not in expr[1], rule.splitlines()[0]
    assert any("absent(" in rule for rule in rules)  # the never-succeeded case still alerts


@pytest.mark.parametrize(
    "args",
    [
        ["verify", str(CORRUPT / "log-crc-mismatch" / "txn-0")],
        ["explain", str(ORACLE / "txn-0")],
        ["txn", str(ORACLE / "txn-0")],
    ],
    ids=["verify", "explain", "txn"],
)
def test_an_unwritable_prom_path_is_refused_before_any_work(
    args: list[str], tmp_path: Path
) -> None:
    """Issue 28.11: `verify DIR --prom /nonexistent/x.prom` did all the work and printed its
    verdict, then exited 3, hiding it. The path is checked first, as report -o's is."""
    prom = tmp_path / "no-such-dir" / "kdump.prom"
    ran = run_kdump([*args, "--prom", str(prom)])
    assert (ran.exit_code, ran.stdout) == (3, "")
    assert ran.stderr == f"kdump: {prom}: cannot write it: no such directory: {prom.parent}\n"
