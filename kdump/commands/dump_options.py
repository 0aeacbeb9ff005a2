"""kafka-dump-log.sh's options, shared by ``kdump --files`` (the root command: imported by
every run to read its command line) and ``kdump dump``: declared here, light; the dump itself is
kdump.commands.dump, imported when a dump runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kdump.commands.filters import filter_options
from kdump.commands.options import apply, max_batch_bytes_option
from kdump.releases import LATEST, RELEASES

F = TypeVar("F", bound=Callable[..., Any])

INT32_MAX = 2**31 - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""kafka-dump-log.sh's --max-message-size."""

DECODER_OPTIONS = (  # in DumpLogSegmentsOptions.messageParser()'s order of precedence
    ("offsets", "Decode __consumer_offsets records as JSON. Implies --print-data-log."),
    ("transaction-log", "Decode __transaction_state records as JSON. Implies --print-data-log."),
    ("cluster-metadata", "Decode KRaft metadata logs and snapshots. Implies --print-data-log."),
    (
        "remote-log-metadata",
        "Decode __remote_log_metadata records (tiered storage). Implies --print-data-log.",
    ),
    (
        "share-group-state",
        "Decode __share_group_state records as JSON. Implies --print-data-log.",
    ),
)


_DUMP_OPTIONS = [
    click.option("--print-data-log", is_flag=True, help="Print keys and values (deep)."),
    click.option("--deep-iteration", is_flag=True, help="Decode every record."),
    click.option("--verify-index-only", is_flag=True, help="Check index entries, print none."),
    click.option(
        "--index-sanity-check",
        is_flag=True,
        help="Run the broker's startup index check.",
    ),
    click.option(
        "--max-message-size",
        type=click.IntRange(min=0),
        default=DEFAULT_MAX_MESSAGE_SIZE,
        show_default=True,
        help="Largest batch an index entry may point at.",
    ),
    click.option(
        "--max-bytes",
        type=click.IntRange(min=0),
        default=INT32_MAX,
        show_default=True,
        help="Read at most this many bytes of each .log.",
    ),
    max_batch_bytes_option(),
    click.option(
        "--skip-record-metadata",
        is_flag=True,
        help="Omit record metadata in deep output.",
    ),
    click.option(
        "--key-decoder-class",
        "--key-decoder",
        "key_decoder",
        default=None,
        help="string (Kafka's StringDecoder, the text default; JSON keeps the bytes unless "
        "it is asked for), hex, base64, schema-registry, module:function or a kdump.decoders "
        "plugin. Implies --print-data-log.",
    ),
    click.option(
        "--value-decoder-class",
        "--value-decoder",
        "value_decoder",
        default=None,
        help="As --key-decoder-class, for values. Implies --print-data-log.",
    ),
    click.option(
        "--schema-dir",
        type=click.Path(file_okay=False, exists=True),
        default=None,
        help="schema-registry decoder: <id>.avsc, <id>.proto or <id>.json schema files.",
    ),
    click.option(
        "--schema-registry-url",
        default=None,
        help="schema-registry decoder: fetch GET <url>/schemas/ids/<id> (once per id).",
    ),
    *(click.option(f"--{name}-decoder", is_flag=True, help=what) for name, what in DECODER_OPTIONS),
    click.option(
        "--kafka-release",
        type=click.Choice(RELEASES),
        default=str(LATEST),
        show_default=True,
        help="Print as this Kafka release's kafka-dump-log.sh prints, where releases differ.",
    ),
]


def dump_options(f: F) -> F:
    """kafka-dump-log.sh's options, shared by ``kdump --files`` and ``kdump dump``."""
    return filter_options(apply(f, _DUMP_OPTIONS))


__all__ = ["DECODER_OPTIONS", "DEFAULT_MAX_MESSAGE_SIZE", "dump_options"]
