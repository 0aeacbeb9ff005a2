"""After writing: `kdump verify`'s index checks on the new files, before they replace anything.

The files checked are the staged ones (written and fsynced, byte for byte what the real names
will hold). They are compared with the log as the rebuild walked it (the ``LogScan`` the plan
gathered in the same pass), so a rebuild costs one pass over the log, not two; trim-index, which
does not read the log, scans it here. Findings name the real files.
"""

from __future__ import annotations

from kdump.checks.findings import Finding
from kdump.checks.indexes import check_offset_index, check_time_index
from kdump.checks.log import LogScan, scan_log
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.checks.txn import check_txn_index
from kdump.format.index import OffsetIndex
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.repair.apply import StagedFile
from kdump.repair.plan import OFFSET_INDEX, TIME_INDEX, TXN_INDEX, SegmentPlan, mapped
from kdump.repair.rebuild import IndexConfig
from kdump.segment import FileRecords


def _scan(plan: SegmentPlan, options: VerifyOptions) -> LogScan:
    if plan.scan is not None:
        return plan.scan
    seg = plan.segment
    with mapped(seg.log_path) as buf:
        ignored = FindingSink(options.max_findings_per_code)
        return scan_log(
            FileRecords(seg.log_path, buf), seg.base_offset, options, ignored, str(seg.directory)
        )


def recheck_staged(
    plan: SegmentPlan, staged: list[StagedFile], config: IndexConfig
) -> list[Finding]:
    """verify's offset, time and transaction index checks of the staged new index files."""
    checked = [s for s in staged if s.change.kind in (OFFSET_INDEX, TIME_INDEX, TXN_INDEX)]
    if not checked:
        return []
    options = VerifyOptions(
        index_interval_bytes=config.index_interval_bytes, max_index_size=config.max_index_size
    )
    scan = _scan(plan, options)
    sink = FindingSink(options.max_findings_per_code)
    base = plan.segment.base_offset
    for s in checked:
        with mapped(s.written_to) as buf:
            name = str(s.final)
            if s.change.kind == OFFSET_INDEX:
                check_offset_index(
                    OffsetIndex(buf, base, name), scan, sink, options, plan.is_active
                )
            elif s.change.kind == TIME_INDEX:
                check_time_index(TimeIndex(buf, base, name), scan, sink, options, plan.is_active)
            else:
                check_txn_index(TransactionIndex(buf, base, name), scan, sink)
    return sink.close()
