"""``kdump explain`` output: text (rich tables on a terminal, plain on a pipe) and one JSON
document whose keys docs/explain.md documents. Renderers read the explanation; they decide
nothing."""

from __future__ import annotations

from collections.abc import Collection
from functools import partial
from typing import IO, Any

from kdump.config import Value
from kdump.explain import (
    CompactionExplanation,
    ExplainResult,
    KeyCount,
    PartitionExplanation,
    RetentionExplanation,
    SegmentExplanation,
)
from kdump.format.records import lossless
from kdump.render.console import TextConsole, TextTable
from kdump.units import at, byte_count, duration, iso
from kdump.untrusted import json_text

# -- JSON --------------------------------------------------------------------------------------


def _ts(ms: int) -> int | None:
    return ms if ms >= 0 else None


def _value(value: Value) -> Any:
    return list(value) if isinstance(value, tuple) else value


def segment_object(s: SegmentExplanation) -> dict[str, Any]:
    f, roll, ret = s.facts, s.roll, s.retention
    effect = f.time_index_effect
    return {
        "base_offset": f.base_offset,
        "last_offset": f.last_offset,
        "size": f.size,
        "batches": f.batches,
        "first_timestamp": _ts(f.first_timestamp),
        "max_timestamp": _ts(f.max_timestamp),
        "largest_timestamp": f.largest_timestamp,
        "largest_timestamp_source": f.largest_timestamp_source,
        "roll_causes": list(roll.causes),
        "roll_checks": [
            {"cause": c.cause, "holds": c.holds, "evidence": c.evidence} for c in roll.checks
        ],
        "roll_notes": list(roll.notes),
        "roll_jitter_ms": None
        if roll.roll_jitter_ms is None
        else {"min": roll.roll_jitter_ms.min_ms, "max": roll.roll_jitter_ms.max_ms},
        "active": f.active,
        "deletable": ret.deletable,
        "deletable_at": ret.deletable_at,
        "retention_reason": ret.reason,
        "offset_index_entries": f.offset_index_entries,
        "time_index_entries": f.time_index_entries,
        "time_index": None
        if effect is None
        else {
            "effect": effect.effect,
            "largest_timestamp": effect.largest_timestamp,
            "log_max_timestamp": effect.log_max_timestamp,
            "explanation": effect.explanation,
            "findings": list(effect.findings),
        },
        "damage": f.damage,
    }


def retention_object(r: RetentionExplanation) -> dict[str, Any]:
    b = r.blocked_by
    return {
        "passes": list(r.passes),
        "deletable_segments": r.deletable_segments,
        "deletable_bytes": r.deletable_bytes,
        "log_start_offset_after": r.log_start_offset_after,
        "blocked_by": None
        if b is None
        else {"base_offset": b.base_offset, "kind": b.kind, "reason": b.reason},
        "next_deletable_at": r.next_deletable_at,
        "next_deletable_base_offset": r.next_deletable_base_offset,
        "notes": list(r.notes),
    }


def compaction_object(c: CompactionExplanation | None) -> dict[str, Any] | None:
    if c is None:
        return None
    p = c.preview
    return {
        "first_dirty_offset": c.first_dirty_offset,
        "first_uncleanable_offset": c.first_uncleanable_offset,
        "clean_bytes": c.clean_bytes,
        "dirty_bytes": c.dirty_bytes,
        "dirty_ratio": c.dirty_ratio,
        "cleanable": c.cleanable,
        "reason": c.reason,
        "droppable_records": p.droppable_records,
        "droppable_bytes": p.droppable_bytes,
        "checkpoint": c.checkpoint,
        "checkpoint_note": c.checkpoint_note,
        "uncleanable_offset": c.uncleanable_offset,
        "uncleanable_by": list(c.uncleanable_by),
        "last_stable_offset": c.last_stable_offset,
        "open_transactions": [
            {
                "producer_id": t.producer_id,
                "first_offset": t.first_offset,
                "completed_at": t.completed_at,
            }
            for t in c.open_transactions
        ],
        "min_cleanable_dirty_ratio": c.min_cleanable_dirty_ratio,
        "max_compaction_delay_ms": c.max_compaction_delay_ms,
        "cleaning": {
            "end_offset": p.end_offset,
            "map_slots": p.map_slots,
            "map_max_entries": p.map_max_entries,
            "map_memory": p.map_memory,
            "map_full_at_offset": p.map_full_at_offset,
            "distinct_keys": p.distinct_keys,
            "exact": p.exact,
            "records_read": p.records_read,
            "superseded": p.superseded,
            "tombstones": p.tombstones,
            "aborted": p.aborted,
            "no_key": p.no_key,
            "markers": p.markers,
            "tombstones_kept": p.tombstones_kept,
            "tombstones_to_stamp": p.tombstones_to_stamp,
            "next_delete_horizon": p.next_delete_horizon,
            "failure": p.failure,
            "top_keys": [_key_count(k) for k in p.top_keys],
        },
        "notes": list(c.notes),
    }


def _key_count(k: KeyCount) -> dict[str, Any]:
    key, encoding = lossless(k.key)
    return {"key": key, "key_encoding": encoding, "records": k.records, "droppable": k.droppable}


def partition_object(p: PartitionExplanation) -> dict[str, Any]:
    tiny = p.tiny_segments
    return {
        **p.facts,  # the partition's facts, the same keys as in every JSON output
        "path": p.path,
        "topic": p.topic,
        "partition": p.partition,
        "now": p.now,
        "settings": {s.name: _value(s.value) for s in p.settings.entries},
        "setting_sources": {
            s.name: {"source": s.source.value, "origin": s.origin} for s in p.settings.entries
        },
        "log_start_offset": p.log_start_offset,
        "log_start_offset_source": p.log_start_offset_source,
        "log_end_offset": p.log_end_offset,
        "high_watermark": p.high_watermark,
        "high_watermark_source": p.high_watermark_source,
        # "segments" is the facts' count of .log files, as in every JSON output (one word, one
        # meaning): each segment's explanation is under "by_segment", as verify's summary has
        # each partition's under "by_partition"
        "by_segment": [segment_object(s) for s in p.segments],
        "retention": retention_object(p.retention),
        "compaction": compaction_object(p.compaction),
        "tiny_segments": None
        if tiny is None
        else {
            "closed_segments": tiny.closed_segments,
            "median_batches": tiny.median_batches,
            "median_size": tiny.median_size,
            "causes": dict(tiny.causes),
            "explanation": tiny.explanation,
        },
        "notes": list(p.notes),
    }


def explain_object(result: ExplainResult) -> dict[str, Any]:
    return {
        "partitions": [partition_object(p) for p in result.partitions],
        "skipped": list(result.skipped),
    }


def render_json(result: ExplainResult) -> str:
    return json_text(explain_object(result), indent=2)


# -- text --------------------------------------------------------------------------------------


def _when(ms: int | None, drop: Collection[str] = ()) -> str:
    if ms is None or ms < 0:
        return "-"
    if "epoch ms" not in drop:
        return at(ms)
    return iso(ms) if "milliseconds" not in drop else iso(ms)[:-5] + "Z"


SEGMENT_COLUMNS_DROPPED = (
    "first timestamp",
    "batches",
    "last offset",
    "source",
    "epoch ms",
    "milliseconds",
    "size",
)
"""On a terminal too narrow for the segments table, these go, in this order, before a timestamp
is cut to ``170000…`` (``source``: where the largest timestamp was read; ``epoch ms``: the
timestamps' number, their UTC time kept; ``milliseconds``: those of the times, and the "at"
before a time retention deletes the segment; ``size``: the roll lines below say it too;
``kdump explain --format json`` has them all)."""


def _segments_table(p: PartitionExplanation, drop: Collection[str] = ()) -> TextTable:
    table = TextTable()
    shown = [
        name
        for name in ("base offset", "last offset", "size", "batches", "first timestamp")
        if name not in drop
    ]
    for name in shown:
        table.add_column(name, "right" if name != "first timestamp" else "left", whole=True)
    table.add_column("largest timestamp", whole=True)
    for name in ("rolled by", "retention"):
        table.add_column(name)
    for s in p.segments:
        f, ret = s.facts, s.retention
        if ret.deletable is not None:
            retention = f"deletable now ({ret.deletable})"
        elif ret.deletable_at is not None:
            deletable_at = _when(ret.deletable_at, drop)
            retention = deletable_at if "milliseconds" in drop else f"at {deletable_at}"
        else:
            retention = "kept"
        cells = {
            "base offset": str(f.base_offset),
            "last offset": "-" if f.last_offset is None else str(f.last_offset),
            "size": str(f.size),
            "batches": str(f.batches),
            "first timestamp": _when(f.first_timestamp, drop),
        }
        largest = _when(f.largest_timestamp, drop)
        if "source" not in drop:
            largest += f" [{f.largest_timestamp_source}]"
        rolled = "(active)" if f.active else ", ".join(s.roll.causes)
        table.add_row(*(cells[name] for name in shown), largest, rolled, retention)
    return table


def _segments_tables(
    p: PartitionExplanation, drop: Collection[str]
) -> list[tuple[str | None, TextTable]]:
    return [(None, _segments_table(p, drop))]


def _partition_lines(p: PartitionExplanation) -> list[str]:
    lines = [
        f"now: {at(p.now)}",
        f"log start offset: {p.log_start_offset} ({p.log_start_offset_source}); "
        f"log end offset: {p.log_end_offset}; "
        f"high watermark: {p.high_watermark} ({p.high_watermark_source})",
        "settings:",
    ]
    for s in p.settings.entries:
        lines.append(f"  {s.name}={s.text}  [{s.origin or s.source.value}]")
    return lines


def _roll_lines(p: PartitionExplanation) -> list[str]:
    lines = ["why each segment rolled:"]
    for s in p.segments:
        f, roll = s.facts, s.roll
        name = f"{f.base_offset:020d}"
        if f.active:
            lines.append(f"  {name} (active): " + "; ".join(roll.notes))
            continue
        lines.append(f"  {name}: {', '.join(roll.causes)}")
        for c in roll.checks:
            if c.holds or roll.causes == ("unknown",):
                lines.append(f"    {c.cause}: {'yes' if c.holds else 'no'}: {c.evidence}")
        if roll.roll_jitter_ms is not None:
            j = roll.roll_jitter_ms
            lines.append(f"    segment.jitter.ms: this segment drew {j.min_ms}..{j.max_ms} ms")
        lines.extend(f"    {note}" for note in roll.notes)
    if p.tiny_segments is not None:
        lines.append(f"  many tiny segments: {p.tiny_segments.explanation}")
    return lines


def _retention_lines(p: PartitionExplanation) -> list[str]:
    r = p.retention
    passes = ", ".join(x.replace("_", " ") for x in r.passes) or "none"
    lines = [
        f"retention (passes: {passes}):",
        f"  deletable now: {r.deletable_segments} segment(s), {byte_count(r.deletable_bytes)}; "
        f"the log start offset becomes {r.log_start_offset_after}",
    ]
    b = r.blocked_by
    if b is not None:
        lines.append(f"  held back from segment {b.base_offset} ({b.kind}): {b.reason}")
    if r.next_deletable_at is not None:
        lines.append(
            f"  next deletable: segment {r.next_deletable_base_offset} at "
            f"{at(r.next_deletable_at)} (the broker checks every "
            f"log.retention.check.interval.ms {p.settings.retention_check_interval_ms} ms)"
        )
    for s in p.segments:
        effect = s.facts.time_index_effect
        if effect is not None:
            lines.append(f"  segment {s.facts.base_offset}: {effect.explanation}")
            lines.extend(f"    verify: {finding}" for finding in effect.findings)
    lines.extend(f"  {note}" for note in r.notes)
    return lines


def _compaction_lines(c: CompactionExplanation) -> list[str]:
    p = c.preview
    verdict = "cleans it" if c.cleanable else "does not clean it"
    lines = [
        f"compaction: the cleaner {verdict}: {c.reason}",
        f"  first dirty offset: {c.first_dirty_offset} ({c.checkpoint_note})",
        f"  first uncleanable offset: {c.first_uncleanable_offset} (bounded at "
        f"{c.uncleanable_offset} by {' and '.join(c.uncleanable_by)}); "
        f"last stable offset {c.last_stable_offset}",
        f"  clean {byte_count(c.clean_bytes)}, dirty {byte_count(c.dirty_bytes)}: dirty ratio "
        f"{c.dirty_ratio:.4f} against min.cleanable.dirty.ratio {c.min_cleanable_dirty_ratio}",
    ]
    if c.max_compaction_delay_ms:
        lines.append(f"  max.compaction.lag.ms overdue by {duration(c.max_compaction_delay_ms)}")
    for t in c.open_transactions:
        state = "open" if t.completed_at is None else f"completed at {t.completed_at}, unreplicated"
        lines.append(
            f"  transaction of producer {t.producer_id} from offset {t.first_offset}: {state}"
        )
    kind = "exact keys (--deep)" if p.exact else "MD5 hashes"
    lines.append(
        f"  a cleaning now: maps {p.distinct_keys} keys ({kind}, {p.map_slots} slots, "
        f"{p.map_max_entries} at most), cleans below offset {p.end_offset}, reads "
        f"{p.records_read} records and drops {p.droppable_records} records of "
        f"{byte_count(p.droppable_bytes)}: "
        f"{p.superseded} superseded by a later record of their key, {p.tombstones} tombstones "
        f"past their delete horizon, {p.aborted} aborted, {p.no_key} without a key, "
        f"{p.markers} transaction markers"
    )
    if p.map_full_at_offset is not None:
        lines.append(
            f"  the key map fills at offset {p.map_full_at_offset}: the cleaning stops there "
            "(raise log.cleaner.dedupe.buffer.size or --offset-map-bytes to see further)"
        )
    if p.tombstones_kept:
        lines.append(
            f"  {p.tombstones_kept} tombstone(s) kept: {p.tombstones_to_stamp} get a delete "
            "horizon of now + delete.retention.ms from this cleaning"
            + (f"; the next horizon passes at {at(p.next_delete_horizon)}"
               if p.next_delete_horizon is not None else "")
        )  # fmt: skip
    lines.extend(
        f"  key {k.shown!r}: {k.records} records, {k.droppable} droppable" for k in p.top_keys
    )
    lines.extend(f"  {note}" for note in c.notes)
    return lines


def render_text(result: ExplainResult, out: IO[str], terminal: bool) -> None:
    console = TextConsole(out, terminal)
    say = console.say

    for i, p in enumerate(result.partitions):
        if i:
            say("")
        where = "" if p.topic is None else f" (topic {p.topic}, partition {p.partition})"
        say(f"{p.path}{where}", "bold")
        for line in _partition_lines(p):
            say(line)
        console.fitted_tables(partial(_segments_tables, p), SEGMENT_COLUMNS_DROPPED)
        for line in _roll_lines(p) + _retention_lines(p):
            say(line)
        if p.compaction is not None:
            for line in _compaction_lines(p.compaction):
                say(line)
        for note in p.notes:
            say(f"note: {note}", "yellow")
    for skipped in result.skipped:
        say(f"skipped: {skipped}", "yellow")
