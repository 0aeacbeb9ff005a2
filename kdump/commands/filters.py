"""The batch filter options, shared by ``kdump --files``, ``kdump dump`` and ``kdump txn``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kdump.commands.options import apply

if TYPE_CHECKING:
    from kdump.format.filters import BatchFilter, Range

F = TypeVar("F", bound=Callable[..., Any])


class JavaInteger(click.types.IntParamType):
    """An integer a Java field of ``bits`` bits holds (the batch header's producer id, producer
    epoch and leader epoch; an offset); shown as INTEGER in --help."""

    def __init__(self, java_type: str, bits: int) -> None:
        self.java_type = java_type
        self.min, self.max = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not self.min <= number <= self.max:
            self.fail(f"{number} is not a Java {self.java_type} ({self.min} to {self.max})")
        return number


JAVA_LONG = JavaInteger("long", 64)
JAVA_INT = JavaInteger("int", 32)
JAVA_SHORT = JavaInteger("short", 16)


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
