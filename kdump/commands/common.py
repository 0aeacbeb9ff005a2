"""What every command shares: its output, the options several commands take, Kafka settings
as options (validated as Kafka validates them), and the one way a closed pipe ends a run.

Kept light on purpose: it is imported at start-up; what a command needs to do its work it
imports when it runs.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from kdump.errors import ExitCode, KdumpError
from kdump.progress import NO_PROGRESS, Progress

if TYPE_CHECKING:
    from kdump.metrics import Measures
    from kdump.run import RunClock, RunInfo

F = TypeVar("F", bound=Callable[..., Any])


def apply(f: F, options: Sequence[Callable[[Any], Any]]) -> F:
    """Decorate ``f`` with ``options`` so they show in this order in --help."""
    for option in reversed(options):
        f = option(f)
    return f


# -- output ----------------------------------------------------------------------------------


class Output:
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
            # a large write to a pipe can be partial (its reader left half way: the next
            # write is the one that fails): write until everything went or the pipe broke
            view, done = memoryview(self.pending), 0
            while done < len(view):
                written = self.out.write(view[done:])
                if not written:  # nothing went and nothing failed: no point in a loop
                    break
                done += written
            view.release()
            self.pending.clear()
        self.out.flush()


class _TextSink:
    """Bytes written to a text stream (UTF-8: what kdump renders)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.stream.write(bytes(data).decode())
        return len(data)  # bytes, as Output counts them (the stream counts characters)

    def flush(self) -> None:
        self.stream.flush()


@contextmanager
def pipe_safe(exit_code: int = ExitCode.PIPE_CLOSED) -> Iterator[None]:
    """`kdump ... | head`: a reader that goes away ends the run quietly, with ``exit_code``:
    the command's own when it knows it before writing, else ExitCode.PIPE_CLOSED."""
    try:
        yield
    except BrokenPipeError:
        quiet_pipe(exit_code)


def silence_stdout() -> None:
    """Point standard output at /dev/null: what is still written (Python flushes stdout at
    exit) goes nowhere, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def quiet_pipe(exit_code: int) -> None:
    silence_stdout()
    sys.exit(exit_code)


def echo_on(line: str, err: bool = False) -> None:
    """A line of a run that must finish whatever happens to its reader (a repair): once the
    reader of standard output has gone, the rest of the output is dropped and the run goes on
    to its own exit code."""
    try:
        click.echo(line, err=err)
    except BrokenPipeError:
        silence_stdout()


# -- shared options ----------------------------------------------------------------------------


def units_callback(parser: str) -> Callable[[click.Context, click.Parameter, str | None], Any]:
    """A click callback reading an option's text with ``kdump.units.<parser>`` (imported when
    the option is given: start-up stays light); its ValueError is click's BadParameter."""

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        import kdump.units

        try:
            return getattr(kdump.units, parser)(value)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None

    return parse


_timestamp = units_callback("parse_timestamp")


def timestamp_option(*names: str, help: str) -> Callable[[F], F]:
    """An option taking epoch milliseconds or ISO-8601 with a zone."""
    return click.option(*names, callback=_timestamp, default=None, metavar="TIME", help=help)


def _now(ctx: click.Context, param: click.Parameter, value: str | None) -> int:
    found = _timestamp(ctx, param, value)
    return time.time_ns() // 1_000_000 if found is None else found


def now_option(f: F) -> F:
    """--now: the time answers are given at (what-if questions); the clock when not given."""
    return click.option(
        "--now",
        callback=_now,
        default=None,
        metavar="TIME",
        help="Answer as at this time: epoch ms or ISO-8601 with a zone (default: now).",
    )(f)


def format_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        help="Output: text for people, " + " or ".join(c for c in choices if c != "text") + ".",
    )


def max_batch_bytes_option(help: str = "Largest decompressed batch accepted.") -> Any:
    """--max-batch-bytes: kdump's bound on a batch's decompressed size (not a Kafka setting)."""
    from kdump.format.layout import DEFAULT_MAX_BATCH_BYTES

    return click.option(
        "--max-batch-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_BATCH_BYTES,
        show_default=True,
        help=help,
    )


def fail_on_option(
    help: str = "Lowest severity that makes the exit code non-zero.",
) -> Callable[[F], F]:
    """--fail-on: the lowest finding severity that makes the exit code non-zero."""
    return click.option(
        "--fail-on",
        type=click.Choice(["error", "warning", "never"]),
        default="error",
        show_default=True,
        help=help,
    )


def quiet_option(f: F) -> F:
    return click.option(
        "--quiet", "-q", is_flag=True, help="Only warnings and errors: no tables, no progress."
    )(f)


def _jobs(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    if value is not None:
        return value
    from kdump.parallel import default_jobs

    return default_jobs()


def jobs_option(f: F) -> F:
    """--jobs: processes to work in (output and exit code are the same for any number)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        callback=_jobs,
        help="Work in this many processes [default: the CPUs this process may use].",
    )(f)


def no_progress_option(f: F) -> F:
    """--quiet for commands whose output it does not change: no progress display."""
    return click.option(
        "--quiet", "-q", is_flag=True, help="No progress display (there is none on a pipe)."
    )(f)


# -- progress ----------------------------------------------------------------------------------


def _is_pipe(stream: Any) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return True  # not a real file (a test's StringIO): nothing to draw on
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def show_progress(quiet: bool, streams_stdout: bool = False) -> bool:
    """A progress display goes on a terminal's stderr, never with --quiet or on a pipe: not
    when stderr is no terminal, nor when stdout feeds a pipe (a pager or a script reads it).
    ``streams_stdout``: the command writes as it goes, so a terminal stdout would mix the two
    (the display then shows only when stdout goes to a file)."""
    if quiet or not sys.stderr.isatty() or _is_pipe(sys.stdout):
        return False
    return not (streams_stdout and sys.stdout.isatty())


class _Meter:
    """One bar of a rich display: a ``kdump.progress.Progress``."""

    def __init__(self, progress: Any, task: Any) -> None:
        self.progress, self.task = progress, task

    def total(self, amount: int) -> None:
        self.progress.update(self.task, total=amount)

    def advance(self, amount: int, what: str) -> None:
        self.progress.update(self.task, advance=amount, what=_tail(what))

    def set(self, completed: int, total: int, description: str) -> None:
        self.progress.update(self.task, completed=completed, total=total, description=description)


def _tail(what: str, width: int = 48) -> str:
    return what if len(what) <= width else "…" + what[-(width - 1) :]


class ProgressDisplay:
    """The bars of one run on stderr; ``bar()`` adds one (Spark: one per stage)."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress

    def bar(self, description: str, total: int | None = None) -> _Meter:
        return _Meter(self.progress, self.progress.add_task(description, total=total, what=""))


@contextmanager
def progress_display(
    show: bool, unit: str = "bytes", console: Any = None
) -> Iterator[ProgressDisplay | None]:
    """The one progress display of kdump: rich bars on stderr (or ``console``), removed when
    done. Bytes show done/total, rate and time left; other units (``tasks``) count the same."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        ProgressColumn,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as RichProgress
    from rich.text import Text

    class _Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            rate = "?" if speed is None else f"{speed:.1f}"
            return Text(f"{rate} {unit}/s", style="progress.data.speed")

    columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), TaskProgressColumn()]
    if unit == "bytes":
        columns += [DownloadColumn(binary_units=True), TransferSpeedColumn()]
    else:
        columns += [MofNCompleteColumn(), _Rate()]
    columns += [TimeRemainingColumn(), TextColumn("{task.fields[what]}", style="dim")]
    console = console or Console(stderr=True)
    with RichProgress(*columns, console=console, transient=True) as progress:
        yield ProgressDisplay(progress)


@contextmanager
def progress(show: bool, description: str) -> Iterator[Progress]:
    """One bar of bytes for a command's run; ``NO_PROGRESS`` when not shown."""
    with progress_display(show) as display:
        yield NO_PROGRESS if display is None else display.bar(description)


# -- Kafka settings as options ---------------------------------------------------------------


def config_options(f: F) -> F:
    """--config, --server-properties, --describe-output: a topic's settings, as explain and
    report resolve them (kdump.config.ConfigLayers; ``config_layers`` reads them)."""
    return apply(
        f,
        [
            click.option(
                "--config",
                "configs",
                multiple=True,
                metavar="NAME=VALUE",
                help="A topic setting as Kafka names it (segment.bytes=1048576), or a broker one "
                "(log.cleaner.dedupe.buffer.size=...). Repeatable; wins over the files.",
            ),
            click.option(
                "--server-properties",
                type=click.Path(dir_okay=False),
                default=None,
                help="The broker's server.properties: its log.* settings are the topic defaults.",
            ),
            click.option(
                "--describe-output",
                type=click.Path(dir_okay=False),
                default=None,
                help="Output of kafka-configs.sh --describe --all (topics, several welcome) "
                "saved to a file.",
            ),
        ],
    )


def config_layers(
    configs: tuple[str, ...], server_properties: str | None, describe_output: str | None
) -> Any:
    """The ConfigLayers of --config, --server-properties and --describe-output."""
    from kdump.config import (
        ConfigLayers,
        parse_config_option,
        read_describe_output,
        read_server_properties,
    )

    return ConfigLayers(
        options=tuple(parse_config_option(c) for c in configs),
        describe=None if describe_output is None else read_describe_output(describe_output),
        server_properties={}
        if server_properties is None
        else read_server_properties(server_properties),
    )


class KafkaOption(click.Option):
    """An option holding a Kafka setting (``key``, from kdump.config.OPTION_CONFIGS)."""

    def __init__(self, *args: Any, key: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.key = key


def kafka_option(
    flag: str, config: str, help: str, *, unset: str | None = None
) -> Callable[[F], F]:
    """An option holding a Kafka setting: its default and validator are Kafka's (defined once,
    in kdump.config.OPTION_CONFIGS); a value Kafka would refuse ends the run with one line in
    Kafka's words (exit code 3). ``unset``: the option has no default, and this says what
    happens without it."""
    from kdump.config import OPTION_CONFIGS, ConfigError

    key = OPTION_CONFIGS[config]

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return key.parse(str(value))
        except ValueError as e:
            raise ConfigError(f"{flag} {value}", str(e)) from None

    shown = f"{key.default if unset is None else unset}"
    if key.validator is not None:
        shown += f"; {key.validator.describe()}"
    return click.option(
        flag,
        cls=KafkaOption,
        key=key,
        type=str,  # parsed as Kafka parses it (ConfigDef.parseType), in Kafka's words
        metavar=key.type.value,
        default=None if unset else key.default,
        callback=check,
        help=f"{config}: {help}  [default: {shown}]",
    )


# -- metrics of a run (--prom) -------------------------------------------------------------------


def prom_option(f: F) -> F:
    """--prom FILE: the run's metrics for node_exporter's textfile collector."""
    return click.option(
        "--prom",
        type=click.Path(dir_okay=False),
        default=None,
        metavar="FILE",
        help="Also write the run's metrics to FILE (Prometheus text format, for "
        "node_exporter's textfile collector), atomically; written on failure too.",
    )(f)


class MetricsRun:
    """One command's run, measured: the command fills in what it found before it ends."""

    def __init__(self, clock: RunClock) -> None:
        self.clock = clock
        self.log_dirs: list[str] = []
        self.info: RunInfo | None = None
        self.exit_status: int = ExitCode.OK
        self.measures: Measures | None = None
        self.failed = False
        """The run did not do all it was asked (a path could not be read): no success."""

    def finish(self) -> RunInfo:
        """The run's identity and duration, taken once (JSON's ``run`` and the metrics agree);
        taken at the end when no output asks for it before."""
        self.info = self.clock.info(self.log_dirs)
        return self.info


@contextmanager
def metrics_run(command: str, prom: str | None) -> Iterator[MetricsRun]:
    """Measure a command's run; with ``prom``, write its metrics when it ends: what it found
    and its exit status, or, when it fails (an exception leaves it), exit status 3 (or the
    error's own) with the last success carried forward from the previous file."""
    from kdump.run import RunClock

    run = MetricsRun(RunClock(command))
    try:
        yield run
    except click.exceptions.Exit:
        raise
    except SystemExit:  # a closed pipe (pipe_safe): the answer was made, only its reader left
        if prom is not None:
            from kdump.metrics import write_run

            info = run.info or run.clock.info(run.log_dirs)
            write_run(prom, info, run.exit_status, run.measures, failed=run.failed)
        raise
    except Exception as e:
        if prom is not None:
            from kdump.metrics import write_run

            status = e.exit_code if isinstance(e, KdumpError) else ExitCode.BAD_INPUT
            with contextlib.suppress(OSError):  # the error that ended the run is the one to tell
                write_run(prom, run.clock.info(run.log_dirs), status, failed=True)
        raise
    if prom is not None:
        from kdump.metrics import write_run

        info = run.info or run.clock.info(run.log_dirs)
        write_run(prom, info, run.exit_status, run.measures, failed=run.failed)


def refuse_if_nothing_read(unreadable: Sequence[KdumpError], read_any: bool) -> None:
    """Before any output: when no path could be read at all, the first error is the answer."""
    if unreadable and not read_any:
        raise unreadable[0]


def unreadable_code(
    unreadable: Sequence[KdumpError], code: int, run: MetricsRun | None = None
) -> int:
    """The exit code of a run that read all it could: 3 when a path was unreadable (no success
    for --prom), so one dead disk of a JBOD broker hides nothing of the others and is not
    missed either; else the command's own ``code``."""
    if not unreadable:
        return code
    if run is not None:
        run.failed = True
    return ExitCode.BAD_INPUT


def name_unreadable(unreadable: Sequence[KdumpError]) -> None:
    """Each unreadable path on stderr, one line each."""
    for error in unreadable:
        click.echo(f"kdump: {error}", err=True)


def tell_unreadable(
    unreadable: Sequence[KdumpError], code: int, run: MetricsRun | None = None
) -> int:
    """After the output of what could be read: name the unreadable paths; the exit code."""
    name_unreadable(unreadable)
    return unreadable_code(unreadable, code, run)


@contextlib.contextmanager
def answer(unreadable: Sequence[KdumpError], code: int, run: MetricsRun) -> Iterator[None]:
    """Print the answer of a command that knows its exit code before it prints (verify, txn,
    explain): a reader that leaves (``| head``) ends the run quietly with that code, and the
    unreadable paths are named on stderr after the output, whatever became of its reader."""
    run.exit_status = unreadable_code(unreadable, code, run)
    try:
        with pipe_safe(run.exit_status):
            yield
    finally:
        name_unreadable(unreadable)


# -- object stores (kdump.remote) ----------------------------------------------------------------


def _private_key(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    keys = []
    for value in values:
        key_id, sep, path = value.partition("=")
        if not sep:
            key_id, path = "", value
        try:
            with open(path, "rb") as f:
                keys.append((key_id or None, f.read(1 << 20)))
        except OSError as e:
            raise click.BadParameter(f"{path}: {e.strerror or e}", ctx=ctx, param=param) from None
    return tuple(keys)


_size = units_callback("parse_bytes")


def store_options(f: F) -> F:
    """How URLs (s3://, gs://, az://, file://) are read: --endpoint-url, --anon,
    --private-key, --read-ahead. The options are set for the process before the command runs
    (kdump.remote.options.configure)."""
    return apply(
        f,
        [
            click.option(
                "--endpoint-url",
                default=None,
                metavar="URL",
                help="An S3-compatible store's endpoint (MinIO, Ceph...); default "
                "AWS_ENDPOINT_URL, else AWS. Credentials: the provider's standard chain "
                "(AWS_ACCESS_KEY_ID..., AWS_PROFILE, instance roles; gcloud; Azure).",
            ),
            click.option("--anon", is_flag=True, help="Read a public bucket without credentials."),
            click.option(
                "--private-key",
                "private_keys",
                multiple=True,
                callback=_private_key,
                metavar="[ID=]FILE",
                help="PEM private key of Aiven's encryption key pair ID (without ID: any); "
                "repeatable.",
            ),
            click.option(
                "--read-ahead",
                callback=_size,
                default=None,
                metavar="BYTES",
                help="Bytes of a remote .log fetched per request [default: 16MiB].",
            ),
        ],
    )


def configure_store(kw: dict[str, Any]) -> None:
    """Take the store options out of a command's keyword arguments and set them for this
    process (and the workers it forks)."""
    given: dict[str, Any] = {
        k: kw.pop(k) for k in ("endpoint_url", "anon", "private_keys", "read_ahead") if k in kw
    }
    if not any(given.values()) and "kdump.remote.options" not in sys.modules:
        return  # the defaults, which the module starts with once loaded: a local run skips it
    from kdump.remote.options import DEFAULT_READ_AHEAD, StoreOptions, configure

    configure(
        StoreOptions(
            endpoint_url=given.get("endpoint_url"),
            anon=given.get("anon", False),
            private_keys=given.get("private_keys", ()),
            read_ahead=given.get("read_ahead") or DEFAULT_READ_AHEAD,
        )
    )
