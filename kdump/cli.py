"""The command line: options in, one library call, a renderer, an exit code. Nothing else."""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, TypeVar

import click

from kdump import __version__, speedups
from kdump.commands.filters import batch_filter, filter_options
from kdump.decoders import DecoderLoadError, SchemaSource, load_decoder
from kdump.errors import ExitCode, KdumpError
from kdump.format.batch import INT32_MAX
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.internal import MessageParser, message_parser
from kdump.releases import LATEST, RELEASES, Release
from kdump.render.describe import Decoder
from kdump.render.dumplog import (
    DEFAULT_MAX_MESSAGE_SIZE,
    ERR,
    Chunk,
    DumpOptions,
    DumpProblems,
    Line,
    dump_files,
)
from kdump.render.jsonl import dump_file_objects, to_json

F = TypeVar("F", bound=Callable[..., Any])


def _decoder(value: str | None, option: str, schemas: SchemaSource | None) -> Decoder:
    try:
        return load_decoder("string" if value is None else value, schemas)
    except DecoderLoadError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


DECODER_OPTIONS = (  # in DumpLogSegmentsOptions.messageParser()'s order of precedence
    ("offsets", "Decode __consumer_offsets records as JSON. Implies --print-data-log."),
    ("transaction-log", "Decode __transaction_state records as JSON. Implies --print-data-log."),
    ("cluster-metadata", "Decode KRaft metadata logs and snapshots. Implies --print-data-log."),
    (
        "remote-log-metadata",
        "Decode __remote_log_metadata records (tiered storage). Implies --print-data-log.",
    ),
    (
        "share-group-state",
        "Decode __share_group_state records as JSON. Implies --print-data-log.",
    ),
)


def dump_options(f: F) -> F:
    """kafka-dump-log.sh's options, shared by ``kdump --files`` and ``kdump dump``."""
    options = [
        click.option("--print-data-log", is_flag=True, help="Print keys and values (deep)."),
        click.option("--deep-iteration", is_flag=True, help="Decode every record."),
        click.option("--verify-index-only", is_flag=True, help="Check index entries, print none."),
        click.option(
            "--index-sanity-check", is_flag=True, help="Run the broker's startup index check."
        ),
        click.option(
            "--max-message-size",
            type=click.IntRange(min=0),
            default=DEFAULT_MAX_MESSAGE_SIZE,
            show_default=True,
            help="Largest batch an index entry may point at.",
        ),
        click.option(
            "--max-bytes",
            type=click.IntRange(min=0),
            default=INT32_MAX,
            show_default=True,
            help="Read at most this many bytes of each .log.",
        ),
        click.option(
            "--max-batch-bytes",
            type=click.IntRange(min=1),
            default=DEFAULT_MAX_BATCH_BYTES,
            show_default=True,
            help="Largest decompressed batch accepted.",
        ),
        click.option(
            "--skip-record-metadata", is_flag=True, help="Omit record metadata in deep output."
        ),
        click.option(
            "--key-decoder-class",
            "--key-decoder",
            "key_decoder",
            default=None,
            help="string (Kafka's StringDecoder), hex, base64, schema-registry, module:function "
            "or a kdump.decoders plugin. Implies --print-data-log.",
        ),
        click.option(
            "--value-decoder-class",
            "--value-decoder",
            "value_decoder",
            default=None,
            help="As --key-decoder-class, for values. Implies --print-data-log.",
        ),
        click.option(
            "--schema-dir",
            type=click.Path(file_okay=False, exists=True),
            default=None,
            help="schema-registry decoder: <id>.avsc, <id>.proto or <id>.json schema files.",
        ),
        click.option(
            "--schema-registry-url",
            default=None,
            help="schema-registry decoder: fetch GET <url>/schemas/ids/<id> (once per id).",
        ),
        *(
            click.option(f"--{name}-decoder", is_flag=True, help=what)
            for name, what in DECODER_OPTIONS
        ),
        click.option(
            "--kafka-release",
            type=click.Choice(RELEASES),
            default=str(LATEST),
            show_default=True,
            help="Print as this Kafka release's kafka-dump-log.sh prints, where releases differ.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return filter_options(f)


def _message_parser(kw: dict[str, Any], release: Release) -> MessageParser | None:
    for name, _ in DECODER_OPTIONS:
        if kw[f"{name.replace('-', '_')}_decoder"]:
            return message_parser(name, release)
    return None


def _options(**kw: Any) -> DumpOptions:
    release = Release.parse(kw["kafka_release"])
    parser = _message_parser(kw, release)
    schemas = None
    if kw["schema_dir"] is not None or kw["schema_registry_url"] is not None:
        schemas = SchemaSource(kw["schema_dir"], kw["schema_registry_url"])
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
        key_decoder=_decoder(kw["key_decoder"], "--key-decoder-class", schemas),
        value_decoder=_decoder(kw["value_decoder"], "--value-decoder-class", schemas),
        message_parser=parser,
        release=release,
        batch_filter=batch_filter(kw),
    )


@contextmanager
def _pipe_safe() -> Iterator[None]:
    """`kdump ... | head`: a reader that goes away ends the output quietly."""
    try:
        yield
    except BrokenPipeError:
        _quiet_pipe()


class _Output:
    """Standard output as bytes, written in large chunks; a line for standard error first
    writes out what came before it, so the two streams interleave as they were produced."""

    CHUNK = 1 << 20

    def __init__(self) -> None:
        # a text stream with no bytes underneath (a StringIO standing in for stdout) gets text
        self.out: IO[bytes] | _TextSink = getattr(sys.stdout, "buffer", None) or _TextSink(
            sys.stdout
        )
        self.pending = bytearray()

    def data(self, data: bytes) -> None:
        if len(data) >= self.CHUNK:
            self.flush()
            self.out.write(data)
            return
        self.pending += data
        if len(self.pending) >= self.CHUNK:
            self.flush()

    def line(self, text: str) -> None:
        self.data(text.encode() + b"\n")

    def error(self, text: str) -> None:
        self.flush()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def flush(self) -> None:
        if self.pending:
            self.out.write(self.pending)
            self.pending.clear()
        self.out.flush()


class _TextSink:
    """Bytes written to a text stream (UTF-8: what kdump renders)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, data: bytes | bytearray) -> int:
        return self.stream.write(bytes(data).decode())

    def flush(self) -> None:
        self.stream.flush()


def _write_lines(lines: Iterator[Line | Chunk]) -> None:
    with _pipe_safe():
        out = _Output()
        for item in lines:
            if isinstance(item, Chunk):
                out.data(item.data)
            elif item.stream == ERR:
                out.error(item.text)
            else:
                out.line(item.text)
        out.flush()


def _dump_exit(problems: DumpProblems) -> int:
    if problems.unreadable:
        return ExitCode.BAD_INPUT
    return ExitCode.ERRORS if problems.found else ExitCode.OK


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--files",
    default=None,
    help="Comma-separated segment files to dump, as kafka-dump-log.sh takes them.",
)
@dump_options
@click.option("--traceback", is_flag=True, hidden=True, help="Show Python tracebacks.")
@click.version_option(
    __version__,
    prog_name="kdump",
    message=f"%(prog)s, version %(version)s; C fast paths {speedups.describe()}",
)
@click.pass_context
def cli(ctx: click.Context, files: str | None, traceback: bool, **kw: Any) -> None:
    """Dump, verify and repair Apache Kafka log segments, without a JVM."""
    ctx.obj = {"traceback": traceback}
    if ctx.invoked_subcommand is not None:
        return
    if files is None:
        click.echo(ctx.get_help())
        ctx.exit(ExitCode.BAD_INPUT)
    paths = [p for p in files.split(",") if p]
    problems = DumpProblems()
    _write_lines(dump_files(paths, _options(**kw), problems))
    ctx.exit(_dump_exit(problems))


def _expand(patterns: tuple[str, ...]) -> list[str]:
    paths: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise click.BadParameter(f"{pattern}: no file matches", param_hint="FILE")
        for path in matches:
            if os.path.isdir(path):
                paths.extend(sorted(str(p) for p in _segment_files(path)))
            else:
                paths.append(path)
    return paths


def _segment_files(directory: str) -> list[str]:
    suffixes = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
    return [
        os.path.join(directory, name)
        for name in sorted(os.listdir(directory))
        if name.endswith(suffixes)
    ]


@cli.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="kafka-dump-log text, or JSON Lines.",
)
@dump_options
@click.pass_context
def dump(ctx: click.Context, files: tuple[str, ...], fmt: str, **kw: Any) -> None:
    """Dump segment files (globs and partition directories welcome)."""
    paths = _expand(files)
    opts = _options(**kw)
    problems = DumpProblems()
    if fmt == "text":
        _write_lines(dump_files(paths, opts, problems))
    else:
        with _pipe_safe():
            out = _Output()
            for path in paths:
                for obj in dump_file_objects(path, opts, problems):
                    if isinstance(obj, bytes):
                        out.data(obj)
                    else:
                        out.line(to_json(obj))
            out.flush()
    ctx.exit(_dump_exit(problems))


def main() -> None:
    """Console entry point: one line for kdump's errors, a quiet exit on a closed pipe."""
    traceback = "--traceback" in sys.argv
    try:
        code = cli.main(standalone_mode=False, prog_name="kdump")
    except click.exceptions.Exit as e:
        _exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        _exit(ExitCode.BAD_INPUT)
    except click.Abort:
        click.echo("Aborted.", err=True)
        _exit(ExitCode.BAD_INPUT)
    except BrokenPipeError:
        _quiet_pipe()
    except KdumpError as e:
        if traceback:
            raise
        click.echo(f"kdump: {e}", err=True)
        _exit(e.exit_code)
    except OSError as e:
        if traceback:
            raise
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"kdump: {where}{e.strerror or e}", err=True)
        _exit(ExitCode.BAD_INPUT)
    except Exception as e:  # the last line of defence: one line, never a traceback
        if traceback:
            raise
        click.echo(
            f"kdump: unexpected {type(e).__name__}: {e} (please report; --traceback shows where)",
            err=True,
        )
        _exit(ExitCode.BAD_INPUT)
    _exit(code if isinstance(code, int) else ExitCode.OK)


def _quiet_pipe() -> None:
    # Python flushes stdout at exit; pointing it at /dev/null keeps `kdump ... | head` quiet.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(ExitCode.OK)


def _exit(code: int | None) -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_pipe()
    sys.exit(code or 0)


def _register_commands() -> None:
    """Commands that live in kdump/commands/, one module each (keep this list sorted)."""
    import importlib

    for name in COMMAND_MODULES:
        module = importlib.import_module(f"kdump.commands.{name}")
        for command in module.COMMANDS:
            cli.add_command(command)


COMMAND_MODULES: list[str] = [
    # one line per module in kdump/commands/, each exporting COMMANDS: list[click.Command]
    "explain",
    "lookup",
    "repair",
    "spark",
    "txn",
    "verify",
]

_register_commands()
