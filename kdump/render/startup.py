"""What `kdump startup` prints: for people, each log dir's load in sentences; one JSON document
(the shape issue 42 gives: ``log_dirs`` with their partitions, bytes and estimated seconds).

Every partition path and file name is read from disk: the console (text) and ``json_text``
(JSON) write them by the one rule of kdump.untrusted.
"""

from __future__ import annotations

from typing import IO, Any

from kdump.render.console import TextConsole
from kdump.startup.advice import Advice
from kdump.startup.estimate import Estimate
from kdump.startup.plan import LogDirStartup, PartitionStartup, StartupResult
from kdump.units import seconds_range as span
from kdump.units import size
from kdump.untrusted import json_text

LISTED = 50
"""Partitions with work listed by name in text, per log dir (JSON lists every one)."""


def _offsets(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def partition_lines(p: PartitionStartup) -> list[str]:
    """What the broker does to one partition, in sentences (empty: it only opens it)."""
    out = []
    if p.directory == "delete":
        out.append("a deleted partition's directory: loaded without recovery, then deleted")
    elif p.directory == "stray":
        out.append("a stray's directory (renamed -stray before): loaded and kept aside")
    if p.settlement:
        deleted, renamed = len(p.settlement.deleted), len(p.settlement.renamed)
        out.append(
            f"settles the files an interrupted delete, compaction or swap left: deletes "
            f"{deleted}, renames {renamed} (kdump recover does it now)"
        )
    if p.orphan_indexes:
        out.append(
            f"deletes {len(p.orphan_indexes)} index file(s) with no .log: "
            + ", ".join(p.orphan_indexes[:5])
        )
    for r in p.recoveries:
        why = r.why
        if why.startswith("unflushed"):
            why = (
                "the raft layer recovers every segment"
                if p.raft
                else f"unflushed: from the segment holding the recovery point {p.recovery_point}"
            )
            if r.again:
                why += ", again: it was recovered at open"
        out.append(
            f"recovers segment {r.base_offset} ({why}): reads {size(r.bytes)} in "
            f"{r.batches} batches, rebuilds its indexes"
        )
    for t in p.truncations:
        out.append(
            f"truncates segment {t.segment} to offset {t.offset}: cuts {size(t.bytes)} "
            "(an invalid batch)"
        )
    if p.segments_deleted:
        out.append(
            f"then deletes the {len(p.segments_deleted)} later segment(s) "
            f"{_offsets(p.segments_deleted)} ({size(p.bytes_deleted)}): recovery deletes "
            "every segment after a cut"
        )
    for replay in p.replays:
        source = (
            f"snapshot {replay.snapshot}"
            if replay.snapshot is not None
            else f"the log start offset {replay.from_offset} (no usable snapshot)"
        )
        out.append(
            f"replays producer state from {source} up to offset {replay.to_offset}: "
            f"{replay.batches} batches, {size(replay.bytes)}"
        )
    if p.producer_state_dropped:
        out.append(
            "has no producer snapshot after a clean shutdown: it skips the rebuild and starts "
            "with no producer state (idempotent producers' sequences are forgotten)"
        )
    if p.time_indexes_emptied:
        out.append(
            f"creates an empty .timeindex for segment(s) {_offsets(p.time_indexes_emptied)} "
            "(not rebuilt: time retention then goes by the .log's mtime, and a lookup by time "
            "reads the segment from its start)"
        )
    if p.stray is not None:
        out.append(f"then moves it aside as a stray once it has the metadata image: {p.stray}")
    if p.failure is not None:
        out.append(f"FAILS: {p.failure}; the broker stops starting")
    return out


def _name(p: PartitionStartup) -> str:
    return p.log.storage.name


def log_dir_lines(d: LogDirStartup, options_source: str) -> list[str]:
    """A log dir's load: the partitions with more to do than re-read their unflushed segments
    each by name, slowest first (at most ``LISTED``), the others counted."""
    clean = (
        "clean shutdown (.kafka_cleanshutdown): no log recovers but for its indexes"
        if d.clean_shutdown
        else "no .kafka_cleanshutdown (an unclean shutdown): every log recovers from its "
        "recovery point"
    )
    out = [f"{d.path}: {clean}"]
    for name in d.not_partitions:
        out.append(
            f"  FAILS: the directory {name} is not in the form of topic-partition: the broker "
            "stops starting (a log dir holds Kafka's data alone: move it away)"
        )
    if not d.partitions:
        return [*out, "  no logs to load"]
    out.append(
        f"  LogManager loads {len(d.partitions)} log(s) with {d.recovery_threads} recovery "
        f"thread(s) (num.recovery.threads.per.data.dir: {options_source}); "
        f"{len(d.recovering)} recover"
    )
    notable = sorted(
        (p for p in d.partitions if p.has_work and not p.only_unflushed),
        key=lambda p: -p.seconds.high,
    )
    for p in notable[:LISTED]:
        lines = partition_lines(p)
        out.append(f"  {_name(p)}: {lines[0]}")
        out += [f"    {line}" for line in lines[1:]]
    if len(notable) > LISTED:
        out.append(f"  … {len(notable) - LISTED} more partition(s) with work (--format json)")
    plain = [p for p in d.partitions if p.only_unflushed]
    if plain:
        out.append(
            f"  {len(plain)} log(s) re-read their unflushed segments only: "
            f"{size(sum(p.bytes_to_recover for p in plain))} in "
            f"{sum(p.work.recover_batches for p in plain)} batches"
        )
    quiet = sum(1 for p in d.partitions if not p.has_work)
    if quiet:
        out.append(f"  {quiet} log(s) load with nothing to recover or rebuild")
    replayed = sum(p.work.replay_batches for p in d.partitions)
    out.append(
        f"  reads {size(d.bytes_to_recover)} to recover and {replayed} batches of producer "
        f"state: about {span(*d.seconds)}"
    )
    return out


def render_text(result: StartupResult, advice: list[Advice], out: IO[str], terminal: bool) -> None:
    console = TextConsole(out, terminal)
    say = console.say
    source = result.options.recovery_threads_source
    for i, d in enumerate(result.log_dirs):
        if i:
            say("")
        for line in log_dir_lines(d, source):
            say(line)
    metadata = result.metadata
    if metadata is not None:
        say("")
        lines = partition_lines(metadata) or ["nothing to recover"]
        say(
            f"metadata log {metadata.log.location} (the raft layer loads it first, as after an "
            f"unclean shutdown, on every start): {lines[0]}"
        )
        for line in lines[1:]:
            say(f"  {line}")
        say(f"  about {span(*metadata.seconds)}")
    if result.log_dirs:
        say("")
        slowest = result.slowest
        where = "" if slowest is None else f"; the slowest log dir: {slowest.path}"
        say(
            f"estimated load time: {span(*result.seconds)}{where} (rates measured on "
            f"{result.options.calibration.measured})",
            "bold",
        )
    if advice:
        say("to make it shorter:")
        for a in advice:
            say(f"  - {a.text}")


# -- JSON --------------------------------------------------------------------------------------


def partition_object(p: PartitionStartup) -> dict[str, Any]:
    return {
        "partition": p.facts,
        "recovers": p.recovers,
        "segments_to_recover": p.segments_to_recover,
        "bytes_to_recover": p.bytes_to_recover,
        "indexes_rebuilt": p.indexes_rebuilt,
        "producer_state_from": p.producer_state_from,
        "truncates_to": p.truncates_to,
        "bytes_truncated": p.bytes_truncated,
        "recoveries": [
            {
                "segment": r.base_offset,
                "why": r.why,
                "again": r.again,
                "bytes": r.bytes,
                "batches": r.batches,
            }
            for r in p.recoveries
        ],
        "producer_state_replays": [
            {
                "snapshot": r.snapshot,
                "from": r.from_offset,
                "to": r.to_offset,
                "bytes": r.bytes,
                "batches": r.batches,
            }
            for r in p.replays
        ],
        "producer_state_dropped": p.producer_state_dropped,
        "segments_deleted": p.segments_deleted,
        "snapshots_deleted": p.snapshots_deleted,
        "snapshots_written": p.snapshots_written,
        "time_indexes_emptied": p.time_indexes_emptied,
        "settled": {
            "deleted": [name for name, _ in p.settlement.deleted],
            "renamed": [list(pair) for pair in p.settlement.renamed],
        },
        "orphan_indexes": p.orphan_indexes,
        "recovery_point": p.recovery_point,
        "directory": p.directory,
        "stray": p.stray,
        "failure": p.failure,
        "estimated_seconds": _rounded(p.seconds),
        "typical_seconds": round(p.seconds.typical, 3),
    }


def _rounded(estimate: Estimate) -> list[float]:
    """An estimate in JSON: ``[low, high]``, the typical time beside it (``typical_seconds``)."""
    return [round(estimate.low, 3), round(estimate.high, 3)]


def result_object(result: StartupResult, advice: list[Advice]) -> dict[str, Any]:
    options = result.options
    metadata = result.metadata
    return {
        "log_dirs": [
            {
                "path": d.path,
                "clean_shutdown": d.clean_shutdown,
                "recovery_threads": d.recovery_threads,
                "partitions": [partition_object(p) for p in d.partitions],
                "bytes_to_recover": d.bytes_to_recover,
                "estimated_seconds": _rounded(d.seconds),
                "typical_seconds": round(d.seconds.typical, 3),
                "metadata_log": None if d.metadata is None else partition_object(d.metadata),
                "not_partitions": d.not_partitions,
            }
            for d in result.log_dirs
        ],
        "estimated_seconds": _rounded(result.seconds),
        "typical_seconds": round(result.seconds.typical, 3),
        "metadata_log_seconds": None if metadata is None else _rounded(metadata.seconds),
        "recovery_threads_source": options.recovery_threads_source,
        "calibration": options.calibration.measured,
        "advice": [a.to_dict() for a in advice],
        "errors": [str(e) for e in result.errors],
    }


def render_json(result: StartupResult, advice: list[Advice]) -> str:
    return json_text(result_object(result, advice), indent=2)
