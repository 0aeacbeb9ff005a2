"""``kdump lookup``: find a message by offset or by timestamp as the broker does, and show how."""

from __future__ import annotations

import sys
from typing import Any

import click

from kdump.commands.filters import JAVA_LONG
from kdump.commands.options import format_option, object_store, store_options, timestamp_option
from kdump.commands.output import pipe_safe
from kdump.errors import ExitCode
from kdump.lookup import Outcome, lookup_offset, lookup_timestamp
from kdump.render.console import TextConsole
from kdump.render.dump_segments import DumpOptions
from kdump.render.jsonl import to_json
from kdump.render.lookup import explain_tables, lookup_lines, lookup_object

"""Width of the --explain tables when stdout is not a terminal (a terminal gives its own)."""


@click.command("lookup")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--offset", type=JAVA_LONG, default=None, help="Find the record at this offset.")
@timestamp_option(
    "--timestamp",
    help="Find what ListOffsets answers for this time: epoch ms or ISO-8601 with a zone.",
)
@format_option("text", "json")
@click.option("--explain", is_flag=True, help="Show each step as a table (text format).")
@click.option("--print-data-log", is_flag=True, help="Print the record's key and value.")
@store_options
@click.pass_context
def lookup(
    ctx: click.Context,
    directory: str,
    offset: int | None,
    timestamp: int | None,
    fmt: str,
    explain: bool,
    print_data_log: bool,
    **store: Any,
) -> None:
    """Find a message in partition DIRECTORY by --offset or --timestamp, as the broker does.

    Exit code 0 when found (index warnings go to stderr), 1 when the offset is not there
    (OFFSET_OUT_OF_RANGE, the log end, no offset for the timestamp, or an offset no longer in
    the log: a fetch returns the next one), 2 when a batch on the way does not parse, 3 when
    DIRECTORY cannot be read. DIRECTORY may be a partition's
    URL in an object store (s3://, gs://, az://, file://), in any layout of tiered storage.
    """
    objects = object_store(store)
    if (offset is None) == (timestamp is None):
        raise click.UsageError("give exactly one of --offset and --timestamp")
    from kdump.discovery import open_partition

    with open_partition(directory, objects) as log:
        if offset is not None:
            result = lookup_offset(log, offset)
        else:
            assert timestamp is not None
            result = lookup_timestamp(log, timestamp)
        for warning in result.warnings:
            click.echo(f"kdump: warning: {warning}", err=True)
        code = _exit_code(result.outcome)
        with pipe_safe(code):
            if fmt == "json":
                click.echo(to_json(lookup_object(result)))
            else:
                if explain:
                    console = TextConsole(sys.stdout, sys.stdout.isatty())
                    for table in explain_tables(result):
                        console.table(table)
                for line in lookup_lines(result, DumpOptions(print_data_log=print_data_log)):
                    click.echo(line)
            sys.stdout.flush()
    ctx.exit(code)


def _exit_code(outcome: Outcome) -> ExitCode:
    if outcome is Outcome.FOUND:
        return ExitCode.OK
    return ExitCode.ERRORS if outcome is Outcome.DAMAGED else ExitCode.WARNINGS
