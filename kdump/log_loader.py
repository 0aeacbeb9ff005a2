"""What the broker's LogLoader does first, before it loads a partition's segments: it settles the
files an interrupted delete, compaction or split left (``LogLoader.load`` and
``removeTempFilesAndCollectSwapFiles``):

1. every ``.deleted`` file is deleted (retention, a truncation or a compaction had removed
   it from the log; its asynchronous delete did not happen), but a KRaft snapshot's
   ``.checkpoint.deleted``, which the metadata log's own recovery settles;
2. a ``.swap`` file at or above the lowest ``.cleaned`` file's offset is deleted (a split that
   did not finish, KAFKA-6264), then every ``.cleaned`` file (a compaction's output that was
   never swapped in: the segments it was to replace are still in place);
3. the remaining ``.swap`` files complete their swap: every other file whose name starts with an
   offset from the lowest swapped segment's base offset up to the end of the highest one (its
   next offset) is deleted (the segments the compaction or split replaced), and each ``.swap``
   file is renamed without its suffix.

``settle`` works this out from a partition's file names (and the ``.log.swap`` files' batches);
verify says it, and ``kdump recover`` does it (each deleted file kept as a backup).
"""

from __future__ import annotations

from kdump.format.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    KRAFT_SNAPSHOT_DELETED_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    is_kdump_leftover,
    offset_in_name,
    parse_kept_log,
)
from kdump.storage.base import Storage


class Settlement:
    """What LogLoader does to a partition's leftover files at startup: the names it deletes,
    each with why, and the ``.swap`` files it renames (old name, new name), in that order."""

    def __init__(self) -> None:
        self.deleted: list[tuple[str, str]] = []
        self.renamed: list[tuple[str, str]] = []
        self.swapped: tuple[int, int] | None = None
        """The offsets the completed swaps cover (first, next): segments there are replaced."""

    def __bool__(self) -> bool:
        return bool(self.deleted or self.renamed)

    def why(self, name: str) -> str | None:
        """What the broker does with ``name`` at startup, or None (nothing)."""
        for deleted, why in self.deleted:
            if deleted == name:
                return why
        for old, new in self.renamed:
            if old == name:
                return f"the broker completes the swap at startup: renamed to {new}"
        return None


def settle(storage: Storage) -> Settlement:
    """LogLoader's first three passes over the files of the partition in ``storage``."""
    names = sorted(storage.files())
    out = Settlement()
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    swaps = [n for n in names if n.endswith(SWAP_SUFFIX)]
    lowest_cleaned = min((_offset(n) for n in cleaned), default=None)
    for name in names:
        # a KRaft snapshot marked for deletion is KafkaMetadataLog's to delete, not LogLoader's
        if name.endswith(DELETED_SUFFIX) and not name.endswith(KRAFT_SNAPSHOT_DELETED_SUFFIX):
            out.deleted.append((name, _DELETED))
    valid = []
    for name in swaps:
        if lowest_cleaned is not None and _offset(name) >= lowest_cleaned:
            out.deleted.append((name, _SPLIT))
        else:
            valid.append(name)
    out.deleted += [(name, _CLEANED) for name in cleaned]
    logs = [n for n in valid if n.removesuffix(SWAP_SUFFIX).endswith(LOG_SUFFIX)]
    if logs:
        first = min(_offset(n) for n in logs)
        after = max(_next_offset(storage, n) for n in logs)
        out.swapped = (first, after)
        replaced = f"a segment the swap of offsets {first}..{after - 1} replaces"
        for name in names:
            offset = offset_in_name(name)
            if name in swaps or offset is None or not first <= offset < after:
                continue
            if name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX):
                continue  # already deleted above
            if is_kdump_leftover(name) or parse_kept_log(name) is not None:
                continue  # kdump's own: not part of the partition
            out.deleted.append((name, f"the broker deletes it at startup: {replaced}"))
    out.renamed = [(name, name.removesuffix(SWAP_SUFFIX)) for name in valid]
    return out


_DELETED = (
    "the broker deletes it at startup: a file that retention, a truncation or a compaction "
    "had already removed from the log, whose delete did not happen"
)
_SPLIT = (
    "the broker deletes it at startup: part of a segment split that did not finish (at or "
    "above a .cleaned file's offset, KAFKA-6264)"
)
_CLEANED = (
    "the broker deletes it at startup: a compaction's output that was never swapped in (the "
    "segments it was to replace are still in place)"
)


def _offset(name: str) -> int:
    offset = offset_in_name(name)
    return -1 if offset is None else offset


def _next_offset(storage: Storage, name: str) -> int:
    """A swapped segment's next offset (LogSegment.readNextOffset): after its last batch, or
    its base offset when it holds none."""
    log = storage.open_log(name)
    try:
        last = None
        walk = log.walk(0, None, check_crc=False)
        for run in walk:
            last = run.last_offset[-1]
    finally:
        log.close()
    return _offset(name) if last is None else last + 1


__all__ = ["Settlement", "settle"]
