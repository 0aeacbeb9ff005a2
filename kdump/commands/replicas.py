"""`kdump replicas PATH PATH...`: compare a partition's replicas offline, by the broker's rules."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from kdump.commands.options import (
    format_option,
    object_store,
    prom_option,
    store_options,
    units_callback,
)
from kdump.commands.outcome import answer, metrics_run
from kdump.errors import InputError
from kdump.run import log_dir_of


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--leader",
    default=None,
    metavar="PATH",
    help="The replica that leads (one of PATHS) [default: the greatest latest leader epoch, "
    "then the greatest log end offset].",
)
@click.option(
    "--export-lost",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Write the records each follower's truncation drops (and the leader lacks) to "
    "DIR/<partition>.replica-<N>.jsonl (salvage's JSON Lines; N: the replica's place in PATHS).",
)
@click.option(
    "--compaction-key-memory",
    callback=units_callback("parse_bytes"),
    default=None,
    metavar="SIZE",
    help="Memory for the keys of a compacted partition's content comparison, both replicas "
    "together (64MiB, 1G); past it, keys met for the first time are not compared "
    "[default: 128MiB].",
)
@format_option("text", "json")
@prom_option
@store_options
@click.pass_context
def replicas(
    ctx: click.Context,
    paths: tuple[str, ...],
    leader: str | None,
    export_lost: Path | None,
    compaction_key_memory: int | None,
    fmt: str,
    prom: str | None,
    **store: Any,
) -> None:
    """Compare two or more replicas of one partition (partition directories, or prefixes in an
    object store) from different brokers or backups: each replica's log start, log end, high
    watermark, leader epochs and damage; the leader (--leader, else the greatest latest epoch,
    then the greatest log end offset); for every other replica, where it truncates when it
    fetches from that leader (LeaderEpochFileCache.endOffsetFor, AbstractFetcherThread) and
    the records, bytes and transaction markers that drops and the leader lacks; and batches
    that differ at the same offset where both keep them. Where either replica's cleaner
    rewrote a compacted partition (its cleaner-offset-checkpoint), their content instead: the
    latest value of every key and the fate of every transaction, up to the lower high
    watermark. Reads only (--export-lost and --prom write).

    Exit codes: 0 nothing lost, 1 a truncation drops records, 2 batches or content differ or
    a replica is damaged, 3 a usage or I/O problem.
    """
    from kdump.discovery import open_partition
    from kdump.replica_content import DEFAULT_KEY_MEMORY
    from kdump.replicas import compare_replicas

    if len(paths) < 2:
        raise click.UsageError("give two or more replicas of the partition")
    objects = object_store(store)
    leader_index = _leader_index(paths, leader)
    with metrics_run("replicas", prom) as run, contextlib.ExitStack() as opened:
        logs = [opened.enter_context(open_partition(p, objects)) for p in paths]
        _same_partition(logs)
        result = compare_replicas(logs, leader_index, compaction_key_memory or DEFAULT_KEY_MEMORY)
        if export_lost is not None:
            _export(result, export_lost, logs)
        run.log_dirs = list(dict.fromkeys(log_dir_of(log.location) for log in logs))
        info = run.finish() if fmt == "json" else None
        if prom is not None:
            from kdump.metrics import replicas_families

            run.measures = replicas_families(result)
        out = sys.stdout
        with answer([], result.exit_status(), run):
            if fmt == "json":
                from kdump.render.replicas import render_json

                out.write(render_json(result, info) + "\n")
            else:
                from kdump.render.replicas import text_lines

                for line in text_lines(result):
                    out.write(line + "\n")
            out.flush()
    ctx.exit(run.exit_status)


def _leader_index(paths: tuple[str, ...], leader: str | None) -> int | None:
    if leader is None:
        return None
    for i, path in enumerate(paths):
        if path == leader or (
            os.path.exists(path) and os.path.exists(leader) and os.path.samefile(path, leader)
        ):
            return i
    raise click.BadParameter(f"{leader} is none of the replicas named", param_hint="--leader")


def _same_partition(logs: list[Any]) -> None:
    """Replicas of one partition: directories named for different partitions are refused."""
    named = {log.topic_partition for log in logs if log.topic_partition is not None}
    if len(named) > 1:
        first = logs[0]
        other = next(
            log for log in logs if log.topic_partition not in (None, first.topic_partition)
        )
        raise InputError(
            other.location,
            f"holds partition {other.name}, not {first.name}: replicas of one partition only",
        )


def _export(result: Any, directory: Path, logs: list[Any]) -> None:
    from kdump.repair.files import local_partitions, refuse_output_inside
    from kdump.replicas import export_lost

    refuse_output_inside(directory, local_partitions(logs), "--export-lost directory")
    for exported in export_lost(result, directory):
        click.echo(
            f"wrote {exported.path} ({exported.records} records {exported.follower.log.location} "
            "loses)",
            err=True,
        )
