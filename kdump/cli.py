"""The command line: options in, one library call, a renderer, an exit code. Nothing else.

Commands live in kdump/commands/, one module each, registered in kdump.commands.COMMANDS and
imported only when run. ``kdump --files A,B`` is kafka-dump-log.sh's own command line.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

# A command's start-up is mostly imports: thousands of objects that live as long as the
# process. Python collects the young generation every 700 new objects, which costs a short run
# ~10 ms of walking them for nothing; collections stay on, rarer, and what the imports made is
# frozen out of them once the command is loaded (_entry). None runs while the command line's
# own modules (click's among them) load: one young-generation walk there cost ~1-2 ms.
gc.set_threshold(10_000, 50, 1_000)
_COLLECTING = gc.isenabled()
gc.disable()
try:
    import click

    from kdump import __version__
    from kdump.commands import COMMANDS, RUN_FILES
    from kdump.commands.dump_options import dump_options
    from kdump.commands.options import dump_jobs_option
    from kdump.commands.output import quiet_pipe, silence_stdout
    from kdump.errors import STOP_SIGNALS, ExitCode, Interrupted, KdumpError
    from kdump.untrusted import TerminalText, escape_streams
finally:
    if _COLLECTING:  # an in-process caller's own setting stands
        gc.enable()

_RUN = {"traceback": False, "freeze": False}
"""traceback: set from --traceback once the command line has parsed (errors then show their
tracebacks); freeze: the process is the kdump command (main), not a caller of ``cli``."""


class _Stopped(BaseException):
    """An interruption on its way out, past every command's own handling: no KeyboardInterrupt
    any more, so that click's main lets it through (it would print a blank line and
    "Aborted!", exit code 1 or 3)."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


class _Commands(click.Group):
    """The commands of kdump.commands.COMMANDS, each imported when asked for."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise _Stopped(_stop_code(e)) from None
        except BrokenPipeError:  # before click's main turns it into exit code 1
            quiet_pipe(ExitCode.PIPE_CLOSED)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        command = _entry(target)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name in COMMANDS or name.startswith("-") or ctx.resilient_parsing:
            return super().resolve_command(ctx, args)
        # click suggests from the commands it holds, none here (each is imported when asked for)
        hint = did_you_mean(name, self.list_commands(ctx))
        raise click.UsageError(f"No such command {name!r}.{hint}", ctx)


def _entry(target: str) -> Any:
    """What a "module:attribute" entry of kdump.commands names, its module imported now."""
    module, attribute = target.split(":")
    if not _RUN["freeze"]:
        return getattr(importlib.import_module(module), attribute)
    # the kdump process: its command's imports make tens of thousands of objects that live as
    # long as it, and one young-generation collection among them walks them all for nothing
    # (~2 ms of a 45 ms start-up): none runs while they load, and once loaded they are frozen
    # out of every later collection
    gc.disable()
    try:
        return getattr(importlib.import_module(module), attribute)
    finally:
        gc.freeze()
        gc.enable()


_VERSION = "kdump.version"
"""ctx.meta's mark of --version, which the root command answers once every option is read
(--timings with it, in either order)."""


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        ctx.meta[_VERSION] = True


def _print_version(timings: bool) -> None:
    from kdump import speedups

    where = os.path.dirname(os.path.abspath(__file__))
    click.echo(f"kdump, version {__version__}, from {where} (Python {sys.version.split()[0]})")
    click.echo(f"fast paths: {speedups.describe()}")
    hint = speedups.how_to_enable()
    if hint is not None:
        click.echo(f"to get them: {hint}")
    if timings:
        from kdump.timings import lines

        for line in lines():
            click.echo(line)


@click.group(
    cls=_Commands,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--files",
    default=None,
    help="Comma-separated segment files to dump, as kafka-dump-log.sh takes them.",
)
@dump_options
@dump_jobs_option
@click.option("--traceback", is_flag=True, help="On an unexpected error, show where (for reports).")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version, where kdump runs from and which fast paths (C, CRC-32C) run.",
)
@click.option(
    "--timings",
    is_flag=True,
    help="With --version: measure start-up here (fresh processes, medians of 5), for a bug report.",
)
@click.pass_context
def cli(
    ctx: click.Context, files: str | None, jobs: int, traceback: bool, timings: bool, **kw: Any
) -> None:
    """Dump, verify and repair Apache Kafka log segments, without a JVM."""
    if ctx.meta.get(_VERSION):
        _print_version(timings)
        ctx.exit(ExitCode.OK)
    if timings:
        raise click.UsageError(
            "--timings measures start-up with --version: kdump --version --timings"
        )
    _RUN["traceback"] = traceback
    if ctx.invoked_subcommand is not None:
        return
    if files is None:
        click.echo(ctx.get_help())
        ctx.exit(ExitCode.BAD_INPUT)
    run_files = _entry(RUN_FILES)
    ctx.exit(run_files([p for p in files.split(",") if p], kw, jobs))


def main() -> None:
    """Console entry point: one line for kdump's errors, a quiet exit on a closed pipe, one line
    and 128 + the signal for a run a signal stopped."""
    _RUN["freeze"] = True
    _WRITERS_BEFORE[0] = _writers_forked()
    escape_streams(sys.stdout, sys.stderr)  # a name that is not UTF-8 is printed, never fatal
    # no control character of a name (or of anything else read from disk) reaches a terminal,
    # whichever line printed it (kdump.untrusted)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalText(sys.stdout), TerminalText(sys.stderr)
    ours = _stop_on_signals()
    try:
        _run_cli()
    except KeyboardInterrupt as e:  # stopped between the command's end and the exit
        _stopped(_stop_code(e))
    finally:
        # the process's last moments (its exit under way): a signal still gets its line. An
        # in-process caller (a test) gets its streams back, and puts its own handlers back
        # itself (tests/clirun.own_handlers).
        for signum in ours:
            if signal.getsignal(signum) is _interrupt:
                signal.signal(signum, _stopped_at_exit)
        sys.stdout, sys.stderr = streams


def _stopped_at_exit(signum: int, frame: FrameType | None) -> None:
    """A stop signal as the process exits, its command done: Python would raise
    KeyboardInterrupt in its shutdown and end with no word (a SIGINT as recover finished);
    the line, and 128 + the signal, as for any run a signal stopped."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"kdump: stopped by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def _run_cli() -> None:
    try:
        code = cli.main(standalone_mode=False, prog_name="kdump")
    except click.exceptions.Exit as e:
        _exit(e.exit_code)
    except _Stopped as e:
        _stopped(e.exit_code)
    except click.Abort as e:
        if isinstance(e.__cause__, KeyboardInterrupt):  # stopped while click read the line
            _stopped(_stop_code(e.__cause__))
        click.echo("Aborted.", err=True)
        _exit(ExitCode.BAD_INPUT)
    except click.UsageError as e:
        click.echo(usage_line(e), err=True)
        _exit(ExitCode.BAD_INPUT)
    except click.ClickException as e:
        click.echo(f"kdump: {e.format_message()}", err=True)
        _exit(ExitCode.BAD_INPUT)
    except BrokenPipeError:  # the reader left before the command had its answer
        quiet_pipe(ExitCode.PIPE_CLOSED)
    except KdumpError as e:
        if _RUN["traceback"]:
            raise
        click.echo(f"kdump: {e}", err=True)
        _exit(e.exit_code)
    except OSError as e:
        if _RUN["traceback"]:
            raise
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"kdump: {where}{e.strerror or e}", err=True)
        _exit(ExitCode.BAD_INPUT)
    except Exception as e:  # the last line of defence: one line, never a traceback
        if _RUN["traceback"]:
            raise
        click.echo(
            f"kdump: unexpected {type(e).__name__}: {e} (please report; --traceback shows where)",
            err=True,
        )
        _exit(ExitCode.BAD_INPUT)
    _exit(code if isinstance(code, int) else ExitCode.OK)


def usage_line(e: click.UsageError) -> str:
    """A command line click refuses, in one line like every other kdump error: the command, what
    is wrong, and where the help is (click's own three-line usage block is for people at a
    terminal; cron mail and scripts want one line)."""
    command = e.ctx.command_path if e.ctx is not None else "kdump"
    message = e.format_message()
    if isinstance(e, click.NoSuchOption) and e.ctx is not None:
        hint = did_you_mean(e.option_name, _long_options(e.ctx)) or _other_form(e.ctx, e)
        message = e.message + hint
    return f"{command}: {message} (see '{command} --help')"


def _other_form(ctx: click.Context, e: click.NoSuchOption) -> str:
    """Dumping has two forms: ``kdump --files A,B`` (kafka-dump-log.sh's options) and ``kdump
    dump A B`` (kdump's, --format among them). An option of the other form says so."""
    root = ctx.find_root()
    if not isinstance(root.command, click.Group):
        return ""
    dump = root.command.get_command(root, "dump")
    if dump is None:
        return ""
    if ctx.command is root.command:
        other, form = dump, "kdump dump FILE... takes it (kdump's own form)"
    elif ctx.command is dump:
        other, form = root.command, "kdump --files FILE,... takes it (kafka-dump-log.sh's form)"
    else:
        return ""
    with click.Context(other, info_name=other.name, parent=None) as other_ctx:
        return f" {form}." if e.option_name in _long_options(other_ctx) else ""


def did_you_mean(name: str, names: list[str]) -> str:
    """click's suggestion (difflib's close matches, its words), made on the names without their
    dashes: with them, every two options share ``--`` and ``--bogus`` came out "close" to
    ``--jobs``. Empty when nothing is close."""
    import difflib  # a mistyped name only: its heap and sequence matcher cost every run 3 ms

    bare = {n.lstrip("-"): n for n in names}
    close = [bare[n] for n in difflib.get_close_matches(name.lstrip("-"), list(bare))]
    if not close:
        return ""
    if len(close) == 1:
        return f" Did you mean {close[0]!r}?"
    return f" (Did you mean one of: {', '.join(repr(n) for n in sorted(close))}?)"


def _long_options(ctx: click.Context) -> list[str]:
    """The ``--`` options of ctx's command, the ones click itself suggests from."""
    options = (o for p in ctx.command.get_params(ctx) for o in (*p.opts, *p.secondary_opts))
    return [o for o in options if o.startswith("--")]


def _stop_on_signals() -> dict[int, Any]:
    """Each of STOP_SIGNALS raises Interrupted from now on; a signal ignored when kdump starts
    (``nohup``, ``kdump ... &`` in a script) stays ignored. The handlers replaced."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # only the main thread may set handlers (an in-process caller's thread)
    replaced = {}
    for signum in STOP_SIGNALS:
        if (handler := signal.getsignal(signum)) is not signal.SIG_IGN:
            replaced[signum] = handler
            signal.signal(signum, _interrupt)
    return replaced


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # once: what unwinds (a repair's undo, the workers' stop) is not interrupted in its turn
    for other in STOP_SIGNALS:
        if signal.getsignal(other) is _interrupt:
            signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


def _stop_code(e: KeyboardInterrupt) -> int:
    return e.exit_code if isinstance(e, Interrupted) else ExitCode.INTERRUPTED


def _stopped(code: int) -> None:
    """One line for a run a signal stopped, and 128 + the signal as its exit code."""
    # what is still buffered would wait on a reader that may be gone or stopped itself (no
    # descriptor under a test's stream)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        silence_stdout()
    with contextlib.suppress(OSError):  # stderr gone too (the terminal closed: SIGHUP)
        click.echo(f"kdump: stopped by {signal.Signals(code - 128).name}", err=True)
    _exit(code)


def _exit(code: int | None) -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_pipe(code or 0)
    if _RUN["freeze"] and _forked_its_writers():
        _exit_now(code or 0)
    sys.exit(code or 0)


_WRITERS_BEFORE = [0]
"""kdump.forked.writers_forked() as main started (a test's process calls main many times)."""


def _writers_forked() -> int:
    forked = sys.modules.get("kdump.forked")
    return 0 if forked is None else int(forked.writers_forked())


def _forked_its_writers() -> bool:
    """Whether this process is the kdump program (its ``__main__`` runs main: not a test
    calling main) and this run forked workers that wrote its output (dump --jobs)."""
    program = getattr(sys.modules.get("__main__"), "main", None) is main
    return program and _writers_forked() > _WRITERS_BEFORE[0]


def _exit_now(code: int) -> None:
    """The kdump program's end, its output flushed and atexit's handlers run, without the
    interpreter's clean-up: after workers shared its heap (copy-on-write), freeing every object
    took a page fault on each page, ~10 ms after the work was done (dump --jobs)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)
