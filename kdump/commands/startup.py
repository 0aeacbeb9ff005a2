"""`kdump startup LOGDIR...`: what the broker will do when it starts on these log dirs, and how
long it will take."""

from __future__ import annotations

import sys
from typing import Any

import click

from kdump.commands.options import (
    config_layers,
    config_options,
    format_option,
    kafka_option,
    no_progress_option,
    prom_option,
)
from kdump.commands.outcome import answer, metrics_run, refuse_if_nothing_read
from kdump.errors import ExitCode
from kdump.releases import LATEST, RELEASES, Release

RECOVERY_THREADS = "num.recovery.threads.per.data.dir"


@click.command()
@click.argument("paths", nargs=-1, required=True)
@format_option("text", "json")
@kafka_option(
    "--recovery-threads",
    RECOVERY_THREADS,
    "the threads each log dir's logs load with",
    unset="--config, server.properties, the metadata image's broker config, else the "
    "release's default (2 since 4.0)",
)
@config_options
@click.option(
    "--kafka-release",
    "--kafka-version",
    "kafka_release",
    type=click.Choice(RELEASES),
    default=str(LATEST),
    show_default=True,
    help="The release the broker runs: its defaults apply where nothing sets a value.",
)
@prom_option
@no_progress_option
@click.pass_context
def startup(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str,
    recovery_threads: int | None,
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    metadata: str | None,
    kafka_release: str,
    prom: str | None,
    quiet: bool,
    **kw: Any,
) -> None:
    """What the broker will do when it starts on these log dirs, and how long it will take.

    Reads each log dir as LogManager and LogLoader will at the next start: whether it was shut
    down cleanly, which partitions recover and from where, which indexes are rebuilt, which
    leftover files are settled, where producer state is rebuilt from, what is truncated; the
    KRaft metadata log as the raft layer loads it. Prices the work at rates measured on the
    real broker and spreads it over the recovery threads as the broker does; prints a range,
    and what would shorten it. Run it before starting the broker: it reads, never writes.

    Exit codes: 0 the broker loads everything as it is or recovers it without loss, 1 it drops
    producer state or moves a stray aside, 2 it truncates data or fails to start, 3 a usage or
    I/O problem.
    """
    from kdump.progress import NO_PROGRESS
    from kdump.render.progress_display import progress_display, show_progress
    from kdump.startup import StartupOptions, plan_startup
    from kdump.startup.advice import advise

    layers = config_layers(
        configs, server_properties, describe_output, paths=paths, metadata=metadata
    )
    threads, source = _recovery_threads(recovery_threads, layers, Release.parse(kafka_release))
    options = StartupOptions(threads, source)
    with metrics_run("startup", prom) as run:
        with progress_display(show_progress(quiet), unit="tasks") as display:
            meter = NO_PROGRESS if display is None else display.bar("startup")
            result = plan_startup(list(paths), options, meter)
        refuse_if_nothing_read(result.errors, bool(result.log_dirs))
        advice = advise(result)
        code = _exit_code(result)
        run.log_dirs = [d.path for d in result.log_dirs]
        run.exit_status = code
        if prom is not None:
            from kdump.metrics import startup_families

            run.measures = startup_families(result)
        out = sys.stdout
        with answer(result.errors, code, run):
            if fmt == "json":
                from kdump.render.startup import render_json

                out.write(render_json(result, advice) + "\n")
            else:
                from kdump.render.startup import render_text

                render_text(result, advice, out, out.isatty())
            out.flush()
    ctx.exit(run.exit_status)


def _recovery_threads(given: int | None, layers: Any, release: Release) -> tuple[int, str]:
    """The recovery threads per log dir and where the number came from."""
    from kdump.config import Source, broker_setting

    if given is not None:
        return given, "--recovery-threads"
    setting = broker_setting(layers, RECOVERY_THREADS)
    if setting.source is Source.DEFAULT:
        return release.recovery_threads_default, f"Kafka {release}'s default"
    assert isinstance(setting.value, int)
    return setting.value, setting.origin or setting.source.value


def _exit_code(result: Any) -> int:
    parts = [p for d in result.log_dirs for p in d.partitions]
    parts += [d.metadata for d in result.log_dirs if d.metadata is not None]
    if any(p.bytes_truncated or p.failure for p in parts) or any(
        d.not_partitions for d in result.log_dirs
    ):
        return ExitCode.ERRORS
    if any(p.producer_state_dropped or p.stray for p in parts):
        return ExitCode.WARNINGS
    return ExitCode.OK
