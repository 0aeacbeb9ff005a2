"""`kdump verify PATH...`: audit segments, partitions and log dirs; exit codes for cron."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kdump.checks.findings import Severity
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.commands.common import (
    jobs_option,
    metrics_run,
    pipe_safe,
    progress,
    prom_option,
    show_progress,
)
from kdump.errors import ExitCode
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.render.report import render_json, render_jsonl, render_text
from kdump.run import log_dir_of

if TYPE_CHECKING:
    from kdump.run import RunInfo

F = TypeVar("F", bound=Callable[..., Any])

FAIL_ON = {"error": Severity.ERROR, "warning": Severity.WARNING}


def exit_code(result: VerifyResult, fail_on: str) -> int:
    """0 nothing at or above --fail-on, 1 warnings (with --fail-on warning), 2 errors."""
    if fail_on == "never":
        return ExitCode.OK
    counts = result.counts()
    if counts["error"]:
        return ExitCode.ERRORS
    if fail_on == "warning" and counts["warning"]:
        return ExitCode.WARNINGS
    return ExitCode.OK


def result_log_dirs(result: VerifyResult) -> list[str]:
    """The log dirs of a verify run, in report order: each partition's parent directory."""
    paths = [r.path for r in result.reports] + [f.path for f in result.log_dir_findings]
    return list(dict.fromkeys(log_dir_of(p) for p in paths))


def check_options(f: F) -> F:
    """The options of `kdump verify`: checks, report format, --fail-on (shared with Spark)."""
    options = [
        click.option("--deep", is_flag=True, help="Decompress and decode every record too."),
        click.option(
            "--index-interval-bytes", type=click.IntRange(min=0), default=4096, show_default=True
        ),
        click.option(
            "--max-index-size", type=click.IntRange(min=0), default=10485760, show_default=True
        ),
        click.option(
            "--segment-bytes", type=click.IntRange(min=1), default=1073741824, show_default=True
        ),
        click.option(
            "--max-batch-bytes",
            type=click.IntRange(min=1),
            default=DEFAULT_MAX_BATCH_BYTES,
            show_default=True,
            help="Largest decompressed batch accepted with --deep.",
        ),
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["text", "json", "jsonl"]),
            default="text",
            show_default=True,
        ),
        click.option(
            "--fail-on",
            type=click.Choice(["error", "warning", "never"]),
            default="error",
            show_default=True,
            help="Lowest severity that makes the exit code non-zero.",
        ),
        click.option("--quiet", "-q", is_flag=True, help="Only warnings and errors, no tables."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def print_result(result: VerifyResult, fmt: str, quiet: bool, run: RunInfo | None = None) -> None:
    """The report on stdout: text (rich on a terminal), one JSON document (with the ``run``
    object when given), or JSON Lines."""
    out = sys.stdout
    if fmt == "json":
        out.write(render_json(result, run) + "\n")
    elif fmt == "jsonl":
        for line in render_jsonl(result):
            out.write(line + "\n")
    else:
        floor = Severity.WARNING if quiet else Severity.INFO
        render_text(result, out, out.isatty(), quiet, floor)
    out.flush()


@click.command()
@click.argument("paths", nargs=-1, required=True)
@check_options
@jobs_option
@prom_option
@click.pass_context
def verify(
    ctx: click.Context,
    paths: tuple[str, ...],
    jobs: int,
    deep: bool,
    index_interval_bytes: int,
    max_index_size: int,
    segment_bytes: int,
    max_batch_bytes: int,
    fmt: str,
    fail_on: str,
    quiet: bool,
    prom: str | None,
) -> None:
    """Audit segment files, partition dirs or broker log dirs. Writes nothing but --prom.

    Exit codes: 0 nothing at or above --fail-on, 1 warnings (--fail-on warning),
    2 errors, 3 a usage or I/O problem.
    """
    options = VerifyOptions(
        deep=deep,
        index_interval_bytes=index_interval_bytes,
        max_index_size=max_index_size,
        segment_bytes=segment_bytes,
        max_batch_bytes=max_batch_bytes,
    )
    with metrics_run("verify", prom) as run:
        with progress(show_progress(quiet), "verify") as meter:
            result = verify_paths(list(paths), options, meter, jobs)
        if result.unreadable and not result.reports and not result.log_dir_findings:
            raise result.unreadable[0]  # nothing at all was read: the error is the answer
        code = exit_code(result, fail_on)
        if result.unreadable:  # one dead disk of a JBOD broker hides nothing of the others
            code, run.failed = ExitCode.BAD_INPUT, True
        run.log_dirs = result_log_dirs(result)
        info = run.finish() if fmt == "json" else None
        run.exit_status = code
        if prom is not None:
            from kdump.metrics import verify_families

            run.measures = verify_families(result)
        with pipe_safe(code):
            print_result(result, fmt, quiet, info)
        for error in result.unreadable:
            click.echo(f"kdump: {error}", err=True)
    ctx.exit(code)
