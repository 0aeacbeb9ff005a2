"""`kdump verify PATH...`: audit segments, partitions and log dirs; exit codes for cron."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeVar

import click

from kdump.checks.audit import DEFAULT_RECHECK_FRACTION, AuditOptions
from kdump.checks.codes import Code
from kdump.checks.findings import Severity
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.commands.options import (
    apply,
    config_layers,
    config_options,
    fail_on_option,
    given_store,
    jobs_option,
    kafka_option,
    max_batch_bytes_option,
    object_store,
    prom_option,
    store_options,
    units_callback,
)
from kdump.commands.outcome import answer, metrics_run, refuse_if_nothing_read
from kdump.errors import ExitCode
from kdump.render.progress_display import progress, show_progress
from kdump.render.verify import render_json, render_jsonl, render_text
from kdump.run import log_dir_of
from kdump.storage.reading import ReadPolicy, lower_priority

if TYPE_CHECKING:
    from kdump.run import RunInfo
    from kdump.storage import ObjectStore

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


_TOPICS = (
    "each topic's own (--config, --server-properties, --describe-output, the KRaft image), else "
    "Kafka's "
)


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
            "an index file larger than this is reported, for every partition",
            unset=_TOPICS + "10485760",
        ),
        kafka_option(
            "--segment-bytes",
            "segment.bytes",
            "a .log larger than this is reported, for every partition",
            unset=_TOPICS + "1073741824",
        ),
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


_rate = units_callback("parse_rate")
_bytes = units_callback("parse_bytes")
_duration = units_callback("parse_duration")


DEFAULT_STATE = ""
"""--state given without a path, or as ``--state=`` (kdump.checks.verify_state's
default_state_path)."""


def state_option(per_log_dir: bool = False) -> Callable[[F], F]:
    """--state: FILE (verify; alone, the user's state directory), or DIR of one file per log
    dir (spark verify: its driver)."""
    if per_log_dir:
        return click.option(
            "--state",
            type=click.Path(file_okay=False, dir_okay=True),
            default=None,
            metavar="DIR",
            help="Remember the closed segments verified clean in one file per log dir in DIR "
            "(JSON, written atomically): the next run reads only new or changed segments, the "
            "active ones and a rotating share of the rest.",
        )
    return click.option(
        "--state",
        type=click.Path(dir_okay=False),
        is_flag=False,
        flag_value=DEFAULT_STATE,
        default=None,
        metavar="[FILE]",
        help="Remember what was verified clean in FILE (JSON, mode 0600, written atomically): "
        "the next run reads only new or changed segments, what was appended to the active "
        "ones, and a rotating share of the rest. Without FILE (last on the line, or "
        "--state=): a file per set of paths in /var/lib/kdump/ (root) or "
        "$XDG_STATE_HOME/kdump/, named in the output. Only a file of this user no one else "
        "may write is trusted.",
    )


recheck_fraction_option = click.option(
    "--recheck-fraction",
    type=click.FloatRange(0, 1),
    default=DEFAULT_RECHECK_FRACTION,
    show_default="1/30: each segment read again at least every 30 days",
    help="With --state: the share of unchanged closed segments read again each run, "
    "the longest unread first.",
)


def live_options(f: F) -> F:
    """How verify treats the broker it runs beside: page cache, read rate, priority."""
    options = [
        click.option(
            "--keep-cache",
            is_flag=True,
            help="Leave what verify reads in the page cache (by default the pages it brought "
            "in are dropped behind it and those cached before are left alone).",
        ),
        click.option(
            "--max-io-rate",
            callback=_rate,
            metavar="RATE",
            help="Read at most this many bytes per second (200MiB/s, 50M), over the whole run.",
        ),
        click.option(
            "--nice",
            is_flag=True,
            help="Lowest CPU priority and the idle I/O class (nice 19, ionice -c 3).",
        ),
        state_option(),
        recheck_fraction_option,
        click.option(
            "--budget",
            callback=_duration,
            metavar="DURATION",
            help="Stop at the first segment boundary after this long (90s, 10m, 1h): the "
            "verdict so far, marked partial; with --state the next run goes on from there.",
        ),
    ]
    return apply(f, options)


def print_result(
    result: VerifyResult,
    fmt: str,
    quiet: bool,
    run: RunInfo | None = None,
    out: IO[str] | None = None,
) -> None:
    """The result on ``out`` (stdout): text (rich on a terminal), one JSON document (with the
    ``run`` object when given), or JSON Lines."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(render_json(result, run) + "\n")
    elif fmt == "jsonl":
        for line in render_jsonl(result):
            out.write(line + "\n")
    else:
        floor = Severity.WARNING if quiet else Severity.INFO
        render_text(result, out, out.isatty(), quiet, floor)
    out.flush()


def _state_path(state: str | None, paths: tuple[str, ...]) -> str | None:
    """--state's file, checked before any work (its directory there and writable: a run must
    not lose its findings to a state it cannot save); the default one's directory made."""
    if state is None:
        return None
    from pathlib import Path

    from kdump.checks.verify_state import check_state_path, default_state_path

    if state == DEFAULT_STATE:
        path = default_state_path(paths)
        check_state_path(path, made=True)
        return str(path)
    check_state_path(Path(state))
    return state


def _audit_output(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--output checked as the command line is read (its fields, the directory it starts in),
    as a template (a directory gets kdump.audit_results.DEFAULT_TEMPLATE beneath it)."""
    if value is None:
        return None
    from kdump.audit_results import check_target_directory, check_target_template, output_template

    template = output_template(value)
    check_target_template(template)
    check_target_directory(template)
    return template


def write_result(result: VerifyResult, run: RunInfo, target: str, store: ObjectStore | None) -> str:
    """The JSON result (``--format json`` with its ``run``: what kdump report reads, whatever
    --format says), written whole to ``target``, its fields filled in from ``run``
    (kdump.audit_results.audit_target); where it went. A template's name is this run's own: nothing
    there is replaced; a plain name is replaced, unless it holds another log dir's result."""
    from kdump.audit_results import audit_target, refuse_replacing, target_fields, write_audit

    if store is None:
        store = object_store({})  # the default store, for a URL
    text = io.StringIO()
    print_result(result, "json", True, run, text)
    where = audit_target(target, run.to_dict())
    own_name = bool(target_fields(target))
    if not own_name:
        refuse_replacing(where, run.to_dict(), store)
    return write_audit(where, text.getvalue(), store, own_name=own_name)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@check_options
@click.option(
    "--output",
    "-o",
    default=None,
    callback=_audit_output,
    metavar="PATH|URL",
    help="Write the result there, as JSON whatever --format says (what kdump report reads back "
    "for the fleet: of each broker the newest result of each log dir), instead of to standard "
    "output; whole or not at all (a file written atomically, one object PUT). {broker_id}, "
    "{cluster_id}, {host}, {started} and {log_dirs} (the log dirs' paths as a name) are filled "
    "in from the run, each as one name (letters, digits, . - _), and the directories they name "
    "made: /fleet/{cluster_id}/{broker_id}/{started}.json. A template must hold {started} (each "
    "run writes a name of its own, never replacing one); a directory or prefix ending in / gets "
    "{cluster_id}/{broker_id}/{started}.json beneath it. A name without fields is one file, "
    "replaced by each run, but not when it holds another log dir's result (exit 3).",
)
@live_options
@config_options
@click.option(
    "--compaction-key-memory",
    callback=_bytes,
    default=None,
    metavar="SIZE",
    help="Memory for the key check of a compacted log below its cleaner checkpoint (64MiB, "
    "1G); past it, keys met for the first time are not checked for repeats "
    "[default: 128MiB, the broker's log.cleaner.dedupe.buffer.size].",
)
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
    max_index_size: int | None,
    segment_bytes: int | None,
    max_batch_bytes: int,
    fmt: str,
    fail_on: str,
    quiet: bool,
    output: str | None,
    keep_cache: bool,
    max_io_rate: int | None,
    nice: bool,
    state: str | None,
    recheck_fraction: float,
    budget: int | None,
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    metadata: str | None,
    compaction_key_memory: int | None,
    prom: str | None,
    **store: Any,
) -> None:
    """Audit segment files, partition dirs or broker log dirs, or segments in an object store
    (s3://, gs://, az://, file:// URLs: tiered storage's layouts are recognised). Writes
    nothing but --output and --prom.

    A compacted topic's partitions (cleanup.policy from --config, --describe-output,
    --server-properties and the KRaft metadata image: --metadata, else the node's own) are
    audited below their cleaner checkpoint too: what Kafka's cleaner leaves there.

    Exit codes: 0 nothing at or above --fail-on, 1 warnings (--fail-on warning),
    2 errors, 3 a usage or I/O problem.
    """
    objects = given_store(store)
    state = _state_path(state, paths)
    if nice:
        for note in lower_priority():
            click.echo(f"kdump: --nice: {note}", err=True)
    reading = ReadPolicy.live(keep_cache, max_io_rate)
    options = VerifyOptions(
        deep=deep,
        index_interval_bytes=index_interval_bytes,
        max_index_size=max_index_size,
        segment_bytes=segment_bytes,
        max_batch_bytes=max_batch_bytes,
    )
    if compaction_key_memory is not None:
        options = options._replace(compaction_key_memory=compaction_key_memory)
    # the node's own image (no --metadata) is taken by the run, once a log dir, from the
    # metadata partition it verifies anyway where it has one (kdump.kraft.configs
    # .take_node_image): each topic's cleanup.policy, segment.bytes and segment.index.bytes
    layers = (
        config_layers(configs, server_properties, describe_output, metadata=metadata)
        if configs or server_properties or describe_output or metadata
        else None
    )
    with metrics_run("verify", prom) as run:
        with progress(show_progress(quiet), "verify", quiet=quiet) as meter:
            audit = AuditOptions(state, recheck_fraction, budget)
            result = verify_paths(
                list(paths), options, meter, jobs, objects, reading, audit, layers
            )
        for warning in (result.audit.state_warning, result.audit.cache_warning):
            if warning:
                click.echo(f"kdump: warning: {warning}", err=True)
        refuse_if_nothing_read(
            result.unreadable, bool(result.partitions or result.log_dir_findings)
        )
        run.log_dirs = result_log_dirs(result)
        info = run.finish() if fmt == "json" or output is not None else None
        if prom is not None:
            from kdump.metrics import verify_families

            run.measures = verify_families(result)
        code = exit_code(result, fail_on)
        if any(f.code == Code.FILE_UNREADABLE for f in result.findings):
            # a file it cannot read is a path it cannot read (the runbook's 3), not damage
            code, run.failed = ExitCode.BAD_INPUT, True
        with answer(result.unreadable, code, run):
            if output is not None and info is not None:
                write_result(result, info, output, objects)
            else:
                print_result(result, fmt, quiet, info)
    ctx.exit(run.exit_status)
