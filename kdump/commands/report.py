"""``kdump report PATH... -o report.html``: one self-contained HTML page with plots, for people
who must understand a partition quickly (kdump.report: collect, then render)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kdump.commands.options import (
    config_layers,
    config_options,
    jobs_option,
    no_progress_option,
    now_option,
    object_store,
    output_file,
    store_options,
)
from kdump.commands.outcome import refuse_if_nothing_read, tell_unreadable
from kdump.errors import ExitCode
from kdump.render.progress_display import progress, show_progress

if TYPE_CHECKING:
    from kdump.storage import ObjectStore


@click.command("report")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    callback=output_file,
    help="The HTML file to write (replaced atomically).",
)
@now_option
@click.option(
    "--stale-after",
    type=click.FloatRange(min=0),
    default=36.0,
    show_default=True,
    metavar="HOURS",
    help="From verify results: a broker whose newest result is older than this is stale.",
)
@config_options
@jobs_option
@no_progress_option
@store_options
@click.pass_context
def report(
    ctx: click.Context,
    paths: tuple[str, ...],
    output: Path,
    now: int,
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    metadata: str | None,
    jobs: int,
    quiet: bool,
    stale_after: float,
    **store: Any,
) -> None:
    """Write an HTML report of partition dirs or log dirs: a verdict naming what is wrong and
    where, a map and a sortable table of every partition (status, size, age, why its segments
    rolled, retention and compaction at --now, open transactions, findings), then a section
    with plots for each partition that needs a look (the bytes recovery cuts marked on its
    log) and the largest; the model behind it embedded as JSON. Opens offline: nothing is
    loaded from anywhere.

    Given the results of `kdump verify --format json --output ...` instead (files, folders,
    objects or prefixes of .json), one page for the fleet: every broker's newest result, every
    partition in them, stale brokers flagged; no segment is read again.

    Exit codes: 0 written, no errors found; 2 written, errors found; 3 a usage or I/O problem
    (a path that cannot be read is named and the others are still reported).
    """
    from kdump.audit_results import looks_like_audits

    objects = object_store(store)
    audits = [looks_like_audits(p, objects) for p in paths]
    if any(audits):
        if not all(audits):
            raise click.UsageError(
                "give verify results (.json) or partitions and log dirs to read, not both"
            )
        ctx.exit(fleet_report(list(paths), objects, output, now, stale_after, quiet))
    from kdump.report import ReportOptions, collect, render_html
    from kdump.storage.outputs import write_textfile

    options = ReportOptions(
        now=now,
        layers=config_layers(
            configs, server_properties, describe_output, paths=paths, metadata=metadata
        ),
    )
    with progress(show_progress(quiet), "report", quiet=quiet) as meter:
        model = collect(list(paths), options, meter, jobs)
    refuse_if_nothing_read(model.unreadable, bool(model.log_dirs))
    write_textfile(output, render_html(model, list(paths)))
    errors = sum(d.counts()["error"] for d in model.log_dirs)
    if not quiet:
        click.echo(
            f"{output}: {len(model.partitions)} partition(s) in {len(model.log_dirs)} log dir(s), "
            f"{errors} error(s)",
            err=True,
        )
    ctx.exit(tell_unreadable(model.unreadable, ExitCode.ERRORS if errors else ExitCode.OK))


def fleet_report(
    paths: list[str], store: ObjectStore, output: Path, now: int, stale_after: float, quiet: bool
) -> int:
    """``kdump report RESULTS... -o``: the fleet page from verify results; the exit code."""
    from kdump.audit_results import read_fleet
    from kdump.report.fleet import render_fleet_html
    from kdump.storage.outputs import write_textfile

    fleet = read_fleet(paths, store, now, int(stale_after * 3_600_000))
    refuse_if_nothing_read(fleet.unreadable, bool(fleet.brokers))
    write_textfile(output, render_fleet_html(fleet, paths))
    errors = fleet.counts()["error"]
    if not quiet:
        stale = sum(b.stale for b in fleet.brokers)
        click.echo(
            f"{output}: {len(fleet.brokers)} broker(s), {stale} stale, {errors} error(s)", err=True
        )
    return tell_unreadable(fleet.unreadable, ExitCode.ERRORS if errors else ExitCode.OK)
