"""`kdump startup` without a broker: the JSON shape issue 42 gives, the recovery threads and
where they come from, the estimate's schedule, the advice, exit codes, --prom, and names read
from disk escaped in every output. What the broker does is checked against the real one in
tests/test_kafka_startup.py and tests/test_kafka_crash.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import FIXTURES

from kdump.format.names import CLEAN_SHUTDOWN
from kdump.startup.estimate import CALIBRATION, Work, log_dir_seconds, schedule

BROKER = FIXTURES / "realfiles" / "nomanazeem__Kafka-java" / "kafka-logs"
"""A KRaft broker's log dir, stopped cleanly: 50 __consumer_offsets partitions, a topic of
three, the metadata log."""

PARTITION_KEYS = {
    "partition",
    "recovers",
    "segments_to_recover",
    "bytes_to_recover",
    "indexes_rebuilt",
    "producer_state_from",
    "truncates_to",
    "bytes_truncated",
}


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(BROKER, copy)
    return copy


def said(*args: str, code: int = 0) -> Any:
    ran = run_kdump(["startup", *args, "--format", "json"])
    assert ran.exit_code == code, ran.stdout + ran.stderr
    return json.loads(ran.stdout)


def by_name(out: Any) -> dict[str, Any]:
    return {Path(p["partition"]["path"]).name: p for d in out["log_dirs"] for p in d["partitions"]}


def test_the_json_has_the_issues_shape(log_dir: Path) -> None:
    out = said(str(log_dir))
    (d,) = out["log_dirs"]
    assert {"path", "clean_shutdown", "recovery_threads", "partitions", "bytes_to_recover",
            "estimated_seconds"} <= set(d)  # fmt: skip
    assert d["path"] == str(log_dir) and d["clean_shutdown"] is True
    assert d["recovery_threads"] == 2  # Kafka 4.x's default
    assert len(d["partitions"]) == 53  # LogManager's logs: the metadata log apart
    verified = json.loads(run_kdump(["verify", "--format", "json", str(log_dir)]).stdout)
    summaries = {s["path"]: s for s in verified["summary"]["by_partition"]}
    for p in d["partitions"]:
        assert set(p) >= PARTITION_KEYS
        # the partition object: every command's, with the same numbers (UnifiedLog.facts)
        summary = summaries[p["partition"]["path"]]
        assert p["partition"] == {k: summary[k] for k in p["partition"]}
    low, high = d["estimated_seconds"]
    assert 0 < low <= high
    assert d["metadata_log"]["partition"]["topic"] == "__cluster_metadata"
    assert d["metadata_log"]["segments_to_recover"] == [0]  # the raft layer, every start


def test_after_an_unclean_stop_every_log_recovers_from_its_recovery_point(log_dir: Path) -> None:
    (log_dir / CLEAN_SHUTDOWN).unlink()
    out = said(str(log_dir))
    (d,) = out["log_dirs"]
    assert d["clean_shutdown"] is False
    for p in d["partitions"]:
        facts = p["partition"]
        assert p["recovers"] is True
        assert p["segments_to_recover"] == [facts["active_segment"]], facts["path"]
    clean = said(str(BROKER))["log_dirs"][0]
    assert not any(p["recovers"] for p in clean["partitions"])
    assert d["estimated_seconds"][1] > clean["estimated_seconds"][1]


def test_a_missing_index_is_rebuilt_and_named_with_its_offline_repair(log_dir: Path) -> None:
    partition = log_dir / "__cluster_metadata-0"
    assert partition.exists()
    topic = next(p for p in sorted(log_dir.iterdir()) if p.name.startswith("demo-topic"))
    logs = sorted(topic.glob("*.log"))
    logs[0].with_suffix(".index").unlink()
    out = said(str(log_dir))
    p = by_name(out)[topic.name]
    assert p["indexes_rebuilt"] == [int(logs[0].name.split(".")[0])]
    assert p["recovers"] is True
    ran = run_kdump(["startup", str(log_dir)])
    assert f"kdump rebuild-index {logs[0]}" in ran.stdout


def test_recovery_threads_come_from_the_option_config_and_server_properties(
    log_dir: Path, tmp_path: Path
) -> None:
    assert said(str(log_dir), "--recovery-threads", "4")["log_dirs"][0]["recovery_threads"] == 4
    out = said(str(log_dir), "--config", "num.recovery.threads.per.data.dir=3")
    assert out["log_dirs"][0]["recovery_threads"] == 3
    assert out["recovery_threads_source"] == "--config num.recovery.threads.per.data.dir=3"
    props = tmp_path / "server.properties"
    props.write_text("num.recovery.threads.per.data.dir=6\n")
    out = said(str(log_dir), "--server-properties", str(props))
    assert out["log_dirs"][0]["recovery_threads"] == 6
    assert "server.properties" in out["recovery_threads_source"]
    ran = run_kdump(["startup", str(log_dir), "--recovery-threads", "0"])
    assert ran.exit_code == 3
    assert "Value must be at least 1" in ran.stderr


def test_more_threads_shorten_the_estimate(log_dir: Path) -> None:
    (log_dir / CLEAN_SHUTDOWN).unlink()
    two = said(str(log_dir))["log_dirs"][0]["estimated_seconds"]
    eight = said(str(log_dir), "--recovery-threads", "8")["log_dirs"][0]["estimated_seconds"]
    assert eight[0] < two[0] and eight[1] < two[1]


def test_the_schedule_is_the_pools() -> None:
    # Executors.newFixedThreadPool: jobs in submission order, each to the first free thread
    assert schedule([4, 1, 1, 1, 1], 2) == 4
    assert schedule([1, 1, 1, 1, 4], 2) == 6  # the long job last waits for a thread
    assert schedule([3, 3, 3], 8) == 3
    assert schedule([], 2) == 0
    works = [Work(recover_bytes=1 << 30), Work()]
    low, typical, high = log_dir_seconds(works, 1)
    assert low < typical < high
    assert log_dir_seconds(works, 2).high < high
    assert CALIBRATION.fast.seconds(Work()) < CALIBRATION.slow.seconds(Work())


def test_exit_codes_say_what_the_start_costs(log_dir: Path) -> None:
    assert run_kdump(["startup", str(log_dir)]).exit_code == 0
    # damage the broker cuts: an unclean stop, a torn tail in the active segment
    (log_dir / CLEAN_SHUTDOWN).unlink()
    log = max((log_dir / "__consumer_offsets-15").glob("*.log"))
    assert log.stat().st_size > 100
    with open(log, "r+b") as f:
        f.truncate(log.stat().st_size - 7)
    out = said(str(log_dir), code=2)
    p = by_name(out)["__consumer_offsets-15"]
    assert p["truncates_to"] is not None and p["bytes_truncated"] > 0


def test_prom_has_each_log_dirs_estimate(log_dir: Path, tmp_path: Path) -> None:
    prom = tmp_path / "startup.prom"
    ran = run_kdump(["startup", str(log_dir), "--prom", str(prom)])
    assert ran.exit_code == 0, ran.stderr
    text = prom.read_text()
    label = f'log_dir="{log_dir}"'
    assert f'kdump_startup_clean_shutdown{{command="startup",{label}}} 1' in text
    assert f'kdump_startup_logs{{command="startup",{label}}} 53' in text
    assert f'kdump_startup_estimated_seconds{{command="startup",{label},bound="high"}}' in text
    assert 'kdump_exit_status{command="startup"} 0' in text


def test_names_read_from_disk_are_escaped(tmp_path: Path) -> None:
    """A log dir whose name is not UTF-8: text, JSON and --prom write the byte as \\xNN."""
    raw = os.fsencode(str(tmp_path)) + b"/logs\xff"
    name = os.fsdecode(raw)
    shutil.copytree(BROKER, name)
    ran = run_kdump(["startup", name])
    assert ran.exit_code == 0, ran.stderr
    assert "logs\\xff" in ran.stdout
    out = json.loads(run_kdump(["startup", name, "--format", "json"]).stdout)
    assert out["log_dirs"][0]["path"].endswith("logs\\xff")
    prom = tmp_path / "startup.prom"
    assert run_kdump(["startup", name, "--prom", str(prom)]).exit_code == 0
    assert 'logs\\\\xff"' in prom.read_text()


def test_a_path_that_holds_no_log_dir_is_refused(tmp_path: Path) -> None:
    ran = run_kdump(["startup", str(tmp_path)])
    assert ran.exit_code == 3
    assert ran.stderr.startswith(f"kdump: {tmp_path}")


def test_a_directory_that_is_no_partition_stops_the_broker(log_dir: Path) -> None:
    """LocalLog.parseTopicPartitionName throws on it (Kafka 4.4: "Found directory ...,
    'lost+found' is not in the form of topic-partition ..."): a mount point's lost+found."""
    (log_dir / "lost+found").mkdir()
    (log_dir / "remote-log-index-cache").mkdir()  # tiered storage's: skipped
    out = said(str(log_dir), code=2)
    assert out["log_dirs"][0]["not_partitions"] == ["lost+found"]
    assert "FAILS: the directory lost+found" in run_kdump(["startup", str(log_dir)]).stdout


def test_advice_on_a_long_start(log_dir: Path) -> None:
    """More threads, the partition that dominates, the index that forces a replay: priced at a
    pace 10,000 times the calibrated one, so that this small log dir takes long enough."""
    from dataclasses import replace

    from kdump.startup import StartupOptions, plan_startup
    from kdump.startup.advice import advise
    from kdump.startup.estimate import CALIBRATION, Pace

    def slower(pace: Pace) -> Pace:
        return Pace(*(10_000 * value for value in pace.__dict__.values()))

    calibration = replace(
        CALIBRATION,
        fast=slower(CALIBRATION.fast),
        typical=slower(CALIBRATION.typical),
        slow=slower(CALIBRATION.slow),
    )
    (log_dir / CLEAN_SHUTDOWN).unlink()
    busy = log_dir / "__consumer_offsets-15"
    max(busy.glob("*.log")).with_suffix(".index").unlink()
    result = plan_startup([str(log_dir)], StartupOptions(2, "test", calibration))
    advice = advise(result)
    threads = [a for a in advice if a.kind == "threads"]
    assert "num.recovery.threads.per.data.dir=4:" in threads[0].text
    assert all(a.seconds is not None and a.seconds.high < result.seconds.high for a in threads)
    (repair,) = [a for a in advice if a.kind == "rebuild-index"]
    assert repair.partition == str(busy) and repair.command is not None
    assert repair.command.startswith("kdump rebuild-index ")
