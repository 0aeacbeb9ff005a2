"""The command line: options in, one library call, a renderer, an exit code. Nothing else.

Commands live in kdump/commands/, one module each, registered in kdump.commands.COMMANDS and
imported only when run. ``kdump --files A,B`` is kafka-dump-log.sh's own command line.
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

# A command's start-up is mostly imports: thousands of objects that live as long as the
# process. Python collects the young generation every 700 new objects, which costs a short run
# ~10 ms of walking them for nothing; collections stay on, rarer, and what the imports made is
# frozen out of them once the command is loaded (get_command).
gc.set_threshold(10_000, 50, 1_000)

import click

from kdump import __version__
from kdump.commands import COMMANDS
from kdump.commands.dump import dump_options, run_files
from kdump.commands.options import jobs_option
from kdump.commands.output import quiet_pipe
from kdump.errors import ExitCode, KdumpError
from kdump.render.escape import escape_streams

_RUN = {"traceback": False, "freeze": False}
"""traceback: set from --traceback once the command line has parsed (errors then show their
tracebacks); freeze: the process is the kdump command (main), not a caller of ``cli``."""


class _Commands(click.Group):
    """The commands of kdump.commands.COMMANDS, each imported when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        if _RUN["freeze"]:
            gc.freeze()  # the imports' objects: never garbage, never walked again
        assert isinstance(command, click.Command)
        return command


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from kdump import speedups

    click.echo(f"kdump, version {__version__}; C fast paths {speedups.describe()}")
    ctx.exit(ExitCode.OK)


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
@jobs_option
@click.option("--traceback", is_flag=True, help="On an unexpected error, show where (for reports).")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and whether the C fast paths run.",
)
@click.pass_context
def cli(ctx: click.Context, files: str | None, jobs: int, traceback: bool, **kw: Any) -> None:
    """Dump, verify and repair Apache Kafka log segments, without a JVM."""
    _RUN["traceback"] = traceback
    if ctx.invoked_subcommand is not None:
        return
    if files is None:
        click.echo(ctx.get_help())
        ctx.exit(ExitCode.BAD_INPUT)
    ctx.exit(run_files([p for p in files.split(",") if p], kw, jobs))


def main() -> None:
    """Console entry point: one line for kdump's errors, a quiet exit on a closed pipe."""
    _RUN["freeze"] = True
    escape_streams(sys.stdout, sys.stderr)  # a name that is not UTF-8 is printed, never fatal
    try:
        code = cli.main(standalone_mode=False, prog_name="kdump")
    except click.exceptions.Exit as e:
        _exit(e.exit_code)
    except click.UsageError as e:
        click.echo(usage_line(e), err=True)
        _exit(ExitCode.BAD_INPUT)
    except click.ClickException as e:
        click.echo(f"kdump: {e.format_message()}", err=True)
        _exit(ExitCode.BAD_INPUT)
    except click.Abort:
        click.echo("Aborted.", err=True)
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
    return f"{command}: {e.format_message()} (see '{command} --help')"


def _exit(code: int | None) -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_pipe(code or 0)
    sys.exit(code or 0)
