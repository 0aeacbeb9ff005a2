"""``kdump compact PARTITION... --dry-run | --output-dir DIR``: one cleaning of each compacted
partition as the broker's log cleaner runs it now, counted or written (kdump.compact)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kdump.commands.options import config_layers, config_options, format_option, now_option
from kdump.errors import ExitCode, InputError
from kdump.untrusted import json_text


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
@click.option(
    "--in-place",
    is_flag=True,
    help="Swap the cleaned segments in for the ones they replace, as the broker's cleaner does "
    "(the broker stopped: the log dir's .lock is taken), each replaced file kept as "
    "NAME.kdump-bak; the cleaner-offset-checkpoint entry updated.",
)
@click.option(
    "--backup-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --in-place: keep the replaced files under DIR/PARTITION instead of beside them.",
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
    in_place: bool,
    backup_dir: Path | None,
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
    cleaned segments byte for byte as Kafka's Cleaner writes them; with --in-place (the broker
    stopped), swapped in as the broker's cleaner swaps them, the replaced files kept.

    Exit codes: 0 done, 2 a cleaning fails (the broker marks such a partition uncleanable),
    3 a path or setting that cannot be read, or a refusal (a running broker's lock, files an
    interrupted compaction left, a topic not known to be compacted).
    """
    from kdump.compact import CompactOptions, compact_in_place, compact_partition
    from kdump.discovery import discover
    from kdump.render.compact import render_text
    from kdump.unified_log import OpenOptions

    if dry_run + (output_dir is not None) + in_place != 1:
        raise click.UsageError("give one of --dry-run, --output-dir and --in-place")
    if backup_dir is not None and not in_place:
        raise click.UsageError("--backup-dir goes with --in-place")
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
    done_each = (
        compact_in_place(logs, options, backup_dir)
        if in_place
        else (compact_partition(log, options) for log in logs)
    )
    for done in done_each:
        log = done.log
        if done.result.failure is not None:
            status = ExitCode.ERRORS
        if fmt == "json":
            out.write(json_text(done.to_dict()) + "\n")
        else:
            for line in render_text(done):
                out.write(line + "\n")
        log.close()
    out.flush()
    ctx.exit(status)
