"""`kdump tiered scrub BUCKET_URL --metadata DUMP`: a tiered-storage bucket against
``__remote_log_metadata`` (kdump.tiered.scrub)."""

from __future__ import annotations

import sys
from typing import Any

import click

from kdump.checks.findings import Severity
from kdump.commands.options import (
    fail_on_option,
    format_option,
    jobs_option,
    now_option,
    object_store,
    quiet_option,
    store_options,
    units_callback,
)
from kdump.commands.verify import exit_code
from kdump.render.progress_display import progress, show_progress


@click.group()
def tiered() -> None:
    """Tiered storage (KIP-405): buckets of remote segments and their metadata."""


@tiered.command()
@click.argument("bucket_url")
@click.option(
    "--metadata",
    "metadata_paths",
    multiple=True,
    required=True,
    metavar="DUMP",
    help="A __remote_log_metadata-N partition directory, or a log dir holding them "
    "(repeatable: one broker rarely holds them all).",
)
@click.option(
    "--metadata-partitions",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="remote.log.metadata.topic.num.partitions: which partition holds each partition's "
    "metadata.",
)
@click.option(
    "--grace",
    "grace_ms",
    default="1h",
    show_default=True,
    callback=units_callback("parse_duration"),
    metavar="DURATION",
    help="A copy or delete STARTED longer ago than this (at --now) has stopped: 90s, 30m, 1h, ms.",
)
@now_option
@click.option("--deep", is_flag=True, help="Also CRC-check every batch of every remote segment.")
@format_option("text", "json")
@fail_on_option()
@quiet_option
@jobs_option
@store_options
@click.pass_context
def scrub(
    ctx: click.Context,
    bucket_url: str,
    metadata_paths: tuple[str, ...],
    metadata_partitions: int,
    grace_ms: int,
    now: int,
    deep: bool,
    fmt: str,
    fail_on: str,
    quiet: bool,
    jobs: int,
    **store: Any,
) -> None:
    """Compare the segments in BUCKET_URL (Kafka's RemoteStorageManager layout or Aiven's) with
    their states in __remote_log_metadata: orphans Kafka never deletes, copies stuck in STARTED,
    finished segments whose objects are missing, overlaps Kafka leaves unresolved.

    Exit codes: 0 nothing at or above --fail-on, 1 warnings (--fail-on warning), 2 errors,
    3 a usage or I/O problem.
    """
    from kdump.checks.options import VerifyOptions
    from kdump.render.scrub import render_json, render_text
    from kdump.tiered.scrub import ScrubOptions, scrub_bucket

    objects = object_store(store)
    with progress(show_progress(quiet) and deep, "scrub --deep", quiet=quiet) as meter:
        result = scrub_bucket(
            bucket_url,
            list(metadata_paths),
            ScrubOptions(now_ms=now, grace_ms=grace_ms),
            metadata_partitions,
            VerifyOptions() if deep else None,
            meter,
            jobs,
            objects,
        )
    out = sys.stdout
    if fmt == "json":
        out.write(render_json(result) + "\n")
    else:
        floor = Severity.WARNING if quiet else Severity.INFO
        render_text(result, out, out.isatty(), quiet, floor)
    out.flush()
    ctx.exit(exit_code(result, fail_on))
