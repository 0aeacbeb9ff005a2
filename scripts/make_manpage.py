"""Write kdump's man page, docs/kdump.1, from the click command tree (the CLI definitions).

    .venv/bin/python scripts/make_manpage.py           # rewrite docs/kdump.1
    .venv/bin/python scripts/make_manpage.py --check   # exit 1 when docs/kdump.1 is stale

tests/test_manpage.py checks that the committed page is this script's output. Read it with
``man docs/kdump.1``; install it as ``share/man/man1/kdump.1``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from generated import write_or_check  # scripts/generated.py, beside this one

from kdump.cli import cli

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "kdump.1"

EXIT_STATUS = [
    ("0", "nothing to report (verify: nothing at or above --fail-on)."),
    ("1", "warnings (verify --fail-on warning); lookup: the broker would return nothing; "
     "txn: open transactions within their timeout."),
    ("2", "errors: damaged data, a problem reported, a repair that left one."),
    ("3", "bad input: a usage error, an unreadable or missing path, nothing to work on, "
     "a log dir locked by a running broker."),
    ("141", "the reader of standard output left before a streaming command (dump, --files) "
     "had its answer; commands that had it keep their own code."),
]  # fmt: skip


def roff(text: str) -> str:
    """Text as roff: backslashes escaped, no line read as a request, hyphens as minus signs
    where they start an option."""
    out = []
    for line in text.replace("\\", "\\e").splitlines():
        line = line.replace("-", "\\-")
        out.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(out)


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]


def command_section(command: click.Command, path: list[str], parent: click.Context) -> list[str]:
    """The page's lines for one command (and, for a group, each of its commands)."""
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    lines = [
        ".SS " + roff(" ".join(path)),
        ".B " + roff(" ".join(command.collect_usage_pieces(ctx))),
    ]
    lines += [".PP\n" + roff(p) for p in _paragraphs(command.help or "")]
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        lines += [".TP", ".B " + roff(names), roff(" ".join(help_text.split())) or "\\&"]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                lines += command_section(sub, [*path, name], ctx)
    return lines


def manpage() -> str:
    ctx = click.Context(cli, info_name="kdump", **cli.context_settings)  # as a run makes it
    lines = [
        # no version: the committed page serves every commit (the version is the git tag's)
        '.TH KDUMP 1 "" "kdump" "User Commands"',
        ".SH NAME",
        "kdump \\- " + roff(cli.help or "").rstrip("."),
        ".SH SYNOPSIS",
        ".B kdump",
        "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".br",
        ".B kdump \\-\\-files",
        "\\fIFILE\\fR[,\\fIFILE\\fR...] [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        "Dump, verify and repair Apache Kafka log segments offline. Run \\fBkdump COMMAND "
        "\\-\\-help\\fR for a command's options; the README has the operator's runbook.",
        ".SH OPTIONS",
    ]
    for param in cli.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is not None:
            names, help_text = record
            lines += [".TP", ".B " + roff(names), roff(" ".join(help_text.split())) or "\\&"]
    lines.append(".SH COMMANDS")
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        lines += command_section(command, ["kdump", name], ctx)
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f".B {code}", roff(meaning)]
    lines += [
        ".SH SHELL COMPLETION",
        "Add to \\fI~/.bashrc\\fR:",
        ".PP",
        ".nf",
        'eval "$(_KDUMP_COMPLETE=bash_source kdump)"',
        ".fi",
        ".PP",
        "zsh: \\fB_KDUMP_COMPLETE=zsh_source\\fR in \\fI~/.zshrc\\fR; fish: "
        "\\fB_KDUMP_COMPLETE=fish_source kdump | source\\fR in "
        "\\fI~/.config/fish/completions/kdump.fish\\fR.",
        ".SH SEE ALSO",
        "kafka\\-dump\\-log.sh(1), the README and docs/ of kdump.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    return write_or_check(__doc__.splitlines()[0], PAGE, manpage())


if __name__ == "__main__":
    sys.exit(main())
