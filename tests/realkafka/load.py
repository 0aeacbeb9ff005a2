"""Kafka's own log loading run on a copy of a log dir (``java/LoadLogs.java``): LogManager's
startup load, with no broker around it, so a test sees what Kafka does to files it could not
easily get a broker to write (a deleted index, a corrupt batch below the recovery point, a
leftover ``.swap``), and compares a ``kdump`` repair of another copy with it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .broker_log import LoadReport
from .release import Release


@dataclass
class Loaded:
    """What LoadLogs printed and logged: ``logs`` by ``topic-partition`` (log_start_offset,
    log_end_offset, recovery_point, high_watermark, last_stable_offset, size, segments,
    active_segment, latest_producer_snapshot, segment_list [[base offset, bytes]...]), and the
    lines LogManager and LogLoader wrote while loading. ``error``: what the load threw (the
    broker stops on it), ``logs`` then empty."""

    logs: dict[str, dict[str, Any]]
    report: LoadReport
    error: str | None = None


def load_logs(
    release: Release,
    properties: Path,
    log_dir: Path,
    topic_configs: Mapping[str, Mapping[str, str]],
    log: Path,
) -> Loaded:
    """LogManager's load of ``log_dir`` (a copy of a broker's log dir, changed in place), with
    the broker configuration ``properties`` (``log.dirs`` replaced) and each topic's
    overrides as its ConfigRepository would give them."""
    lines = [ln for ln in properties.read_text().splitlines() if not ln.startswith("log.dirs=")]
    config = log_dir.parent / f"{log_dir.name}.load-logs.properties"
    config.write_text("\n".join([*lines, f"log.dirs={log_dir}"]) + "\n")
    mark = log.stat().st_size if log.exists() else 0
    result = release.run("LoadLogs", str(config), json.dumps(topic_configs), log=log)
    printed = json.loads(result.stdout.strip().splitlines()[-1])
    with open(log, "rb") as f:
        f.seek(mark)
        report = LoadReport.parse(f.read().decode(errors="replace").splitlines())
    logs = {f"{x['topic']}-{x['partition']}": x for x in printed.get("logs", [])}
    return Loaded(logs, report, printed.get("error"))
