"""``kdump explain PATH...``: why segments rolled, what retention deletes and when, why the
cleaner does or does not clean; settings from options, server.properties or describe output."""

from __future__ import annotations

import sys

import click

from kdump.commands.common import (
    format_option,
    metrics_run,
    no_progress_option,
    now_option,
    progress,
    prom_option,
    show_progress,
)
from kdump.config import (
    ConfigLayers,
    parse_config_option,
    read_describe_output,
    read_server_properties,
)
from kdump.errors import ExitCode
from kdump.explain import ExplainOptions, explain_paths
from kdump.render.explain import render_json, render_text
from kdump.run import log_dir_of


@click.command("explain")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A topic setting as Kafka names it (segment.bytes=1048576), or a broker one "
    "(log.cleaner.dedupe.buffer.size=...). Repeatable; wins over the files.",
)
@click.option(
    "--server-properties",
    type=click.Path(dir_okay=False),
    default=None,
    help="The broker's server.properties: its log.* settings are the topic defaults.",
)
@click.option(
    "--describe-output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output of kafka-configs.sh --describe --all (topics, several welcome) saved to a file.",
)
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
    checkpoint that cannot be read.
    """
    layers = ConfigLayers(
        options=tuple(parse_config_option(c) for c in configs),
        describe=None if describe_output is None else read_describe_output(describe_output),
        server_properties={}
        if server_properties is None
        else read_server_properties(server_properties),
    )
    if deep:
        click.echo(
            "kdump: warning: --deep keeps every key of the cleaning range in memory",
            err=True,
        )
    options = ExplainOptions(now=now, deep=deep, offset_map_bytes=offset_map_bytes)
    with metrics_run("explain", prom) as run:
        with progress(show_progress(quiet), "explain") as meter:
            result = explain_paths(list(paths), layers, options, meter)
        run.finish([log_dir_of(p.path) for p in result.partitions])
        if prom is not None:
            from kdump.metrics import explain_families

            run.measures = explain_families(result)
        out = sys.stdout
        if fmt == "json":
            out.write(render_json(result) + "\n")
        else:
            render_text(result, out, out.isatty())
        out.flush()
    ctx.exit(ExitCode.OK)
