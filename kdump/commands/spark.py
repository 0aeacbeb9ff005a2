"""`kdump spark verify|export`: the same checks and parsers, run on Apache Spark (extra `spark`).

pyspark is imported only when a spark command runs, so `kdump` works without it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from kdump.checks.audit import AuditOptions
from kdump.checks.findings import Severity
from kdump.checks.options import VerifyOptions
from kdump.commands.filters import batch_filter, filter_options
from kdump.commands.options import (
    fail_on_option,
    max_batch_bytes_option,
    object_store,
    store_options,
)
from kdump.commands.verify import (
    check_options,
    exit_code,
    print_result,
    recheck_fraction_option,
    result_log_dirs,
    state_option,
)
from kdump.errors import KdumpError
from kdump.render.progress_display import progress_display, show_progress
from kdump.render.verify import finding_line

F = TypeVar("F", bound=Callable[..., Any])


def _require_pyspark() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        raise KdumpError(
            f"kdump spark needs pyspark and pyarrow ({e.name} is missing): "
            "pip install 'kafka-kdump[spark]'"
        ) from None


def _conf_pairs(values: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--conf")
        conf[key] = value
    return conf


def spark_options(f: F) -> F:
    options = [
        click.option(
            "--master",
            default=None,
            help="Spark master URL (spark://host:7077, yarn, k8s://...); default local[*], "
            "or spark-submit's.",
        ),
        click.option(
            "--remote",
            default=None,
            metavar="sc://HOST:PORT",
            help="Run on a Spark Connect server instead (no JVM here; kdump is shipped to it "
            "as an artifact).",
        ),
        click.option(
            "--conf",
            "conf",
            multiple=True,
            metavar="KEY=VALUE",
            help="A Spark setting, as spark-submit --conf takes it (repeatable); over "
            "spark-defaults.conf. spark.pyspark.python: the executors' Python.",
        ),
        click.option(
            "--no-ship",
            "no_ship",
            is_flag=True,
            help="Do not ship kdump to the executors (for clusters that forbid it): their Python "
            "must have kdump installed, at this version.",
        ),
        click.option(
            "--overwrite",
            is_flag=True,
            help="Replace --output if it exists (default: verify refuses; export resumes an "
            "export of the same settings, skipping the segments it wrote, unchanged since).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _spark_message(e: BaseException) -> str:
    """One line out of a Spark error: the Java or Python exception's own message."""
    java = getattr(e, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(e)
    if type(e).__name__ == "PythonException":  # a worker's traceback: its last line
        text = text.split("JVM stacktrace:")[0]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        # Spark Connect's ends with the error class's state, after the worker's own last line
        lines = [line for line in lines if not line.startswith("SQLSTATE:")]
        return f"an executor's Python: {lines[-1]}" if lines else type(e).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


@contextmanager
def _spark_errors() -> Iterator[None]:
    """Spark's exceptions as one-line kdump errors (exit 3); --traceback shows the chain."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JError) as e:
        raise KdumpError(f"spark: {_spark_message(e)}") from e


@contextmanager
def _session(
    master: str | None, conf: tuple[str, ...], remote: str | None, no_ship: bool
) -> Iterator[Any]:
    """The session the command runs on, kdump shipped to its executors (unless ``no_ship``);
    afterwards, one note where they ran kdump's pure Python."""
    if master is not None and remote is not None:
        raise click.UsageError("give --master or --remote, not both")
    _require_pyspark()
    from kdump.spark.session import driver_python, run_under, spark_session

    settings = _conf_pairs(conf)
    if remote is None and (python := driver_python(settings)) is not None:
        run_under(python, sys.argv[1:])
    with _spark_errors(), spark_session(master, settings, remote) as spark:
        from kdump.spark.ship import ship
        from kdump.spark.tasks import executor_note

        if not no_ship:
            ship(spark)
        yield spark
        note = executor_note(spark)
    if note is not None:
        click.echo(f"kdump: note: {note}", err=True)


@click.group()
def spark() -> None:
    """Verify and export on Apache Spark; paths must be visible to every executor."""


@spark.command("verify")
@click.argument("paths", nargs=-1, required=True)
@check_options
@click.option("--output", "-o", default=None, help="Write the findings here (a directory).")
@click.option(
    "--output-format", type=click.Choice(["parquet", "json"]), default="parquet", show_default=True
)
@click.option(
    "--tasks",
    type=click.IntRange(min=1),
    default=None,
    help="Spark tasks to split the partitions into (default: one per core, balanced by size).",
)
@state_option(per_log_dir=True)
@recheck_fraction_option
@spark_options
@store_options
@click.pass_context
def verify_command(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str,
    fail_on: str,
    quiet: bool,
    output: str | None,
    output_format: str,
    tasks: int | None,
    state: str | None,
    recheck_fraction: float,
    master: str | None,
    remote: str | None,
    conf: tuple[str, ...],
    no_ship: bool,
    overwrite: bool,
    endpoint_url: str | None,
    anon: bool,
    private_keys: tuple[tuple[str | None, bytes], ...],
    read_ahead: int | None,
    **checks: Any,
) -> None:
    """`kdump verify` with the partitions verified on Spark executors; same output and exit
    codes (0 clean, 1 warnings with --fail-on warning, 2 errors, 3 usage, I/O or Spark).
    --output writes the findings as a DataFrame (code, severity, path, offset, position,
    message, fix, advice, partition_path)."""
    from kdump.run import RunClock

    clock = RunClock("spark verify")
    store = object_store(
        {
            "endpoint_url": endpoint_url,
            "anon": anon,
            "private_keys": private_keys,
            "read_ahead": read_ahead,
        }
    )
    options = VerifyOptions(**checks)
    with _session(master, conf, remote, no_ship) as session:
        from kdump.spark.job import finding_rows, refuse_existing, verify_on_spark, write_findings
        from kdump.spark.stage_progress import stage_progress

        if output is not None and not overwrite:
            refuse_existing(session, output)
        shown = show_progress(quiet)
        with progress_display(shown, "tasks") as display, stage_progress(session, display):
            audit = AuditOptions(state, recheck_fraction)
            result = verify_on_spark(session, paths, options, tasks, store, audit)
            if output is not None:
                write_findings(session, finding_rows(result), output, output_format, overwrite)
    if result.audit.state_warning:
        click.echo(f"kdump: warning: {result.audit.state_warning}", err=True)
    print_result(result, fmt, quiet, clock.info(result_log_dirs(result)))
    ctx.exit(exit_code(result, fail_on))


@spark.command("export")
@click.argument("paths", nargs=-1, required=True)
@click.option("--output", "-o", required=True, help="Directory for the Parquet or JSON files.")
@click.option(
    "--output-format",
    type=click.Choice(["parquet", "json"]),
    default="parquet",
    show_default=True,
    help="json: JSON Lines, keys, values and headers with every byte kept, as kdump dump's.",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="GLOB",
    help="Only these topics (globs, repeatable). Kafka's internal topics (__consumer_offsets...) "
    "only when named: a pattern starting with __.",
)
@click.option(
    "--all-replicas",
    is_flag=True,
    help="Export every replica found (default: one per topic-partition: the leader per the "
    "KRaft metadata, else the greatest latest leader epoch, then log end offset, as kdump "
    "replicas chooses).",
)
@click.option(
    "--metadata",
    default=None,
    metavar="DIR",
    help="A __cluster_metadata-0 directory (or a log dir holding one) naming each partition's "
    "leader; default: the one among PATHS, if any. Each replica's broker: its log dir's "
    "meta.properties.",
)
@click.option(
    "--partition-by",
    type=click.Choice(["topic", "day"]),
    default="topic",
    show_default=True,
    help="Lay the files out as topic=T/ (Hive's layout, as Spark's partitionBy), or "
    "topic=T/day=YYYY-MM-DD/ by the record timestamp's UTC day.",
)
@filter_options
@max_batch_bytes_option()
@fail_on_option("Lowest finding severity that makes the exit code non-zero.")
@spark_options
@store_options
@click.pass_context
def export_command(
    ctx: click.Context,
    paths: tuple[str, ...],
    output: str,
    output_format: str,
    max_batch_bytes: int,
    fail_on: str,
    master: str | None,
    remote: str | None,
    conf: tuple[str, ...],
    no_ship: bool,
    overwrite: bool,
    topics: tuple[str, ...],
    all_replicas: bool,
    metadata: str | None,
    partition_by: str,
    **kw: Any,
) -> None:
    """Records into Parquet (schema: kdump.spark.schema) or JSON Lines, one Spark task per
    segment. A corrupt segment gives its valid prefix. Every finding kdump verify gives on the
    partitions exported and their log dirs goes to OUTPUT/_findings, with the offsets a damaged
    segment did not give (EXPORT_GAP). Exit codes as verify.

    The filters choose batches as dump's do; of a batch kept, only the records in
    --offset-range and --time-range are exported. Where a topic-partition is found more than
    once (replicas of several brokers), one copy is exported; which, and why, is printed."""
    objects = object_store(kw)
    chosen = batch_filter(kw)
    options = VerifyOptions(max_batch_bytes=max_batch_bytes)
    with _session(master, conf, remote, no_ship) as session:
        from kdump.spark.extract import ReplicaRule
        from kdump.spark.job import FINDINGS_DIR, export_on_spark
        from kdump.spark.stage_progress import stage_progress

        shown = show_progress(quiet=False)
        with progress_display(shown, "tasks") as display, stage_progress(session, display):
            rule = ReplicaRule(all_replicas, metadata)
            result = export_on_spark(
                session,
                paths,
                output,
                options,
                overwrite,
                objects,
                output_format,
                topics,
                chosen,
                rule,
                partition_by,
            )
    for choice in result.choices:
        left = ", ".join(log.location for log in choice.others)
        click.echo(f"{choice.chosen.location}: exported ({choice.why}); not {left}")
    checked = result.checked()
    for f in checked.findings:
        if f.severity.rank >= Severity.WARNING.rank:
            click.echo(finding_line(f), err=True)
    counts = checked.counts()
    click.echo(
        f"exported {result.records} record(s) from {result.segments} segment(s) to {output} "
        f"({result.skipped} unchanged since an earlier run, not read again); "
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info "
        f"in {output}/{FINDINGS_DIR}"
    )
    ctx.exit(exit_code(checked, fail_on))
