"""``kdump report PATH... -o report.html``: one self-contained HTML page with plots, for people
who must understand a partition quickly (kdump.report: collect, then render)."""

from __future__ import annotations

from pathlib import Path

import click

from kdump.commands.options import (
    config_layers,
    config_options,
    jobs_option,
    no_progress_option,
    now_option,
    output_file,
)
from kdump.commands.outcome import refuse_if_nothing_read, tell_unreadable
from kdump.errors import ExitCode
from kdump.render.progress import progress, show_progress


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
@config_options
@jobs_option
@no_progress_option
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
) -> None:
    """Write an HTML report of partition dirs or log dirs: a verdict naming what is wrong and
    where, a map and a sortable table of every partition (status, size, age, why its segments
    rolled, retention and compaction at --now, open transactions, findings), then a section
    with plots for each partition that needs a look (the bytes recovery cuts marked on its
    log) and the largest; the model behind it embedded as JSON. Opens offline: nothing is
    loaded from anywhere.

    Exit codes: 0 written, no errors found; 2 written, errors found; 3 a usage or I/O problem
    (a path that cannot be read is named and the others are still reported).
    """
    from kdump.render.prom import write_textfile
    from kdump.report import ReportOptions, collect, render_html

    options = ReportOptions(
        now=now,
        layers=config_layers(
            configs, server_properties, describe_output, paths=paths, metadata=metadata
        ),
    )
    with progress(show_progress(quiet), "report") as meter:
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
