"""``kdump report PATH... -o report.html``: one self-contained HTML page with plots, for people
who must understand a partition quickly (kdump.report: collect, then render)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import click

from kdump.commands.common import (
    config_layers,
    config_options,
    kafka_option,
    no_progress_option,
    now_option,
    progress,
    show_progress,
)
from kdump.errors import ExitCode


@click.command("report")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (replaced atomically).",
)
@now_option
@config_options
@kafka_option(
    "--index-interval-bytes", "index.interval.bytes", "what the index density is drawn against"
)
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
    index_interval_bytes: int,
    quiet: bool,
) -> None:
    """Write an HTML report of partition dirs or log dirs: per log dir a summary (findings
    by severity and code, what the broker does at startup); per partition, plots of its
    segments by offset and by time (rolls and why, retention at --now, the cleaner's dirty
    section), index density, open transactions and the last stable offset, and its findings
    (sortable, filterable). Opens offline: nothing is loaded from anywhere.

    Exit codes: 0 written, no errors found; 2 written, errors found; 3 a usage or I/O problem.
    """
    from kdump.report import ReportOptions, collect, render_html

    options = ReportOptions(
        now=now,
        layers=config_layers(configs, server_properties, describe_output),
        index_interval_bytes=index_interval_bytes,
    )
    with progress(show_progress(quiet), "report") as meter:
        model = collect(list(paths), options, meter)
    write_atomically(output, render_html(model, list(paths)))
    errors = sum(d.counts()["error"] for d in model.log_dirs)
    if not quiet:
        click.echo(
            f"{output}: {len(model.partitions)} partition(s) in {len(model.log_dirs)} log dir(s), "
            f"{errors} error(s)",
            err=True,
        )
    ctx.exit(ExitCode.ERRORS if errors else ExitCode.OK)


def write_atomically(path: Path, pieces: Iterable[str]) -> None:
    """Write the pieces to a temporary file beside ``path``, then rename it over ``path``."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for piece in pieces:
                f.write(piece)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
