"""After writing: `kdump verify`'s index checks on the new files, before they replace anything.

The files checked are the staged ones (written and fsynced, byte for byte what the real names
will hold). They are compared with the log's batches up to where the plan keeps the log, read
by one more walk over the headers only (no CRCs; what the index checks need is gathered, so
memory stays flat). Findings name the real files.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack

from kdump.checks.findings import Finding
from kdump.checks.gather import IndexGather, index_keys
from kdump.checks.indexes import check_offset_index, check_time_index
from kdump.checks.log import gather_log, scan_log
from kdump.checks.sink import FindingSink
from kdump.checks.txn import check_txn_index
from kdump.crc import Buffer
from kdump.format.index import OffsetIndex
from kdump.format.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.log_scan import LogScan
from kdump.repair.apply import StagedFile
from kdump.repair.plan import OFFSET_INDEX, TIME_INDEX, TXN_INDEX, SegmentPlan, mapped
from kdump.repair.rebuild import IndexConfig
from kdump.storage.records import FileRecords


def recheck_staged(
    plan: SegmentPlan, staged: list[StagedFile], config: IndexConfig
) -> list[Finding]:
    """verify's offset, time and transaction index checks of the staged new index files,
    against the log's batches up to where the plan keeps it (one more walk, headers only)."""
    checked = [s for s in staged if s.change.kind in (OFFSET_INDEX, TIME_INDEX, TXN_INDEX)]
    if not checked:
        return []
    options = config.verify_options
    sink = FindingSink(options.max_findings_per_code)
    seg = plan.segment
    base = seg.base_offset if plan.new_base is None else plan.new_base
    with ExitStack() as stack:
        views = {
            s.change.kind: (stack.enter_context(mapped(s.written_to)), str(s.final))
            for s in checked
        }
        offset_index = time_index = None
        if OFFSET_INDEX in views:
            offset_index = OffsetIndex(views[OFFSET_INDEX][0], base, views[OFFSET_INDEX][1])
        if TIME_INDEX in views:
            time_index = TimeIndex(views[TIME_INDEX][0], base, views[TIME_INDEX][1])
        scan = _gathered_by_rebuild(plan, offset_index, time_index)
        if scan is None:
            gather = IndexGather(offset_index, time_index)
            log = FileRecords(str(seg.log_path), stack.enter_context(mapped(seg.log_path)))
            scan = gather_log(log, base, plan.valid_end, gather)
        if offset_index is not None:
            check_offset_index(offset_index, scan, sink, options, plan.is_active)
        if time_index is not None:
            check_time_index(time_index, scan, sink, options, plan.is_active)
        if TXN_INDEX in views:
            buf, name = views[TXN_INDEX]
            check_txn_index(TransactionIndex(buf, base, name), scan, sink)
    return sink.close()


def _gathered_by_rebuild(
    plan: SegmentPlan, offset_index: OffsetIndex | None, time_index: TimeIndex | None
) -> LogScan | None:
    """What the rebuild's own walk gathered, where it serves: its keys are those of the staged
    files, as written and read back (else None, and the log is walked again)."""
    scan = plan.scan
    if scan is None or not isinstance(scan.gather, IndexGather):
        return None
    gather = scan.gather
    if offset_index is not None and index_keys(offset_index) != gather.wanted_positions:
        return None
    if time_index is not None and index_keys(time_index) != gather.wanted_offsets:
        return None
    return scan


def recheck_segment(
    log_path: str,
    log: Buffer,
    base_offset: int,
    indexes: Mapping[str, Buffer],
    config: IndexConfig,
) -> list[Finding]:
    """verify's checks of a whole new segment (a compaction's, staged: ``log`` and each index
    kind's bytes in ``indexes``), findings named after ``log_path`` and its siblings: the log
    walked once with every check (CRCs, offsets, sizes), then each index against it."""
    options = config.verify_options
    sink = FindingSink(options.max_findings_per_code)
    stem = log_path.removesuffix(LOG_SUFFIX)
    offset_index = time_index = None
    if OFFSET_INDEX in indexes:
        offset_index = OffsetIndex(indexes[OFFSET_INDEX], base_offset, stem + INDEX_SUFFIX)
    if TIME_INDEX in indexes:
        time_index = TimeIndex(indexes[TIME_INDEX], base_offset, stem + TIME_INDEX_SUFFIX)
    records = FileRecords(log_path, log)
    directory = log_path.rsplit("/", 1)[0]
    scan = scan_log(
        records, base_offset, options, sink, directory, IndexGather(offset_index, time_index)
    )
    if offset_index is not None:
        check_offset_index(offset_index, scan, sink, options, False)
    if time_index is not None:
        check_time_index(time_index, scan, sink, options, False)
    if TXN_INDEX in indexes:
        txn = TransactionIndex(indexes[TXN_INDEX], base_offset, stem + TXN_INDEX_SUFFIX)
        check_txn_index(txn, scan, sink)
    return sink.close()
