"""The report's model as JSON, embedded in the page (``<script type="application/json"
id="kdump-model">``) for whoever wants the numbers behind it: each partition's ``partition``
object (the opened partition's facts, the keys of every JSON output: ``kdump verify --format
json``'s ``summary.by_partition`` entries), what the page shows of it (``shown``: the overview
row, word for word), and what its plots are drawn from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from kdump import __version__
from kdump.report.collect import LogDirView, PartitionView, ReportModel
from kdump.report.overview import PartitionRow
from kdump.untrusted import escape_json_text

SCRIPT_ID = "kdump-model"
ROW_FIELDS = [f.name for f in fields(PartitionRow)]


def model_dict(
    model: ReportModel, shown: Mapping[str, PartitionRow], paths: list[str]
) -> dict[str, Any]:
    return {
        "kdump": __version__,
        "paths": paths,
        "now": model.now,
        "log_dirs": [_log_dir(d, shown) for d in model.log_dirs],
        "unreadable": [str(e) for e in model.unreadable],
    }


def _log_dir(d: LogDirView, shown: Mapping[str, PartitionRow]) -> dict[str, Any]:
    return {
        "path": d.path,
        "identity": d.identity.to_dict(),
        "findings": [f.to_dict() for f in d.findings],
        "partitions": [_partition(p, shown[p.path]) for p in d.partitions],
    }


def _partition(p: PartitionView, row: PartitionRow) -> dict[str, Any]:
    s = p.summary
    return {
        "partition": p.facts,
        "shown": {name: getattr(row, name) for name in ROW_FIELDS},
        "batches": s.batches,
        "startup": s.startup,
        "index_interval_bytes": p.index_interval_bytes,
        "retention_ms": p.retention_ms,
        "retention_note": p.retention_note,
        "dirty": p.dirty,
        "compaction_note": p.compaction_note,
        "compaction_blocked": p.compaction_blocked,
        "blocked_records": p.blocked_records,
        "blocked_bytes": p.blocked_bytes,
        "segments": [
            {
                "base_offset": g.base_offset,
                "next_offset": g.next_offset,
                "size": g.size,
                "batches": g.batches,
                "first_timestamp": g.first_timestamp,
                "largest_timestamp": g.largest_timestamp,
                "active": g.active,
                "roll_causes": g.roll_causes,
                "deletable": g.deletable,
            }
            for g in p.segments
        ],
        "open_transactions": [
            {
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "first_offset": t.first_offset,
                "last_offset": t.last_offset,
                "age_ms": t.age_ms,
                "hanging": t.hanging,
            }
            for t in p.open_transactions
        ],
        "findings": [f.to_dict() for f in p.findings],
        "problems": p.problems,
    }


def script(model: ReportModel, shown: Mapping[str, PartitionRow], paths: list[str]) -> str:
    """The ``<script>`` element. Every ``<`` is written ``\\u003c`` (the same string to
    JSON.parse), so no name or message can end the script (``</script>``) or open a comment
    (``<!--``) inside it; what a terminal must not be given raw is JSON-escaped too
    (kdump.untrusted.escape_json_text)."""
    text = json.dumps(model_dict(model, shown, paths), ensure_ascii=False, separators=(",", ":"))
    text = escape_json_text(text).replace("<", "\\u003c")
    return f'<script type="application/json" id="{SCRIPT_ID}">{text}</script>'
