"""``kdump dump FILE...`` and ``kdump --files A,B``: segment files as kafka-dump-log.sh prints
them, or as JSON Lines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kdump.commands.dump_options import DECODER_OPTIONS, dump_options
from kdump.commands.filters import batch_filter
from kdump.commands.options import (
    dump_jobs_option,
    format_option,
    no_progress_option,
    object_store,
    store_options,
)
from kdump.commands.output import Output, pipe_safe
from kdump.errors import DecoderLoadError, ExitCode, InputError
from kdump.format.names import DUMPED_SUFFIXES
from kdump.releases import Release
from kdump.render.describe import default_decoder
from kdump.render.dump_segments import (
    ERR,
    Chunk,
    DumpOptions,
    DumpProblems,
    Line,
    dump_files,
    stored_file,
)
from kdump.render.progress_display import progress, show_progress
from kdump.storage import named

if TYPE_CHECKING:
    from kdump.format.internal import NamedParser
    from kdump.render.describe import Decoder
    from kdump.storage import ObjectStore
    from kdump.storage.base import StoredFile

F = TypeVar("F", bound=Callable[..., Any])


def _decoders(kw: dict[str, Any]) -> tuple[Decoder, Decoder]:
    """The key and value decoders --key-decoder-class and friends name (Kafka's StringDecoder
    without them): the decoders' module (schema registries, plugins) only where one is."""
    if kw["key_decoder"] is None and kw["value_decoder"] is None:
        return default_decoder, default_decoder
    from kdump.decoders import SchemaSource, load_decoder

    schemas = None
    if kw["schema_dir"] is not None or kw["schema_registry_url"] is not None:
        schemas = SchemaSource(kw["schema_dir"], kw["schema_registry_url"])
    decoders = []
    for name, option in (
        ("key_decoder", "--key-decoder-class"),
        ("value_decoder", "--value-decoder-class"),
    ):
        value = kw[name]
        try:
            decoders.append(default_decoder if value is None else load_decoder(value, schemas))
        except DecoderLoadError as e:
            raise click.BadParameter(str(e), param_hint=option) from None
    return decoders[0], decoders[1]


def _message_parser(kw: dict[str, Any], release: Release) -> NamedParser | None:
    """The internal topic's parser --offsets-decoder and friends ask for (the first, in
    DumpLogSegments' order of precedence): the internal topics' schemas only where asked."""
    asked = [name for name, _ in DECODER_OPTIONS if kw[f"{name.replace('-', '_')}_decoder"]]
    if not asked:
        return None
    from kdump.format.internal import message_parser

    return message_parser(asked[0], release)


def dump_settings(**kw: Any) -> DumpOptions:
    """The DumpOptions the options above describe."""
    release = Release.parse(kw["kafka_release"])
    parser = _message_parser(kw, release)
    key_decoder, value_decoder = _decoders(kw)
    decoders_given = kw["key_decoder"] is not None or kw["value_decoder"] is not None
    return DumpOptions(
        print_data_log=kw["print_data_log"] or decoders_given or parser is not None,
        deep_iteration=kw["deep_iteration"],
        verify_index_only=kw["verify_index_only"],
        index_sanity_check=kw["index_sanity_check"],
        max_message_size=kw["max_message_size"],
        max_bytes=kw["max_bytes"],
        max_batch_bytes=kw["max_batch_bytes"],
        skip_record_metadata=kw["skip_record_metadata"],
        key_decoder=key_decoder,
        value_decoder=value_decoder,
        message_parser=parser,
        release=release,
        batch_filter=batch_filter(kw),
    )


def write_lines(lines: Iterator[Line | Chunk], jobs: int = 1) -> None:
    """The text dump on standard output and standard error, in the order produced (written
    behind the rendering in one process; ``jobs``' workers write their own)."""
    with pipe_safe():
        out = Output(behind=jobs == 1)
        if jobs > 1:
            out.bulk_from_workers()
        try:
            for item in lines:
                if isinstance(item, Chunk):
                    out.data(item.data)
                elif item.stream == ERR:
                    out.error(item.text)
                else:
                    out.line(item.text)
            out.flush()
        finally:
            out.close()


def dump_exit(problems: DumpProblems) -> int:
    """The exit code of a dump; when no path was a Kafka file, says so (one line) and 3."""
    if not problems.dumped:
        click.echo("kdump: no Kafka file to dump among the paths given", err=True)
        return ExitCode.BAD_INPUT
    if problems.unreadable:
        return ExitCode.BAD_INPUT
    return ExitCode.ERRORS if problems.found else ExitCode.OK


def dump_jobs(jobs: int, files: list[StoredFile]) -> int:
    """The processes a dump of ``files`` runs in: ``jobs``, or one where its workers cannot
    write standard output themselves or would not pay (it says why, on stderr)."""
    if jobs <= 1:
        return 1
    from kdump.render.dump_jobs import why_one_process

    why = why_one_process(jobs, sum(f.size for f in files))
    if why is None:
        return jobs
    click.echo(f"kdump: --jobs {jobs}: {why}; dumping in one process", err=True)
    return 1


def run_files(paths: list[str], kw: dict[str, Any], jobs: int) -> int:
    """``kdump --files``: kafka-dump-log.sh's run over these files; the exit code."""
    problems = DumpProblems()
    files = [stored_file(p) for p in paths]
    jobs = dump_jobs(jobs, files)
    write_lines(dump_files(files, dump_settings(**kw), problems, jobs), jobs)
    return dump_exit(problems)


def _expand(patterns: tuple[str, ...], store: ObjectStore) -> list[StoredFile]:
    """The files the patterns name: files and objects, globs, and every Kafka file of the
    partitions under a folder or prefix (a partition, a log dir, a bucket)."""
    from kdump.discovery import discover

    files: list[StoredFile] = []

    def folder(raw: str) -> None:
        found = discover([raw], store)
        if found.errors and not found.partitions:
            error = found.errors[0]
            if error.reason.startswith("holds no Kafka"):  # said the dump's way
                raise InputError(raw, "holds no Kafka file to dump (.log, .index, …)")
            raise error
        named = [f for log in found.partitions for f in log.dump_files()]
        if not named:
            raise InputError(raw, "holds no Kafka file to dump (.log, .index, …)")
        files.extend(named)

    for pattern in patterns:
        found = named(pattern, store)
        if not found:
            raise click.BadParameter(f"{pattern}: no file matches", param_hint="FILE")
        for location, is_folder, missing in found:
            if missing and not location.endswith(DUMPED_SUFFIXES):
                # (a missing segment file is named where it is met, the others still dumped)
                raise InputError(location, "no such file or directory")
            if is_folder:
                folder(location)  # every Kafka file of the partitions under it
            else:
                files.append(stored_file(location, store))  # a file, an object (or a part)
    return files


@click.command()
@click.argument("files", nargs=-1, required=True)
@format_option("text", "jsonl")
@dump_options
@dump_jobs_option
@no_progress_option
@store_options
@click.pass_context
def dump(
    ctx: click.Context, files: tuple[str, ...], fmt: str, jobs: int, quiet: bool, **kw: Any
) -> None:
    """Dump segment files (globs and partition directories welcome; URLs of objects or
    prefixes in object stores too, in tiered storage's layouts)."""
    store = object_store(kw)
    from kdump.render.jsonl import dump_files_lines

    paths = _expand(files, store)
    opts = dump_settings(**kw)
    problems = DumpProblems()
    jobs = dump_jobs(jobs, paths)
    with progress(show_progress(quiet, streams_stdout=True), "dump", quiet=quiet) as meter:
        meter.total(sum(f.size for f in paths))
        if fmt == "text":
            write_lines(dump_files(paths, opts, problems, jobs, meter), jobs)
        else:
            with pipe_safe():
                out = Output("json", behind=jobs == 1)
                try:
                    for chunk in dump_files_lines(paths, opts, problems, jobs, meter):
                        out.data(chunk.data)
                    out.flush()
                finally:
                    out.close()
    ctx.exit(dump_exit(problems))
