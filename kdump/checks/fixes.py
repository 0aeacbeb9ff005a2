"""The commands a finding's ``fix`` names, made in one place: each path a word of its own,
quoted for the shell (kdump.untrusted.command), so that a directory named ``o;touch PWNED;#-0``
is one argument of ``kdump recover`` and never a command of its own (issue 39). The registry's
templates (kdump.checks.registry: ``kdump recover {partition dir}``) document the same
commands."""

from __future__ import annotations

from kdump.untrusted import command


def recover(directory: str) -> str:
    return command("kdump", "recover", directory)


def rebuild_index(log: str) -> str:
    return command("kdump", "rebuild-index", log)


def trim_index(log: str) -> str:
    return command("kdump", "trim-index", log)


def remove(path: str) -> str:
    """``rm`` of one file; ``--`` so that a name starting with ``-`` is not an option."""
    return command("rm", "--", path)


def salvage(directory: str) -> str:
    """``kdump salvage``, its output directory left for the operator to choose."""
    return command("kdump", "salvage", directory, "--output-dir") + " DIR"


__all__ = ["rebuild_index", "recover", "remove", "salvage", "trim_index"]
