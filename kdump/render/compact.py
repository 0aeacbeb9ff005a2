"""``kdump compact``'s text: the cleaner's decision, then what one cleaning keeps and drops."""

from __future__ import annotations

from collections.abc import Iterator

from kdump.compact import Compaction


def render_text(done: Compaction) -> Iterator[str]:
    r, e = done.result, done.explanation
    stats = r.stats
    yield f"{done.log.location}"
    if not done.log.settings.compact:
        yield "  cleanup.policy has no compact: the broker's cleaner never takes this partition"
    yield f"  cleaner: {'would clean' if e.cleanable else 'would not clean'} now: {e.reason}"
    yield f"  {e.checkpoint_note}"
    yield (
        f"  cleanable range: [{r.first_dirty_offset}, {r.first_uncleanable_offset}) "
        f"(bounded by {', '.join(e.uncleanable_by)})"
    )
    if r.map_full_at_offset is not None:
        yield (
            f"  key map full at offset {r.map_full_at_offset} ({r.distinct_keys} keys, at most "
            f"{r.map_max_entries}): a partial pass, up to offset {r.end_offset}"
        )
    else:
        yield (
            f"  key map holds the dirty section: {r.distinct_keys} keys, "
            f"at most {r.map_max_entries}"
        )
    if r.failure is not None:
        yield f"  the cleaning fails: {r.failure} (the broker marks the partition uncleanable)"
        return
    for g in r.groups:
        bases = ", ".join(str(b) for b in g.segments)
        yield (
            f"  group [{bases}]: {g.records_before} -> {g.records_after} records, "
            f"{g.bytes_before} -> {g.bytes_after} bytes"
        )
    yield (
        f"  dropped: {stats.superseded} superseded, {stats.tombstones} tombstones, "
        f"{stats.aborted} aborted, {stats.invalid_messages_read} without key, "
        f"{stats.markers} markers"
    )
    yield (
        f"  kept: {stats.tombstones_kept} tombstones ({stats.tombstones_to_stamp} stamped with a "
        f"delete horizon now), {stats.empty_batches} empty batches (producer state)"
    )
    yield (
        f"  partition: {done.records_before} -> {done.records_after} records, "
        f"{done.bytes_before} -> {done.bytes_after} bytes"
    )
    yield f"  cleaner-offset-checkpoint after: {done.checkpoint_after}"
    for path in done.written:
        yield f"  wrote {path}"
    for path in done.backups:
        yield f"  kept {path}"
