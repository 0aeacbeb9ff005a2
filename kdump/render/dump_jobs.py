"""A dump in ``--jobs N`` processes (issue 44 point 8): the files, and each local log cut into
pieces of about ``PIECE_BYTES`` at batch boundaries, rendered by forked workers that write
their pieces to standard output themselves, each in its turn (kdump.forked.write_in_turn): the
parent passes the turn and copies no byte. The output is the same as one process's: the same
lines in the same order, the same summaries and exit code.

What crosses a piece's boundary is handed to the next piece: the offset of the last record
rendered before it (the text dump's non-consecutive offsets check), and a file's end: an error
that ends a file's dump in one piece drops the file's later pieces, as one process stops there.
"""

from __future__ import annotations

import io
import os
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kdump.errors import KdumpError
from kdump.forked import Piece, can_fork, write_in_turn
from kdump.format.names import CHECKPOINT_SUFFIX, LOG_SUFFIX
from kdump.format.walk import LogWalk
from kdump.parallel import run_in, run_processes
from kdump.progress import Progress
from kdump.render import runs
from kdump.render.lines import ERR, Chunk, DumpOptions, DumpProblems, Line, LogSpan
from kdump.storage.base import StoredFile
from kdump.tuples import NamedTuple
from kdump.untrusted import ESCAPE_NAMES

PIECE_BYTES = 4 << 20
"""Bytes of log a piece holds: small next to a worker's buffer (kdump.forked.BUFFER_BYTES: a
piece's lines fit it, so a worker renders the next while the other writes), large next to a
turn's cost (a few system calls)."""


class PieceReport(NamedTuple):
    """What a piece's dump collected, and whether its file's dump ended with it (an error)."""

    problems: DumpProblems
    size: int
    """Bytes of log (or of the file) the piece covered: for progress."""
    ended: bool


def why_one_process(jobs: int, size: int) -> str | None:
    """Why ``--jobs N`` cannot write in turn here, or would not pay for ``size`` bytes of files
    (then the dump runs in one process), or None."""
    if jobs <= 1:
        return None
    if not can_fork():
        return "this system cannot fork workers"
    try:
        fds = (sys.stdout.fileno(), sys.stderr.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        fds = (-1, -1)
    if fds != (1, 2):
        return "standard output and error are not files this process can hand to its workers"
    if os.isatty(1):
        # a terminal shows a record's bytes escaped (kdump.commands.output), and is no faster
        # written by two
        return "standard output is a terminal"
    if len(os.sched_getaffinity(0)) < 2:
        return "this process may run on one CPU only"
    if size < PIECE_BYTES:
        # one process dumps them in a few milliseconds: about what starting workers costs
        return f"the files hold less than a piece of work ({PIECE_BYTES >> 20} MiB) to share"
    return None


def splittable(file: StoredFile) -> bool:
    """A log on local disk: cut into pieces (a remote one is read whole by one worker)."""
    name = file.name
    return file.storage.local_path is not None and name.endswith((LOG_SUFFIX, CHECKPOINT_SUFFIX))


def pieces(files: Sequence[StoredFile], opts: DumpOptions, deep_text: bool) -> list[Piece]:
    """The run's pieces, in output order: each file whole, a local log in spans (``deep_text``:
    the text dump with records, whose spans carry the last record's offset before them)."""
    out: list[Piece] = []
    for i, file in enumerate(files):
        spans = _spans(file, opts, deep_text) if splittable(file) else None
        if not spans:
            out.append(Piece(i, (i, None)))
        else:
            out.extend(Piece(i, (i, span)) for span in spans)
    return out


def _spans(file: StoredFile, opts: DumpOptions, deep_text: bool) -> list[LogSpan]:
    """A log's spans of about PIECE_BYTES, cut where batches start: a walk of its headers (no
    CRC, no record; the walk the dump reads ends where it ends). One span where the log is
    small, or cannot be read here (its dump says why)."""
    try:
        log = file.open_log()
    except (KdumpError, OSError):
        return []
    try:
        size = log.size
        if size <= PIECE_BYTES:
            return []
        cuts: list[tuple[int, int]] = []  # (position, last record offset before it)
        walk = LogWalk(
            log.buf, log.path, 0, opts.max_bytes, check_crc=False,
            max_batch_bytes=opts.max_batch_bytes, pager=log.pager(),
        )  # fmt: skip
        target = PIECE_BYTES
        for run in walk:
            while run.n > 1 and target < run.end:
                k = max(1, bisect_left(run.position, target))
                if k >= run.n:
                    break
                before = _last_record_offset(log, run, k) if deep_text else -1
                if before is not None:
                    cuts.append((run.position[k], before))
                target = run.position[k] + PIECE_BYTES
    finally:
        log.close()
    if not cuts:
        return []
    starts = [(0, -1), *cuts]
    ends: list[int | None] = [position for position, _ in cuts]
    ends.append(None)
    last = len(starts) - 1
    return [
        LogSpan(start, end, n == 0, n == last, before)
        for n, ((start, before), end) in enumerate(zip(starts, ends, strict=True))
    ]


def _last_record_offset(log: Any, run: Any, k: int) -> int | None:
    """The offset of the last record of the batches of ``run`` before its batch ``k``: where
    the text dump's consecutive-offset check stands at batch k (None: not known here, or
    none of them holds a record that reads; then the log is not cut there)."""
    for i in range(k - 1, -1, -1):
        last = None
        try:
            for record in log.records(run.batch(i)):
                last = record.offset
        except KdumpError:
            return None  # the dump ends its file at this batch: no later piece is written
        if last is not None:
            return last
    return None


def render_piece(
    files: Sequence[StoredFile],
    opts: DumpOptions,
    whole: Callable[[StoredFile, DumpOptions, DumpProblems], Iterator[Line | Chunk]],
    span_dump: Callable[[StoredFile, DumpOptions, DumpProblems, LogSpan], Iterator[Line | Chunk]],
    work: tuple[int, LogSpan | None],
) -> Iterator[tuple[int, Any]]:
    """A worker's piece: its lines as ``(1, bytes)`` and ``(2, bytes)`` in order, then its
    report. ``whole`` dumps a file; ``span_dump`` a span of a log."""
    index, span = work
    file = files[index]
    problems = DumpProblems()
    failures = problems.failures
    items = whole(file, opts, problems) if span is None else span_dump(file, opts, problems, span)
    for item in items:
        if isinstance(item, Chunk):
            yield 1, item.data
        elif item.stream == ERR:
            yield 2, item.text.encode("utf-8", ESCAPE_NAMES) + b"\n"
        else:
            yield 1, item.text.encode("utf-8", ESCAPE_NAMES) + b"\n"
    ended = span is not None and not span.last and problems.failures > failures
    size = file.size if span is None else (span.end or file.size) - span.start
    yield 0, PieceReport(problems, size, ended)


def dump_in_turn(
    files: Sequence[StoredFile],
    opts: DumpOptions,
    problems: DumpProblems,
    jobs: int,
    render: Callable[[tuple[int, LogSpan | None]], Iterator[tuple[int, Any]]],
    progress: Progress,
    deep_text: bool,
) -> None:
    """The files dumped in ``jobs`` workers writing in turn; what they collected merged into
    ``problems`` (as one process collects it), ``progress`` told of each piece."""
    distinct = opts.release.sorts_summary_offsets
    before = run_processes()
    # the run's processes from here: the walk that cuts the logs (headers only) starts no
    # read-ahead thread to fault in every page, and the workers forked know it too
    run_in(jobs)
    try:
        work = pieces(files, opts, deep_text)
        for report in write_in_turn(render, work, jobs, _in_worker):
            problems.merge(report.problems)
            _cap_gaps(problems, distinct)
            progress.advance(report.size, "")
    finally:
        run_in(before)


def _in_worker() -> None:
    """A worker's start: nothing to do (it was forked knowing the run's processes)."""


def _cap_gaps(problems: DumpProblems, distinct: bool) -> None:
    """A log's non-consecutive pairs merged from its pieces, kept as one process keeps them
    (kdump.render.runs.RunRenderer: at most runs.MAX_GAPS, distinct previous offsets where the
    release keeps one pair per offset; the pairs past it counted, not listed)."""
    cap = runs.MAX_GAPS
    for path, pairs in problems.non_consecutive.items():
        if len(pairs) <= cap:
            continue
        kept: list[tuple[int, int]] = []
        seen: set[int] = set()
        for last, offset in pairs:
            room = (last in seen or len(seen) < cap) if distinct else len(kept) < cap
            if room:
                kept.append((last, offset))
                seen.add(last)
        over = len(pairs) - len(kept)
        if over:
            pairs[:] = kept
            counted = problems.non_consecutive_not_kept
            counted[path] = counted.get(path, 0) + over
            problems.gaps_kept = cap


__all__ = [
    "PIECE_BYTES",
    "PieceReport",
    "dump_in_turn",
    "pieces",
    "render_piece",
    "why_one_process",
]
