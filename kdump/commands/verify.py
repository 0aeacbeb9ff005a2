"""`kdump verify PATH...`: audit segments, partitions and log dirs; exit codes for cron."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from kdump.checks.findings import Severity
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.commands.options import (
    apply,
    fail_on_option,
    jobs_option,
    kafka_option,
    max_batch_bytes_option,
    object_store,
    prom_option,
    store_options,
)
from kdump.commands.outcome import answer, metrics_run, refuse_if_nothing_read
from kdump.errors import ExitCode
from kdump.render.progress import progress, show_progress
from kdump.render.verify import render_json, render_jsonl, render_text
from kdump.run import log_dir_of

if TYPE_CHECKING:
    from kdump.run import RunInfo

F = TypeVar("F", bound=Callable[..., Any])

FAIL_ON = {"error": Severity.ERROR, "warning": Severity.WARNING}


class Counted(Protocol):
    def counts(self) -> dict[str, int]: ...


def exit_code(result: Counted, fail_on: str) -> int:
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
    """The log dirs of a verify run, in output order: each partition's parent directory."""
    paths = [r.path for r in result.partitions] + [f.path for f in result.log_dir_findings]
    return list(dict.fromkeys(log_dir_of(p) for p in paths))


def check_options(f: F) -> F:
    """The options of `kdump verify`: checks, output format, --fail-on (shared with Spark)."""
    options = [
        click.option("--deep", is_flag=True, help="Decompress and decode every record too."),
        kafka_option(
            "--index-interval-bytes",
            "index.interval.bytes",
            "report (info) an offset index denser than this, and what a lookup then reads",
            unset="not checked",
        ),
        kafka_option(
            "--max-index-size",
            "segment.index.bytes",
            "an index file larger than this (log.index.size.max.bytes) is reported",
        ),
        kafka_option("--segment-bytes", "segment.bytes", "a .log larger than this is reported"),
        max_batch_bytes_option(
            "Largest decompressed batch accepted with --deep (and v0/v1 wrapper decompressed "
            "for its first offset without)."
        ),
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["text", "json", "jsonl"]),
            default="text",
            show_default=True,
        ),
        fail_on_option(),
        click.option("--quiet", "-q", is_flag=True, help="Only warnings and errors, no tables."),
    ]
    return apply(f, options)


def print_result(result: VerifyResult, fmt: str, quiet: bool, run: RunInfo | None = None) -> None:
    """The result on stdout: text (rich on a terminal), one JSON document (with the ``run``
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
@store_options
@click.pass_context
def verify(
    ctx: click.Context,
    paths: tuple[str, ...],
    jobs: int,
    deep: bool,
    index_interval_bytes: int | None,
    max_index_size: int,
    segment_bytes: int,
    max_batch_bytes: int,
    fmt: str,
    fail_on: str,
    quiet: bool,
    prom: str | None,
    **store: Any,
) -> None:
    """Audit segment files, partition dirs or broker log dirs, or segments in an object store
    (s3://, gs://, az://, file:// URLs: tiered storage's layouts are recognised). Writes
    nothing but --prom.

    Exit codes: 0 nothing at or above --fail-on, 1 warnings (--fail-on warning),
    2 errors, 3 a usage or I/O problem.
    """
    objects = object_store(store)
    options = VerifyOptions(
        deep=deep,
        index_interval_bytes=index_interval_bytes,
        max_index_size=max_index_size,
        segment_bytes=segment_bytes,
        max_batch_bytes=max_batch_bytes,
    )
    with metrics_run("verify", prom) as run:
        with progress(show_progress(quiet), "verify") as meter:
            result = verify_paths(list(paths), options, meter, jobs, objects)
        refuse_if_nothing_read(
            result.unreadable, bool(result.partitions or result.log_dir_findings)
        )
        run.log_dirs = result_log_dirs(result)
        info = run.finish() if fmt == "json" else None
        if prom is not None:
            from kdump.metrics import verify_families

            run.measures = verify_families(result)
        with answer(result.unreadable, exit_code(result, fail_on), run):
            print_result(result, fmt, quiet, info)
    ctx.exit(run.exit_status)
