"""After writing: run `kdump verify`'s checks on the segments whose files were written and keep
the findings about those new files."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

from kdump.checks.findings import Finding
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import verify_segment
from kdump.repair.apply import Written
from kdump.repair.rebuild import IndexConfig
from kdump.segment import LOG_SUFFIX, SEGMENT_SUFFIXES, LogSegment


def recheck_segment(
    segment: LogSegment,
    is_active: bool,
    written: list[Written],
    config: IndexConfig,
) -> list[Finding]:
    """verify_segment's findings about the files in ``written``.

    Written elsewhere (--output-dir), the segment is put together in a scratch directory of
    symbolic links (new files where written, the originals otherwise) and the findings' paths are
    mapped back.
    """
    options = VerifyOptions(
        index_interval_bytes=config.index_interval_bytes, max_index_size=config.max_index_size
    )
    new_paths = {w.path for w in written}
    if all(w.path.parent == segment.directory for w in written):
        findings = verify_segment(segment, options, is_active)
        return [f for f in findings if Path(f.path) in new_paths]
    by_suffix = {w.path.name[20:]: w.path for w in written}
    with tempfile.TemporaryDirectory(prefix="kdump-recheck-") as scratch:
        back: dict[str, Path] = {}
        for suffix in SEGMENT_SUFFIXES:
            source = by_suffix.get(suffix, segment.path(suffix))
            if not source.exists():
                continue
            link = Path(scratch) / segment.path(suffix).name
            os.symlink(os.path.abspath(source), link)
            back[str(link)] = source
        if LOG_SUFFIX not in by_suffix and not segment.log_path.exists():
            return []
        findings = verify_segment(
            LogSegment(Path(scratch), segment.base_offset), options, is_active
        )
    out = []
    for f in findings:
        real = back.get(f.path)
        if real is not None and real in new_paths:
            fix = f.fix.replace(scratch, str(segment.directory)) if f.fix else f.fix
            out.append(dataclasses.replace(f, path=str(real), fix=fix))
    return out
