"""The batch filter options, shared by ``kdump --files``, ``kdump dump`` and ``kdump txn``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kdump.commands.common import apply

if TYPE_CHECKING:
    from kdump.format.filters import BatchFilter, Range

F = TypeVar("F", bound=Callable[..., Any])

# what the batch header can hold (the producer id, producer epoch and leader epoch fields)
JAVA_LONG = click.IntRange(-(1 << 63), (1 << 63) - 1)
JAVA_INT = click.IntRange(-(1 << 31), (1 << 31) - 1)
JAVA_SHORT = click.IntRange(-(1 << 15), (1 << 15) - 1)


def _range(parse_bound: Callable[[str], int]) -> Callable[..., Range | None]:
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> Range | None:
        if value is None:
            return None
        from kdump.format.filters import parse_range

        try:
            return parse_range(value, parse_bound)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None

    return convert


def _offset(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text}: not an offset") from None


def _timestamp(text: str) -> int:
    from kdump.units import parse_timestamp

    return parse_timestamp(text)


def filter_options(f: F) -> F:
    """--producer-id, --producer-epoch, --leader-epoch, --offset-range, --time-range."""
    options = [
        click.option(
            "--producer-id", type=JAVA_LONG, default=None, help="Only this producer's batches."
        ),
        click.option(
            "--producer-epoch",
            type=JAVA_SHORT,
            default=None,
            help="Only batches of this producer epoch.",
        ),
        click.option(
            "--leader-epoch",
            type=JAVA_INT,
            default=None,
            help="Only batches of this partition leader epoch.",
        ),
        click.option(
            "--offset-range",
            metavar="A:B",
            default=None,
            callback=_range(_offset),
            help="Only batches with offsets in A..B (inclusive; A: or :B leave an end open).",
        ),
        click.option(
            "--time-range",
            metavar="T1:T2",
            default=None,
            callback=_range(_timestamp),
            help="Only batches with timestamps in T1..T2 (epoch ms or ISO-8601 with a zone).",
        ),
    ]
    return apply(f, options)


def batch_filter(kw: dict[str, Any]) -> BatchFilter:
    """The filter the options above describe."""
    from kdump.format.filters import BatchFilter

    return BatchFilter(
        producer_id=kw["producer_id"],
        producer_epoch=kw["producer_epoch"],
        leader_epoch=kw["leader_epoch"],
        offsets=kw["offset_range"],
        timestamps=kw["time_range"],
    )
