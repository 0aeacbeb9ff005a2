"""Checks of a remote partition as a whole (those of each segment are kdump.checks'): uploads
left incomplete, Pinterest's watermark, and the boundary between a partition's remote segments
and the same partition's local log."""

from __future__ import annotations

from kdump.checks.findings import Finding, Severity
from kdump.checks.sink import FindingSink
from kdump.errors import KdumpError, StoreError
from kdump.log_scan import LogScan
from kdump.storage.remote.layouts import AIVEN, KAFKA_RSM, WATERMARK, RemotePartition
from kdump.storage.tiered import TieredStorage

_WRITES = {
    AIVEN: ("log", "indexes", "rsm-manifest"),
    KAFKA_RSM: ("log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint"),
}


def check_remote_partition(
    storage: TieredStorage, scans: dict[int, LogScan], sink: FindingSink
) -> None:
    partition = storage.partition
    for segment in partition.segments:
        have = {suffix for suffix, _, _ in segment.objects}
        wanted = _WRITES.get(partition.layout, ("log",))
        missing = [s for s in wanted if s not in have]
        if partition.layout == AIVEN and "indexes" in missing and have & {"index", "timeindex"}:
            missing.remove("indexes")  # before 2023-10: one object per index
        if missing:
            sink.add(
                Finding(
                    "REMOTE_SEGMENT_INCOMPLETE",
                    Severity.WARNING,
                    segment.url("log"),
                    f"segment {segment.stem} has no {', '.join('.' + m for m in missing)} "
                    "object: an upload that did not finish (the remote storage manager writes "
                    f"{', '.join('.' + w for w in wanted)} in that order and deletes them when a "
                    "copy fails); Kafka never reads it",
                    offset=segment.base_offset,
                )
            )
    if partition.extra(WATERMARK) is not None:
        _check_watermark(storage, sink)


def _check_watermark(storage: TieredStorage, sink: FindingSink) -> None:
    """Pinterest's ``offset.wm``: the 20-digit base offset of the last segment uploaded."""
    partition: RemotePartition = storage.partition
    url = storage.location_of(WATERMARK)
    try:
        text = storage.read_bytes(WATERMARK, 1 << 10).decode("ascii", "replace").strip()
    except StoreError:
        raise
    except KdumpError as e:
        sink.add(Finding("REMOTE_WATERMARK_INVALID", Severity.WARNING, url, e.reason))
        return
    if not text.isdigit():
        sink.add(
            Finding(
                "REMOTE_WATERMARK_INVALID",
                Severity.WARNING,
                url,
                f"{text[:40]!r} is not a base offset (20 digits)",
            )
        )
        return
    mark = int(text)
    bases = {s.base_offset for s in partition.segments if s.object("log") is not None}
    if mark not in bases:
        last = max(bases, default=None)
        sink.add(
            Finding(
                "REMOTE_WATERMARK_MISSING_SEGMENT",
                Severity.ERROR if last is None or mark > last else Severity.WARNING,
                url,
                f"offset.wm names segment {mark:020d}.log, which is not in the bucket "
                f"(last segment there: {'none' if last is None else f'{last:020d}.log'}); "
                "consumers reading up to the watermark miss it",
                offset=mark,
            )
        )


def boundary_findings(
    remote_spans: list[tuple[int, int, int]],
    local_spans: list[tuple[int, int, int]],
    remote_name: str,
    local_name: str,
) -> list[Finding]:
    """Where a partition's remote segments meet its local log: offsets in neither (a gap at the
    boundary, data lost), and segments both hold that disagree on where they end."""
    if not remote_spans or not local_spans:
        return []
    out = []
    remote_end = max(last for _, _, last in remote_spans)
    local_first = min(first for _, first, _ in local_spans)
    if local_first > remote_end + 1:
        out.append(
            Finding(
                "TIERED_BOUNDARY_GAP",
                Severity.ERROR,
                remote_name,
                f"offsets {remote_end + 1}..{local_first - 1} are neither in remote storage "
                f"(which ends at {remote_end}) nor in the local log {local_name} (which starts "
                f"at {local_first}): a consumer cannot read them",
                offset=remote_end + 1,
            )
        )
    remote_by_base: dict[int, set[int]] = {}
    for base, _, last in remote_spans:
        remote_by_base.setdefault(base, set()).add(last)
    for base, _, last in local_spans:
        ends = remote_by_base.get(base)
        if ends is not None and last not in ends:
            out.append(
                Finding(
                    "TIERED_OVERLAP_MISMATCH",
                    Severity.WARNING,
                    remote_name,
                    f"segment {base} ends at offset {last} in {local_name}, at "
                    f"{', '.join(map(str, sorted(ends)))} in remote storage: the copies differ",
                    offset=base,
                )
            )
    overlap = [s for s in local_spans if s[1] <= remote_end]
    if overlap and not out:
        out.append(
            Finding(
                "TIERED_OVERLAP",
                Severity.INFO,
                remote_name,
                f"{len(overlap)} local segment(s) of {local_name} hold offsets remote storage "
                "holds too (normal: local retention deletes them later)",
                offset=overlap[0][1],
            )
        )
    return out


__all__ = ["boundary_findings", "check_remote_partition"]
