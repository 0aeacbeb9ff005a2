"""`kdump verify PATH...`: audit segments, partitions and log dirs; exit codes for cron."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kdump.checks.findings import Severity
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.commands.common import progress, show_progress
from kdump.errors import ExitCode
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.render.report import render_json, render_jsonl, render_text

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


def print_result(result: VerifyResult, fmt: str, quiet: bool) -> None:
    """The report on stdout: text (rich on a terminal), one JSON document, or JSON Lines."""
    out = sys.stdout
    if fmt == "json":
        out.write(render_json(result) + "\n")
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
@click.pass_context
def verify(
    ctx: click.Context,
    paths: tuple[str, ...],
    deep: bool,
    index_interval_bytes: int,
    max_index_size: int,
    segment_bytes: int,
    max_batch_bytes: int,
    fmt: str,
    fail_on: str,
    quiet: bool,
) -> None:
    """Audit segment files, partition dirs or broker log dirs. Never writes anything.

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
    with progress(show_progress(quiet), "verify") as meter:
        result = verify_paths(list(paths), options, meter)
    print_result(result, fmt, quiet)
    ctx.exit(exit_code(result, fail_on))
