"""``kdump compact PARTITION... --dry-run | --output-dir DIR``: one cleaning of each compacted
partition as the broker's log cleaner runs it now, counted or written (kdump.compact)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kdump.commands.options import config_layers, config_options, format_option, now_option
from kdump.errors import ExitCode, InputError


@click.command("compact")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--dry-run", is_flag=True, help="Say what one cleaning keeps and drops; write nothing."
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the cleaned segments (.log, .index, .timeindex, .txnindex) under DIR/PARTITION "
    "and the new cleaner-offset-checkpoint entry in DIR; the partition is left as it is.",
)
@config_options
@now_option
@click.option(
    "--dedupe-buffer-size",
    type=click.IntRange(min=1),
    default=None,
    help="log.cleaner.dedupe.buffer.size: the cleaners' key maps, all threads together.",
)
@click.option(
    "--cleaner-threads",
    type=click.IntRange(min=1),
    default=None,
    help="log.cleaner.threads: the dedupe buffer is shared among them.",
)
@format_option("text", "json")
@click.pass_context
def compact(
    ctx: click.Context,
    paths: tuple[str, ...],
    dry_run: bool,
    output_dir: Path | None,
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    metadata: str | None,
    now: int,
    dedupe_buffer_size: int | None,
    cleaner_threads: int | None,
    fmt: str,
) -> None:
    """Run the log cleaner's next cleaning of compacted partitions offline: which offsets it
    takes, whether its key map holds the whole dirty section, the segment groups it rewrites,
    what it keeps and drops, and the next cleaner-offset-checkpoint. With --output-dir, the
    cleaned segments byte for byte as Kafka's Cleaner writes them.

    Exit codes: 0 done, 2 a cleaning fails (the broker marks such a partition uncleanable),
    3 a path or setting that cannot be read.
    """
    from kdump.compact import CompactOptions, compact_partition
    from kdump.discovery import discover
    from kdump.render.compact import render_text
    from kdump.unified_log import OpenOptions

    if dry_run == (output_dir is not None):
        raise click.UsageError("give one of --dry-run and --output-dir")
    extra = list(configs)
    if dedupe_buffer_size is not None:
        extra.append(f"log.cleaner.dedupe.buffer.size={dedupe_buffer_size}")
    if cleaner_threads is not None:
        extra.append(f"log.cleaner.threads={cleaner_threads}")
    layers = config_layers(
        tuple(extra), server_properties, describe_output, paths=paths, metadata=metadata
    )
    found = discover(paths, options=OpenOptions(now_ms=now, layers=layers), urls=False)
    if found.errors:
        raise found.errors[0]
    options = CompactOptions(now=now, output_dir=output_dir)
    status = ExitCode.OK
    out = sys.stdout
    logs = [log for log in found.partitions if not log.is_metadata_log]
    if not logs:
        raise InputError(paths[0], "no partition directory to compact")
    for log in logs:
        done = compact_partition(log, options)
        if done.result.failure is not None:
            status = ExitCode.ERRORS
        if fmt == "json":
            out.write(json.dumps(done.to_dict()) + "\n")
        else:
            for line in render_text(done):
                out.write(line + "\n")
        log.close()
    out.flush()
    ctx.exit(status)
