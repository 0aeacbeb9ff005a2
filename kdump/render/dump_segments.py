"""kafka-dump-log.sh, transcribed: the same lines, in the same order, on the same stream.

Follows DumpLogSegments (Kafka 4.x, tools module). Where Kafka would die with a stack trace,
kdump prints one line naming the file and byte position and goes on with the next file.

Each kind of file has its module (kdump.render.dump_log: logs; kdump.render.dump_index:
indexes, snapshots, text files), imported when a file of its kind is dumped: an index's dump
never loads the record decoders.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from kdump.errors import DecryptionKeyError, InputError, KdumpError, StoreError
from kdump.format.names import (
    CHECKPOINT_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TEXT_FILES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kdump.java import java_string_hash
from kdump.progress import NO_PROGRESS, Progress
from kdump.releases import LATEST, Release
from kdump.render.lines import (
    ERR,
    OUT,
    WHOLE,
    Chunk,
    DumpOptions,
    DumpProblems,
    Line,
    LogSpan,
    base_offset_of,
)
from kdump.storage import locate_file
from kdump.storage.base import StoredFile
from kdump.untrusted import ESCAPE_NAMES, terminal

if TYPE_CHECKING:
    from kdump.storage import ObjectStore


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a java.util.HashMap holding ``keys`` inserted in this order.

    Buckets are ``spread(hash) & (capacity - 1)``; capacity starts at 16 and doubles past a 0.75
    load; iteration runs bucket by bucket, insertion order within one.
    """
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


DUMPERS = {
    LOG_SUFFIX: "kdump.render.dump_log:dump_log",
    CHECKPOINT_SUFFIX: "kdump.render.dump_log:dump_log",
    INDEX_SUFFIX: "kdump.render.dump_index:dump_index",
    TIME_INDEX_SUFFIX: "kdump.render.dump_index:dump_time_index",
    TXN_INDEX_SUFFIX: "kdump.render.dump_index:dump_txn_index",
    SNAPSHOT_SUFFIX: "kdump.render.dump_index:dump_snapshot",
}
"""The text dump of each kind of file, by suffix: "module:function", imported when used."""
TEXT_FILE_DUMPER = "kdump.render.dump_index:dump_text_file"
"""Checkpoint files, partition.metadata, meta.properties (kdump's own; Kafka skips them)."""


def _dumper(found: Callable[..., Any] | str) -> Callable[..., Any]:
    """A dumper, its module imported where it is named by a "module:function" entry."""
    if not isinstance(found, str):
        return found
    module, function = found.split(":")
    dumper: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return dumper


def java_file_path(path: str) -> str:
    """``new File(path).toString()``: repeated '/' collapsed, a trailing '/' dropped.

    DumpLogSegments prints and keys its summaries by File objects, never by the raw argument.
    """
    if "://" in path:
        return path
    normal = re.sub("/+", "/", path)
    return normal[:-1] if len(normal) > 1 and normal.endswith("/") else normal


T = TypeVar("T")
Dumper = Callable[[StoredFile, DumpOptions, DumpProblems], Iterator[T]]
SpanDumper = Callable[[StoredFile, DumpOptions, DumpProblems, LogSpan], Iterator[Line | Chunk]]


def dispatch(
    file: StoredFile,
    opts: DumpOptions,
    problems: DumpProblems,
    dumpers: Mapping[str, Dumper[T] | str],
    text_dumper: Dumper[T] | str,
    unknown: Callable[[], T],
    failed: Callable[[KdumpError], T],
    span: LogSpan = WHOLE,
) -> Iterator[T]:
    """Pick the dumper for a file by its suffix (or text-file name) and run it; a KdumpError
    ends this file with ``failed(error)``, and the run goes on; an object store that fails
    (StoreError), or an encrypted segment without its key, ends the run."""
    name, path = file.name, file.path
    found = _found(name, dumpers, text_dumper)
    if found is None:
        yield unknown()
        return
    dumper = _dumper(found)
    if span is not WHOLE:  # a log's piece (--jobs): its part only
        dumper = partial(dumper, span=span)
    if span.first:
        problems.dumped += 1
    try:
        if span.first and not file.exists():
            local = file.storage.local_path
            there = local is not None and os.path.exists(os.path.join(local, name))
            what = "no such object" if local is None else "no such file"
            raise InputError(path, "not a file" if there else what)
        yield from dumper(file, opts, problems)
    except (StoreError, DecryptionKeyError):
        raise  # the store failed (or a key is missing), not this file: the run ends here
    except KdumpError as e:
        problems.failures += 1
        problems.unreadable += isinstance(e, InputError)
        yield failed(e)


def _found(
    name: str, dumpers: Mapping[str, Dumper[T] | str], text_dumper: Dumper[T] | str
) -> Dumper[T] | str | None:
    """The dumper of a file of this name (None: not a file kdump dumps)."""
    if name in TEXT_FILES:  # its reader's module loaded by its dump
        return text_dumper
    return dumpers.get(name[name.rfind(".") :] if "." in name else "")


def _load_dumpers(
    files: Sequence[StoredFile],
    dumpers: Mapping[str, Dumper[T] | str],
    text_dumper: Dumper[T] | str,
) -> None:
    """The modules of the files' dumpers imported now (before --jobs forks its workers, each
    of which would import them again)."""
    for file in files:
        found = _found(file.name, dumpers, text_dumper)
        if found is not None:
            _dumper(found)


def dump_file(
    named: str | StoredFile, opts: DumpOptions, problems: DumpProblems, span: LogSpan = WHOLE
) -> Iterator[Line | Chunk]:
    """The lines for one file (``span``: of a log, the part one of --jobs' pieces writes); a
    KdumpError ends this file with one line on stderr."""
    file = stored_file(named)
    path = file.path
    if span.first:
        yield Line(OUT, f"Dumping {terminal(path)}")
    yield from dispatch(
        file,
        opts,
        problems,
        DUMPERS,
        TEXT_FILE_DUMPER,
        lambda: Line(ERR, f"Ignoring unknown file {path}"),
        lambda e: Line(ERR, f"kdump: {e}"),
        span,
    )


def _in_java_order(table: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for path in java_hashmap_order(list(table)):
        yield path, table[path]


def _offset_pairs(
    found: list[tuple[int, int]], release: Release, descending: bool = False
) -> list[tuple[int, int]]:
    """Index mismatches and non-consecutive offsets as the tool keeps them: the Java port in a
    TreeMap (sorted, one entry per offset, the last put winning), the Scala tool in a List it
    prepended to (newest first, every pair)."""
    if not release.sorts_summary_offsets:
        return found[::-1]
    latest = dict(found)
    return [(k, latest[k]) for k in sorted(latest, reverse=descending)]


def summary_lines(problems: DumpProblems, release: Release = LATEST) -> Iterator[Line]:
    """The problem summaries DumpLogSegments prints on stderr after all files."""
    for path, found in _in_java_order(problems.index_mismatches):
        yield Line(ERR, f"Mismatches in :{path}")
        # TreeMap(Collections.reverseOrder()): the highest index offset first.
        for index_offset, log_offset in _offset_pairs(found, release, descending=True):
            yield Line(ERR, f"  Index offset: {index_offset}, log offset: {log_offset}")
    for path, found in _in_java_order(problems.time_index_mismatches):
        yield Line(ERR, f"Found timestamp mismatch in :{path}")
        for index_ts, log_ts in found:
            yield Line(ERR, f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
    for path, found in _in_java_order(problems.out_of_order_timestamps):
        yield Line(ERR, f"Found out of order timestamp in :{path}")
        for index_ts, prev in found:
            yield Line(ERR, f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}")
    for path, found in _in_java_order(problems.shallow_offsets_not_found):
        if release.names_file_of_unfound_offsets:
            yield Line(ERR, f"The following indexed offsets are not found in :{path}")
        else:
            yield Line(ERR, "The following indexed offsets are not found in the log.")
        for indexed, log_offset in found:
            yield Line(ERR, f"Indexed offset: {indexed}, found log offset: {log_offset}")
    for path, found in _in_java_order(problems.non_consecutive):
        yield Line(ERR, f"Non-consecutive offsets in {path}")
        for first, second in _offset_pairs(found, release):
            yield Line(ERR, f"  {first} is followed by {second}")
        not_kept = problems.non_consecutive_not_kept.get(path)
        if not_kept:
            # kdump's own line: Kafka's tool lists every pair (and runs out of memory first)
            kept = problems.gaps_kept
            yield Line(ERR, f"  ... and {not_kept} more, not kept (kdump keeps {kept})")


def as_lines(items: Iterable[Line | Chunk]) -> Iterator[Line]:
    """The dump as one Line per line (chunks of rendered lines split): for callers that read
    lines, not bytes."""
    for item in items:
        if isinstance(item, Chunk):
            for text in item.data.decode().split("\n")[:-1]:
                yield Line(OUT, text)
        else:
            yield item


def dump_files(
    paths: Sequence[str | StoredFile],
    opts: DumpOptions,
    problems: DumpProblems,
    jobs: int = 1,
    progress: Progress = NO_PROGRESS,
) -> Iterator[Line | Chunk]:
    """Every file's lines, in order (dumped in ``jobs`` processes, which write their own),
    then the summaries."""
    yield from dumped(paths, opts, problems, jobs, _dump_file_joined, progress, _dump_span_joined)
    yield from summary_lines(problems, opts.release)


JOINED_BYTES = 1 << 20
"""Standard output's lines are handed on in chunks of about this size (Output's own)."""


def joined(items: Iterable[Line | Chunk]) -> Iterator[Line | Chunk]:
    """The same output, standard output's lines encoded and joined into Chunks (standard
    error's kept in place between them): a worker process hands the parent one chunk where it
    had thousands of lines, and does the encoding itself (issue 33: the parent encoding every
    line left --jobs 2 slower than --jobs 1)."""
    pending = bytearray()
    for item in items:
        if isinstance(item, Chunk):
            if len(item.data) >= JOINED_BYTES // 2:  # a bulk renderer's: handed on, not copied
                if pending:
                    yield Chunk(bytes(pending))
                    pending.clear()
                yield item
                continue
            pending += item.data
        elif item.stream == ERR:
            if pending:
                yield Chunk(bytes(pending))
                pending.clear()
            yield item
            continue
        else:
            pending += item.text.encode("utf-8", ESCAPE_NAMES) + b"\n"
        if len(pending) >= JOINED_BYTES:
            yield Chunk(bytes(pending))
            pending.clear()
    if pending:
        yield Chunk(bytes(pending))


def _dump_file_joined(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems
) -> Iterator[Line | Chunk]:
    return joined(dump_file(file, opts, problems))


def _dump_span_joined(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems, span: LogSpan
) -> Iterator[Line | Chunk]:
    return joined(dump_file(file, opts, problems, span))


def dumped(
    named: Sequence[str | StoredFile],
    opts: DumpOptions,
    problems: DumpProblems,
    jobs: int,
    per_file: Callable[[StoredFile, DumpOptions, DumpProblems], Iterator[Line | Chunk]],
    progress: Progress = NO_PROGRESS,
    per_span: SpanDumper | None = None,
) -> Iterator[Line | Chunk]:
    """What ``per_file`` yields for each file, in order; what each file's dump collects goes
    to ``problems``; ``progress`` hears of each file done. With ``jobs`` above 1, forked
    workers write the files, local logs cut in spans (``per_span``), to standard output and
    error themselves, in turn, and nothing is yielded here (kdump.render.dump_jobs; the caller
    asked kdump.render.dump_jobs.why_one_process first)."""
    paths = [stored_file(f) for f in named]
    if jobs > 1 and per_span is not None:
        # the --jobs machinery (forked workers writing in turn) where --jobs asks for it
        from kdump.render.dump_jobs import dump_in_turn, render_piece

        render = partial(render_piece, paths, opts, per_file, per_span)
        text = per_file is _dump_file_joined
        if text:  # (the JSON Lines dumpers are loaded with their module)
            _load_dumpers(paths, DUMPERS, TEXT_FILE_DUMPER)
        gaps = text and opts.deep and opts.batch_filter.is_empty
        dump_in_turn(paths, opts, problems, jobs, render, progress, gaps)
        return
    said: set[str] = set()
    for file in paths:
        for item in per_file(file, opts, problems):
            if isinstance(item, Line) and item.stream == ERR and item.text.startswith("kdump: "):
                # the error each file that needs the same unreadable file meets (a segment's
                # log, index and time index): said once, the others point at it
                if item.text in said:
                    yield Line(ERR, f"kdump: {file.path}: not dumped (the error above)")
                    continue
                said.add(item.text)
            yield item
        progress.advance(file.size, file.path)


def stored_file(file: str | StoredFile, store: ObjectStore | None = None) -> StoredFile:
    """A file to dump, named by a path or a URL (printed as kafka-dump-log.sh prints its
    File: ``java_file_path``), or already found in a storage."""
    if isinstance(file, StoredFile):
        return file
    storage, name = locate_file(file, store)
    return StoredFile(storage, name, java_file_path(file))


__all__ = [
    "DUMPERS",
    "ERR",
    "OUT",
    "Chunk",
    "DumpOptions",
    "DumpProblems",
    "Dumper",
    "Line",
    "as_lines",
    "base_offset_of",
    "dispatch",
    "dump_file",
    "dump_files",
    "dumped",
    "java_file_path",
    "java_hashmap_order",
    "joined",
    "stored_file",
    "summary_lines",
]
