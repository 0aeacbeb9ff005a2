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
    jobs_option,
    kafka_option,
    metadata_option,
    no_progress_option,
)
from kdump.commands.output import echo_on
from kdump.discovery import local_partitions
from kdump.errors import ExitCode
from kdump.lock import LockHeldError, who_holds
from kdump.render.progress import progress, show_progress
from kdump.repair.apply import WriteOptions, refuse_side_dir
from kdump.repair.plan import (
    Scope,
    SegmentPlan,
    plan_rebuild_index,
    plan_recover,
    plan_trim_index,
    resolve_targets,
)
from kdump.repair.rebuild import IndexConfig
from kdump.repair.run import RunOptions, lock_dirs, run_repair
from kdump.repair.startup import plan_settle
from kdump.unified_log import UnifiedLog

F = TypeVar("F", bound=Callable[..., Any])


def index_options(f: F) -> F:
    return apply(
        f,
        [
            kafka_option(
                "--index-interval-bytes",
                "index.interval.bytes",
                "what the broker runs with, for every topic",
                unset="each topic's in the metadata image (--metadata), else 4096",
            ),
            kafka_option(
                "--max-index-size",
                "segment.index.bytes",
                "log.index.size.max.bytes; the offset index holds this // 8 entries",
                unset="each topic's in the metadata image (--metadata), else 10485760",
            ),
            metadata_option,
        ],
    )


def index_config(
    paths: tuple[str, ...],
    index_interval_bytes: int | None,
    max_index_size: int | None,
    metadata: str | None,
) -> IndexConfig:
    """The index settings given, else each topic's from the metadata image (``--metadata``,
    else the __cluster_metadata-0 of the log dir), else Kafka's defaults."""
    from kdump.config import ConfigLayers
    from kdump.kraft.configs import find_metadata_configs

    layers = ConfigLayers(metadata=find_metadata_configs(paths, metadata))
    return IndexConfig.of(layers, index_interval_bytes, max_index_size)


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


def _run(
    ctx: click.Context,
    paths: tuple[str, ...],
    plan: Callable[[list[UnifiedLog], int], Iterator[SegmentPlan]],
    config: IndexConfig,
    **kw: Any,
) -> None:
    if kw["output_dir"] is not None and kw["dry_run"]:
        raise click.UsageError("--dry-run writes nothing: drop --output-dir")
    if kw["no_backup"] and kw["backup_dir"] is not None:
        raise click.UsageError("--no-backup and --backup-dir contradict each other")
    targets = resolve_targets(list(paths), config)
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
        keep_plans=as_json,
    )
    name = ctx.command.name or "repair"
    settled: list[SegmentPlan] = []
    if options.broker_startup:
        targets, settled = _settle(list(paths), targets, options, config)
        if settled and not options.dry_run:
            settled = []  # done: what follows is the partitions as they now are
    with progress(show_progress(kw["quiet"], streams_stdout=True), name) as meter:
        meter.total(sum(s.log_size for t in targets for s in t.named_segments))
        plans = chain(settled, plan(targets, kw["jobs"]))
        result = run_repair(targets, plans, options, config, echo_on, progress=meter)
    if as_json:
        from kdump.render.escape import json_text
        from kdump.render.plan import plan_object

        echo_on(json_text(plan_object(name, result.plans, targets), indent=2))
    ctx.exit(result.exit_code)


def _settle(
    paths: list[str], targets: list[UnifiedLog], options: RunOptions, config: IndexConfig
) -> tuple[list[UnifiedLog], list[SegmentPlan]]:
    """What LogLoader does first at startup, before it loads the segments: the files an
    interrupted delete, compaction or split left, settled (kdump.log_loader). A run does it
    first, on its own, and opens the partitions again (a swap changes their segments); a
    dry run returns the plans, to show before the rest."""
    settled = plan_settle(targets)
    if not settled or options.dry_run:
        if any(log.settlement.renamed for log in targets) and options.dry_run:
            echo_on(
                "note: the recovery below is planned on the segments as they are now; the "
                "renames that complete a swap come first, and recover plans the segments as "
                "they leave them",
                err=True,
            )
        return targets, settled
    first = dataclasses.replace(options, broker_startup=False, keep_plans=False)
    done = run_repair(targets, iter(settled), first, config, echo_on)
    if done.exit_code != ExitCode.OK:
        raise click.exceptions.Exit(done.exit_code)
    for log in targets:
        log.close()
    return resolve_targets(paths, config), settled


def _lock_as_a_run_would(log_dirs: set[Path], force: bool) -> None:
    """A dry run meets a held .lock as the run would: it refuses (exit 3), or, with --force,
    says so and goes on."""
    for log_dir in sorted(log_dirs):
        holder = who_holds(log_dir)
        if holder is None:
            continue
        if not force:
            raise LockHeldError(holder)
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
def rebuild_index(
    ctx: click.Context,
    paths: tuple[str, ...],
    index_interval_bytes: int | None,
    max_index_size: int | None,
    metadata: str | None,
    **kw: Any,
) -> None:
    """Rebuild .index, .timeindex (and .txnindex) from the log, byte for byte as Kafka's
    LogSegment.recover does, at each topic's index.interval.bytes. PATH: a .log, a segment's
    files, a partition dir or a log dir."""
    config = index_config(paths, index_interval_bytes, max_index_size, metadata)
    _run(ctx, paths, lambda t, jobs: plan_rebuild_index(t, config, jobs), config, **kw)


@click.command("trim-index")
@click.argument("paths", nargs=-1, required=True)
@click.option("--include-active", is_flag=True, help="Trim the active segment's indexes too.")
@write_options
@click.pass_context
def trim_index(ctx: click.Context, paths: tuple[str, ...], include_active: bool, **kw: Any) -> None:
    """Trim the zero-filled preallocated tail of closed segments' indexes, as a clean shutdown
    does (trimToValidSize)."""
    _run(ctx, paths, lambda t, jobs: plan_trim_index(t, include_active), IndexConfig(), **kw)


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
def recover(
    ctx: click.Context,
    paths: tuple[str, ...],
    index_interval_bytes: int | None,
    max_index_size: int | None,
    metadata: str | None,
    as_broker: bool,
    **kw: Any,
) -> None:
    """Do what the broker's recovery does to the segments verify flags: cut each log at its
    first invalid batch (the cut bytes are kept in NAME.log.kdump-cut-POSITION), rebuild the
    indexes; then what the broker's next start does (producer snapshots above the log end
    deleted, the recovery point clamped to the log end offset), the originals kept."""
    config = index_config(paths, index_interval_bytes, max_index_size, metadata)
    scope = Scope.BROKER if as_broker else Scope.DAMAGED
    _run(ctx, paths, lambda t, jobs: plan_recover(t, config, jobs, scope), config, **kw)
