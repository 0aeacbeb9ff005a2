"""`kdump rebuild-index`, `kdump trim-index`, `kdump recover`: the broker's index rebuild, index
trim and log recovery, offline, atomically, keeping what they replace or cut.

Exit codes: 0 done (or nothing to do), 2 a problem remains (an invalid batch rebuild-index stopped
at, an offset overflow, new files that fail verify's checks), 3 a usage or I/O problem, or a
refusal (a running broker's lock, a read-only file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

import click

from kdump.commands.options import (
    apply,
    config_layers,
    config_options,
    jobs_option,
    kafka_option,
    no_progress_option,
)
from kdump.commands.output import echo_on
from kdump.config import ConfigLayers, RawSetting, Source
from kdump.errors import ExitCode
from kdump.lock import who_holds
from kdump.render.progress_display import progress, show_progress
from kdump.render.repair import REPAIR_LINES
from kdump.repair.apply import WriteOptions, refuse_side_dir
from kdump.repair.files import local_partitions
from kdump.repair.plan import (
    Scope,
    SegmentPlan,
    plan_rebuild_index,
    plan_recover,
    plan_trim_index,
    resolve_targets,
    viewing,
)
from kdump.repair.rebuild import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_MAX_INDEX_SIZE,
    IndexConfig,
    IndexConfigs,
)
from kdump.repair.runner import RunOptions, lock_dirs, run_repair
from kdump.repair.startup import as_settled, plan_settle
from kdump.unified_log import UnifiedLog

F = TypeVar("F", bound=Callable[..., Any])


_TOPICS = (
    "the topic's own (--config, --server-properties, --describe-output, the metadata image), "
    "else Kafka's "
)


def index_options(f: F) -> F:
    """The settings a rebuilt index depends on: each partition's topic's, where the command
    line says them (kdump.config's layers), else Kafka's defaults (said so in the output)."""
    return apply(
        config_options(f),
        [
            kafka_option(
                "--index-interval-bytes",
                "index.interval.bytes",
                "what the broker runs with; for every partition named",
                unset=_TOPICS + "4096",
            ),
            kafka_option(
                "--max-index-size",
                "segment.index.bytes",
                "log.index.size.max.bytes; the offset index holds this // 8 entries",
                unset=_TOPICS + "10485760",
            ),
        ],
    )


def index_layers(
    paths: tuple[str, ...],
    index_interval_bytes: int | None,
    max_index_size: int | None,
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    metadata: str | None,
) -> ConfigLayers:
    """Where each partition's index settings come from: the index options (for every
    partition), then its topic's in the files and --config given, then in the metadata image
    (``--metadata``, else the __cluster_metadata-0 beside ``paths``)."""
    layers = config_layers(
        configs, server_properties, describe_output, paths=paths, metadata=metadata
    )
    given = [
        RawSetting(name, str(value), Source.OPTION, f"{flag} {value}")
        for name, flag, value in (
            ("index.interval.bytes", "--index-interval-bytes", index_interval_bytes),
            ("segment.index.bytes", "--max-index-size", max_index_size),
        )
        if value is not None
    ]
    return layers._replace(options=(*layers.options, *given))


def write_options(f: F) -> F:
    options = [
        jobs_option,
        click.option("--dry-run", is_flag=True, help="Show what would change; write nothing."),
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["text", "json"]),
            default="text",
            show_default=True,
            help="A dry run's plan as text, or as one JSON document (each file's action, the "
            "findings behind them, each partition's facts).",
        ),
        click.option(
            "--output-dir",
            type=click.Path(file_okay=False, path_type=Path),
            help="Write the new files under DIR/<partition>/; leave the originals untouched.",
        ),
        click.option(
            "--backup-dir",
            type=click.Path(file_okay=False, path_type=Path),
            help="Keep originals and cut bytes under DIR/<partition>/ instead of beside them.",
        ),
        click.option(
            "--no-backup",
            is_flag=True,
            help="Do not keep replaced index files (cut log bytes are always kept).",
        ),
        click.option(
            "--force",
            is_flag=True,
            help="Modify files even where a running broker holds the log dir's .lock.",
        ),
        no_progress_option,
    ]
    return apply(f, options)


Planner = Callable[[list[UnifiedLog], int, IndexConfigs], Iterator[SegmentPlan]]


def _run(
    ctx: click.Context,
    paths: tuple[str, ...],
    plan: Planner,
    index: dict[str, Any] | None,
    as_broker: bool = False,
    **kw: Any,
) -> None:
    """``index``: the index options given (rebuild-index and recover), resolved per partition
    against its topic's settings once the partitions are opened."""
    if kw["output_dir"] is not None and kw["dry_run"]:
        raise click.UsageError("--dry-run writes nothing: drop --output-dir")
    if kw["no_backup"] and kw["backup_dir"] is not None:
        raise click.UsageError("--no-backup and --backup-dir contradict each other")
    given = {k: v for k, v in (index or {}).items() if v is not None}
    config = IndexConfig(
        given.get("index_interval_bytes", DEFAULT_INDEX_INTERVAL_BYTES),
        given.get("max_index_size", DEFAULT_MAX_INDEX_SIZE),
    )
    layers = None if index is None else index_layers(paths, **index)
    targets = resolve_targets(list(paths), layers)
    for option in ("output_dir", "backup_dir"):
        if kw[option] is not None:
            startup = option == "backup_dir" and ctx.command.name == "recover"
            where = local_partitions(targets)
            refuse_side_dir(kw[option], "--" + option.replace("_", "-"), where, startup)
    if kw["dry_run"]:
        _lock_as_a_run_would(lock_dirs(targets), kw["force"])
    as_json = kw["fmt"] == "json"
    if as_json and not kw["dry_run"]:
        raise click.UsageError("--format json describes a dry run's plan: add --dry-run")
    options = RunOptions(
        dry_run=kw["dry_run"],
        write=WriteOptions(kw["output_dir"], kw["backup_dir"], not kw["no_backup"]),
        force=kw["force"],
        broker_startup=ctx.command.name == "recover",
        as_broker=as_broker,
        builds_indexes=index is not None,
        keep_plans=as_json,
    )
    name = ctx.command.name or "repair"
    settled: list[SegmentPlan] = []
    try:
        if options.broker_startup:
            targets, settled = _settle(list(paths), targets, options, config, layers)
            if settled and not options.dry_run:
                settled = []  # done: what follows is the partitions as they now are
        configs = (
            IndexConfigs(config) if layers is None else IndexConfigs.of_topics(targets, layers)
        )
        with progress(
            show_progress(kw["quiet"], streams_stdout=True), name, quiet=kw["quiet"]
        ) as meter:
            meter.total(sum(s.log_size for t in targets for s in t.named_segments))
            plans = chain(settled, plan(targets, kw["jobs"], configs))
            with viewing(targets):
                result = run_repair(
                    targets, plans, options, configs, echo_on, REPAIR_LINES, progress=meter
                )
        if as_json:
            from kdump.render.plan import plan_object
            from kdump.untrusted import json_text

            echo_on(json_text(plan_object(name, result.plans, targets), indent=2))
    finally:
        for log in targets:
            log.close()  # the maps it read (in-process callers run many)
    ctx.exit(result.exit_code)


def _settle(
    paths: list[str],
    targets: list[UnifiedLog],
    options: RunOptions,
    config: IndexConfig,
    layers: ConfigLayers | None,
) -> tuple[list[UnifiedLog], list[SegmentPlan]]:
    """What LogLoader does first at startup, before it loads the segments: the files an
    interrupted delete, compaction or split left, settled (kdump.log_loader). A run does it
    first, on its own, and opens the partitions again (a swap changes their segments); a
    dry run returns the plans, to show before the rest."""
    settled = plan_settle(targets)
    if not settled:
        return targets, settled
    if options.dry_run:  # the rest planned on the partitions as the settling leaves them
        return [as_settled(log) for log in targets], settled
    first = dataclasses.replace(options, broker_startup=False, keep_plans=False)
    done = run_repair(targets, iter(settled), first, config, echo_on, REPAIR_LINES)
    if done.exit_code != ExitCode.OK:
        raise click.exceptions.Exit(done.exit_code)
    for log in targets:
        log.close()
    return resolve_targets(paths, layers), settled


def _lock_as_a_run_would(log_dirs: set[Path], force: bool) -> None:
    """A dry run meets a held .lock as the run would: it refuses (exit 3), or, with --force,
    says so and goes on."""
    for log_dir in sorted(log_dirs):
        holder = who_holds(log_dir)
        if holder is None:
            continue
        if not force:
            raise holder.refusal()
        echo_on(
            f"kdump: WARNING: --force: {holder.path} is held by {holder}; a run would modify "
            f"files under {log_dir} anyway",
            err=True,
        )


@click.command("rebuild-index")
@click.argument("paths", nargs=-1, required=True)
@index_options
@write_options
@click.pass_context
def rebuild_index(ctx: click.Context, paths: tuple[str, ...], **kw: Any) -> None:
    """Rebuild .index, .timeindex (and .txnindex) from the log, byte for byte as Kafka's
    LogSegment.recover does, at each topic's index.interval.bytes where the options or files
    given say it. PATH: a .log, a segment's files, a partition dir or a log dir."""
    index = {k: kw.pop(k) for k in _INDEX_KEYS}
    _run(ctx, paths, lambda t, jobs, c: plan_rebuild_index(t, c, jobs), index, **kw)


@click.command("trim-index")
@click.argument("paths", nargs=-1, required=True)
@click.option("--include-active", is_flag=True, help="Trim the active segment's indexes too.")
@write_options
@click.pass_context
def trim_index(ctx: click.Context, paths: tuple[str, ...], include_active: bool, **kw: Any) -> None:
    """Trim the zero-filled preallocated tail of closed segments' indexes, as a clean shutdown
    does (trimToValidSize)."""
    _run(ctx, paths, lambda t, jobs, c: plan_trim_index(t, include_active), None, **kw)


@click.command("recover")
@click.argument("paths", nargs=-1, required=True)
@index_options
@click.option(
    "--as-broker",
    is_flag=True,
    help="Recover the segments the broker would at its next start (without the log dir's "
    ".kafka_cleanshutdown: every segment from the recovery point on), not only those verify "
    "flags.",
)
@write_options
@click.pass_context
def recover(ctx: click.Context, paths: tuple[str, ...], as_broker: bool, **kw: Any) -> None:
    """Do what the broker's recovery does to the segments verify flags: cut each log at its
    first invalid batch (the cut bytes are kept in NAME.log.kdump-cut-POSITION), rebuild the
    indexes; then what the broker's next start does (producer snapshots above the log end
    deleted, the recovery point clamped to the log end offset), the originals kept."""
    scope = Scope.BROKER if as_broker else Scope.DAMAGED
    index = {k: kw.pop(k) for k in _INDEX_KEYS}
    _run(ctx, paths, lambda t, jobs, c: plan_recover(t, c, jobs, scope), index, as_broker, **kw)


_INDEX_KEYS = (
    "index_interval_bytes",
    "max_index_size",
    "configs",
    "server_properties",
    "describe_output",
    "metadata",
)
"""The parameters of index_options, handed to index_layers."""
