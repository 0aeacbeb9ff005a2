"""`kdump startup`'s word set against what the real broker then logged while loading its logs
(realkafka.broker_log.LoadReport): shared by the real-broker scenarios (tests/test_kafka_*.py)
that start a broker on log dirs kdump read first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clirun import run_kdump
from realkafka.broker_log import LoadReport, LogLoad

METADATA = "__cluster_metadata-0"


def startup_json(*paths: Path, extra: tuple[str, ...] = ()) -> Any:
    ran = run_kdump(["startup", *map(str, paths), "--format", "json", *extra])
    assert ran.exit_code in (0, 1, 2), ran.stdout + ran.stderr
    return json.loads(ran.stdout)


def partitions(said: Any) -> dict[str, Any]:
    """Every partition kdump planned, by the broker's name for it (``topic-partition``)."""
    out = {}
    for d in said["log_dirs"]:
        for p in d["partitions"] + ([d["metadata_log"]] if d["metadata_log"] else []):
            out[broker_name(Path(p["partition"]["path"]).name)] = p
    return out


def broker_name(directory: str) -> str:
    """The name the broker's lines give a partition's directory: a deleted topic's or a
    stray's (``topic-0.<id>-delete``) is logged as ``topic-0``
    (UnifiedLog.parseTopicPartitionName)."""
    if directory.endswith(("-delete", "-stray")):
        return directory.rsplit(".", 1)[0]
    return directory


def unflushed(p: Any) -> list[int]:
    """The segments recoverLog recovers ("Recovering unflushed segment")."""
    return sorted({r["segment"] for r in p["recoveries"] if r["why"].startswith("unflushed")})


def logged_index_rebuilds(p: Any) -> list[int]:
    """The segments recovered at open whose recovery the broker logs: a corrupt .txnindex
    always; a missing .index after a clean stop, or below the recovery point
    (LogLoader.loadSegmentFiles logs it only then)."""
    clean = p["partition"]["load"]["clean_shutdown"]
    out = []
    for r in p["recoveries"]:
        if r["why"].startswith("unflushed"):
            continue
        missing = r["why"].startswith("no offset index")
        if not missing or clean or r["segment"] < p["recovery_point"]:
            out.append(r["segment"])
    return sorted(out)


def recover_log_cuts(p: Any, load: LogLoad) -> list[tuple[int, int]]:
    """(segment, offset) of the cut recoverLog makes: the unflushed segment whose recovery
    truncated it, and the offset the broker says it truncated to."""
    cut = p["partition"]["load"]["cut_segment"]
    return [] if cut is None else [(cut, p["truncates_to"])]


def index_bases(load: LogLoad) -> list[int]:
    return sorted(int(Path(path).name.split(".")[0]) for path in load.index_rebuilt)


def check_load(said: Any, report: LoadReport, log_dir: Path) -> list[str]:
    """Every difference between kdump's plan for ``log_dir`` and the broker's lines (empty:
    the list is the broker's)."""
    out = []
    plan = next(d for d in said["log_dirs"] if Path(d["path"]) == log_dir)
    announced = report.log_dirs.get(str(log_dir))
    expected = (len(plan["partitions"]), plan["clean_shutdown"])
    if announced != expected:
        out.append(f"log dir {log_dir}: broker announced {announced}, kdump said {expected}")
    if report.loaded != len(plan["partitions"]):
        out.append(f"Loaded {report.loaded} logs, kdump said {len(plan['partitions'])}")
    for name, p in partitions(said).items():
        load = report.logs.get(name)
        if load is None:
            out.append(f"{name}: the broker logged no load of it")
            continue
        pairs: list[tuple[str, Any, Any]] = [
            ("recovered segments", unflushed(p), sorted(set(load.recovered_segments))),
            ("index rebuilds logged", logged_index_rebuilds(p), index_bases(load)),
            ("recoverLog cut", recover_log_cuts(p, load), load.truncated),
            ("segments deleted after the cut", p["segments_deleted"], load.deleted_segments),
            # a set: a segment recovered twice (at open, then unflushed) writes the same one twice
            (
                "snapshots written",
                sorted(p["snapshots_written"]),
                sorted(set(load.snapshots_written)),
            ),
            (
                "producer state rebuild skipped",
                p["partition"]["load"]["producer_state_skipped"],
                bool(load.rebuilds) and not load.rebuilds[-1][1],
            ),
            (
                "snapshots a replay loads",
                sorted({r["snapshot"] for r in p["producer_state_replays"]} - {None}),
                sorted(
                    set(load.snapshots_loaded)
                    & {r["snapshot"] for r in p["producer_state_replays"]}
                ),
            ),
            (
                "replays read up to",
                sorted({r["to"] for r in p["producer_state_replays"]}),
                sorted(
                    {o for o, reads in load.rebuilds if reads}
                    & {r["to"] for r in p["producer_state_replays"]}
                ),
            ),
            (
                "orphan indexes",
                sorted(p["orphan_indexes"]),
                sorted(Path(x).name for x in load.orphan_indexes),
            ),
        ]
        if name != METADATA:
            facts = p["partition"]
            pairs.append(
                (
                    "segments, log start and end",
                    (facts["segments"], facts["log_start_offset"], facts["log_end_offset"]),
                    (load.segments, load.log_start_offset, load.log_end_offset),
                )
            )
        out += [f"{name}: {what}: kdump {a}, broker {b}" for what, a, b in pairs if a != b]
    return out


LOAD_SLACK = 3.0
"""How far the broker's measured load may stray outside kdump's printed range before a test
fails (docs/startup.md, "Checking the estimate"): the range is the calibration's fastest and
slowest pace on this machine class; a shared machine's load stretches a run past the slowest
by as much again, and the tests may not depend on the machine's speed."""


def check_time(said: Any, report: LoadReport, log_dir: Path) -> str | None:
    """Why the broker's "Loaded N logs in X ms" falls outside kdump's estimate for
    ``log_dir`` (None: it falls inside, within ``LOAD_SLACK``)."""
    plan = next(d for d in said["log_dirs"] if Path(d["path"]) == log_dir)
    low, high = plan["estimated_seconds"]
    if report.load_ms is None:
        return 'the broker logged no "Loaded N logs"'
    measured = report.load_ms / 1000
    if low / LOAD_SLACK <= measured <= high * LOAD_SLACK:
        return None
    return f"the load took {measured:.3f} s; kdump said {low:.3f} to {high:.3f} s"
