"""Every numeric option of every command refuses what is out of its range, exit code 3; an option
holding a Kafka setting takes Kafka's default and validator (kdump.config.OPTION_CONFIGS) and
refuses in one line, in Kafka's words. The options are found by walking the click command tree,
so an option added later cannot escape."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from clirun import run_kdump
from conftest import ORACLE

from kdump.cli import cli
from kdump.commands.options import KafkaOption
from kdump.config import OPTION_CONFIGS, AtLeast, Between, ConfigType


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(cli)

    def walk(path: list[str], command: click.Command) -> Iterator[tuple[list[str], click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk([*path, name], sub)

    yield from walk([], cli)


def _is_numeric(option: click.Option) -> bool:
    return isinstance(option, KafkaOption) or isinstance(
        option.type, click.types._NumberParamTypeBase
    )


NUMERIC = [
    (path, command, option)
    for path, command in _commands()
    for option in command.params
    if isinstance(option, click.Option) and not option.is_flag and _is_numeric(option)
]


def _id(item: tuple[list[str], click.Command, click.Option]) -> str:
    path, _, option = item
    return " ".join([*path, option.opts[0]]) or option.opts[0]


def _lowest(option: click.Option) -> int:
    """The smallest value the option accepts."""
    if isinstance(option, KafkaOption):
        validator = option.key.validator
        assert isinstance(validator, AtLeast | Between), f"{option.opts[0]}: no lower bound"
        return validator.minimum if isinstance(validator, AtLeast) else validator.low
    lowest = getattr(option.type, "min", None)  # click.IntRange, filters.JavaInteger
    assert lowest is not None, f"{option.opts[0]}: no lower bound"
    return int(lowest)


def _argv(path: list[str], command: click.Command, flag: str, value: int) -> list[str]:
    """The command line giving ``flag`` this value, with a stand-in for each required argument."""
    arguments = ["x" for p in command.params if isinstance(p, click.Argument) and p.required]
    return [*path, flag, str(value), *arguments]


def test_the_walk_finds_the_options_of_every_command() -> None:
    found = {_id(item) for item in NUMERIC}
    assert {
        "verify --index-interval-bytes",
        "verify --max-index-size",
        "rebuild-index --max-index-size",
        "recover --index-interval-bytes",
        "spark verify --segment-bytes",
        "txn --producer-id-expiration-ms",
        "lookup --offset",
        "--max-bytes",
    } <= found


@pytest.mark.parametrize("item", NUMERIC, ids=_id)
def test_below_the_range_is_refused(item: tuple[list[str], click.Command, click.Option]) -> None:
    path, command, option = item
    flag = option.opts[0]
    lowest = _lowest(option)
    ran = run_kdump(_argv(path, command, flag, lowest - 1))
    assert ran.exit_code == 3, ran
    assert flag in ran.stderr or option.name in ran.stderr, ran.stderr
    assert len(ran.stderr.splitlines()) == 1, ran.stderr  # one line, as every kdump error
    if isinstance(option, KafkaOption):
        assert ran.stderr.splitlines() == [
            f"kdump: {flag} {lowest - 1}: Invalid value {lowest - 1} for configuration "
            f"{option.key.name}: Value must be at least {lowest}"
        ]


KAFKA = [item for item in NUMERIC if isinstance(item[2], KafkaOption)]


@pytest.mark.parametrize("item", KAFKA, ids=_id)
def test_kafka_setting_has_kafkas_default_and_type(
    item: tuple[list[str], click.Command, click.Option],
) -> None:
    path, command, option = item
    assert isinstance(option, KafkaOption)
    key = OPTION_CONFIGS[option.key.name]
    assert option.default in (None, key.default)
    flag = option.opts[0]
    too_big = (1 << 31) if key.type is ConfigType.INT else (1 << 63)
    ran = run_kdump(_argv(path, command, flag, too_big))
    assert ran.exit_code == 3
    assert ran.stderr.splitlines() == [
        f"kdump: {flag} {too_big}: Invalid value {too_big} for configuration {key.name}: "
        f"Not a number of type {key.type.value}"
    ]


def test_max_index_size_below_one_entry_is_refused_as_kafka_does() -> None:
    """issue 15 point 8: --max-index-size 0 was taken (rebuild then spoke of -1 entries)."""
    ran = run_kdump(["rebuild-index", "--max-index-size", "0", "--dry-run", "x"])
    assert ran.exit_code == 3
    assert ran.stderr == (
        "kdump: --max-index-size 0: Invalid value 0 for configuration segment.index.bytes: "
        "Value must be at least 4\n"
    )


def test_a_time_index_with_no_room_is_worded_without_negative_counts(tmp_path: Path) -> None:
    """--max-index-size 4..23 is valid for Kafka, but leaves a time index no room before its
    closing entry (TimeIndex.isFull: entries >= maxEntries - 1): never "its -1 entries"."""
    partition = tmp_path / "plain-0"
    shutil.copytree(ORACLE / "plain-0", partition)
    ran = run_kdump(["rebuild-index", "--max-index-size", "8", "--dry-run", str(partition)])
    assert "REPAIR_TIMEINDEX_FULL" in ran.stdout
    assert "no room for an entry before the closing one at max index size 8" in ran.stdout
    assert "-1 entries" not in ran.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["verfy"],
        ["verify"],
        ["--files"],
        ["verify", "--no-such-option", "x"],
        ["dump", "--format", "xml", "x"],
    ],
)
def test_a_command_line_click_refuses_is_one_line(argv: list[str]) -> None:
    """Usage errors are one line naming the command and its --help (click's usage block was
    three lines), exit 3."""
    ran = run_kdump(argv)
    assert ran.exit_code == 3
    (line,) = ran.stderr.splitlines()
    assert line.startswith("kdump") and line.endswith("--help')"), line


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["verfiy", "x"], "No such command 'verfiy'. Did you mean 'verify'?"),
        (["rebuild", "x"], "No such command 'rebuild'. Did you mean 'rebuild-index'?"),
        (["frobnicate"], "No such command 'frobnicate'. (see"),
        (["verify", "--jbs", "2", "x"], "No such option '--jbs'. Did you mean '--jobs'?"),
        (["verify", "--bogus", "x"], "No such option '--bogus'. (see"),
        (
            ["--files", "x.log", "--format", "jsonl"],
            "No such option '--format'. kdump dump FILE... takes it (kdump's own form). (see",
        ),
        (
            ["dump", "--files", "x.log"],
            "No such option '--files'. kdump --files FILE,... takes it (kafka-dump-log.sh's "
            "form). (see",
        ),
        (["verify", "--files", "x"], "No such option '--files'. (see"),
    ],
    ids=[
        "command-typo",
        "command-prefix",
        "command-far",
        "option-typo",
        "option-far",
        "option-of-dump",
        "option-of-kafka-dump-log-form",
        "option-of-no-near-command",
    ],
)
def test_a_close_name_is_suggested_and_nothing_else(argv: list[str], suggestion: str) -> None:
    """Issue 28.15: `kdump verfiy` suggested nothing (the commands load lazily, click saw none)
    and `--bogus` suggested `--jobs` (every long option shares `--` with it)."""
    ran = run_kdump(argv)
    assert ran.exit_code == 3
    assert suggestion in ran.stderr, ran.stderr
