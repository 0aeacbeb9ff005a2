"""`kdump txn PATH...`: open and hanging transactions, what they block, and how to end them."""

from __future__ import annotations

import sys
from typing import Any

import click

from kdump.commands.filters import batch_filter, filter_options
from kdump.commands.options import (
    format_option,
    kafka_option,
    metadata_option,
    no_progress_option,
    now_option,
    prom_option,
)
from kdump.commands.outcome import answer, metrics_run, refuse_if_nothing_read
from kdump.errors import ExitCode
from kdump.render.progress_display import progress, show_progress
from kdump.render.txn import render_json, render_text
from kdump.run import log_dir_of
from kdump.txn.analysis import TxnOptions, analyze_paths

EXIT_CODES = {0: ExitCode.OK, 1: ExitCode.WARNINGS, 2: ExitCode.ERRORS}


@click.command()
@click.argument("paths", nargs=-1, required=True)
@format_option("text", "json")
@now_option
@kafka_option(
    "--transaction-max-timeout-ms",
    "transaction.max.timeout.ms",
    "an open transaction older than this is hanging (find-hanging's test)",
)
@kafka_option(
    "--producer-id-expiration-ms",
    "producer.id.expiration.ms",
    "producers idle this long are dropped when the snapshot loads, as the broker does",
    unset="the broker's in the metadata image (--metadata; a dynamic broker config), else "
    "Kafka's 86400000",
)
@click.option(
    "--bootstrap-server",
    default=None,
    help="Put these servers in the printed kafka-transactions.sh commands.",
)
@kafka_option(
    "--transaction-state-partitions",
    "transaction.state.log.num.partitions",
    "__transaction_state's partition count",
    unset="the topic's in the metadata image (--metadata), else Kafka's 50, unless the "
    "partitions and transactional ids read show another",
)
@metadata_option
@click.option(
    "--transactional-id",
    "transactional_ids",
    multiple=True,
    help="Print the __transaction_state partition this id maps to (repeatable).",
)
@filter_options
@prom_option
@no_progress_option
@click.pass_context
def txn(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str,
    now: int,
    transaction_max_timeout_ms: int,
    producer_id_expiration_ms: int | None,
    bootstrap_server: str | None,
    transaction_state_partitions: int | None,
    metadata: str | None,
    transactional_ids: tuple[str, ...],
    prom: str | None,
    quiet: bool,
    **kw: Any,
) -> None:
    """Open and hanging transactions in partition dirs or log dirs, read offline.

    Builds each partition's producer state as the broker does (snapshot, then the batches
    after it), finds open transactions and the last stable offset they hold back, checks them
    against __transaction_state partitions found under PATHS, and prints the
    kafka-transactions.sh command that aborts each hanging one. The filters choose which
    producers and transactions are reported; the state is always built from every batch.

    Exit codes: 0 no open transaction, 1 open but within the timeout, 2 hanging,
    3 a usage or I/O problem.
    """
    partitions_in_image, expiration_in_image = _from_image(paths, metadata)
    if producer_id_expiration_ms is None:
        producer_id_expiration_ms = expiration_in_image
    options = TxnOptions(
        now=now,
        transaction_max_timeout_ms=transaction_max_timeout_ms,
        producer_id_expiration_ms=producer_id_expiration_ms,
        batch_filter=batch_filter(kw),
        bootstrap_server=bootstrap_server,
        transaction_state_partitions=transaction_state_partitions,
        transaction_state_partitions_in_image=partitions_in_image,
    )
    with metrics_run("txn", prom) as run:
        with progress(show_progress(quiet), "txn", quiet=quiet) as meter:
            result = analyze_paths(list(paths), options, transactional_ids, meter)
        refuse_if_nothing_read(
            result.unreadable, bool(result.partitions or not result.coordinator.is_empty)
        )
        code = EXIT_CODES[result.status()]
        run.log_dirs = [log_dir_of(p.path) for p in result.partitions]
        run.exit_status = code
        if prom is not None:
            from kdump.metrics import txn_families

            run.measures = txn_families(result)
        out = sys.stdout
        with answer(result.unreadable, code, run):
            if fmt == "json":
                out.write(render_json(result) + "\n")
            else:
                render_text(result, out, out.isatty())
            out.flush()
    ctx.exit(run.exit_status)


def _from_image(paths: tuple[str, ...], metadata: str | None) -> tuple[int | None, int]:
    """From the metadata image beside ``paths`` (or the one ``--metadata`` names):
    __transaction_state's partition count (None where it holds no such topic), and
    producer.id.expiration.ms, a dynamic broker config (KIP-854: this broker's, else the
    cluster's default, else Kafka's)."""
    from kdump.config import OPTION_CONFIGS
    from kdump.kraft.configs import found_metadata, node_configs
    from kdump.txn.coordinator import TRANSACTION_STATE_TOPIC

    load, note = found_metadata(paths, metadata)
    if note is not None:
        click.echo(f"kdump: note: {note}", err=True)
    key = OPTION_CONFIGS["producer.id.expiration.ms"]
    raw = None if load is None else node_configs(load).broker_value(key.name)
    expiration = key.default
    try:
        expiration = key.parse(raw) if raw is not None else expiration
    except ValueError as e:  # Kafka took it when it was set; today's validator does not
        click.echo(f"kdump: note: {key.name}={raw} in the metadata image: {e}; not used", err=True)
    assert isinstance(expiration, int)
    topic = None if load is None else load.image.topics_by_name.get(TRANSACTION_STATE_TOPIC)
    partitions = None if topic is None or not topic.partitions else len(topic.partitions)
    return partitions, expiration
