"""``kdump explain PATH...``: why segments rolled, what retention deletes and when, why the
cleaner does or does not clean; settings from options, server.properties or describe output."""

from __future__ import annotations

import sys

import click

from kdump.commands.options import (
    config_layers,
    config_options,
    format_option,
    no_progress_option,
    now_option,
    prom_option,
)
from kdump.commands.outcome import answer, metrics_run, refuse_if_nothing_read
from kdump.errors import ExitCode
from kdump.explain import ExplainOptions, explain_paths
from kdump.render.explain import render_json, render_text
from kdump.render.progress_display import progress, show_progress
from kdump.run import log_dir_of


@click.command("explain")
@click.argument("paths", nargs=-1, required=True)
@config_options
@now_option
@format_option("text", "json")
@click.option(
    "--deep",
    is_flag=True,
    help="Exact keys in the cleaner's map, with per-key counts (memory grows with the keys).",
)
@click.option(
    "--offset-map-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Size of the cleaner's key map (default: log.cleaner.dedupe.buffer.size / "
    "log.cleaner.threads, as one cleaner thread has).",
)
@prom_option
@no_progress_option
@click.pass_context
def explain(
    ctx: click.Context,
    paths: tuple[str, ...],
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    metadata: str | None,
    now: int,
    fmt: str,
    deep: bool,
    offset_map_bytes: int | None,
    prom: str | None,
    quiet: bool,
) -> None:
    """Explain partition dirs or log dirs: why each segment rolled, what retention deletes
    and when, why compaction does or does not run. Reads only; no broker needed.

    Exit codes: 0 explained (explanations are facts, not problems), 3 a path, setting or
    checkpoint that cannot be read (every readable path is still explained).
    """
    layers = config_layers(
        configs, server_properties, describe_output, paths=paths, metadata=metadata
    )
    if deep:
        click.echo(
            "kdump: warning: --deep keeps every key of the cleaning range in memory",
            err=True,
        )
    options = ExplainOptions(now=now, deep=deep, offset_map_bytes=offset_map_bytes)
    with metrics_run("explain", prom) as run:
        with progress(show_progress(quiet), "explain", quiet=quiet) as meter:
            result = explain_paths(list(paths), layers, options, meter)
        refuse_if_nothing_read(result.unreadable, bool(result.partitions or result.skipped))
        run.log_dirs = [log_dir_of(p.path) for p in result.partitions]
        if prom is not None:
            from kdump.metrics import explain_families

            run.measures = explain_families(result)
        out = sys.stdout
        with answer(result.unreadable, ExitCode.OK, run):
            if fmt == "json":
                out.write(render_json(result) + "\n")
            else:
                render_text(result, out, out.isatty())
            out.flush()
    ctx.exit(run.exit_status)
