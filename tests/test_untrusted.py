"""kdump.untrusted: the one module every string read from disk passes through on its way to a
terminal, a suggested command, HTML, a metric label, JSON or a path (issue 39), each rule
checked against the program that reads that output (bash, Python's HTML and JSON parsers), and
a terminal that is a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import on_terminal

from kdump.untrusted import (
    command,
    escape_json_text,
    html_text,
    metric_label,
    path_part,
    shell_word,
    terminal,
    terminal_bytes,
)

NAMES = [
    "plain-0",
    "o;touch PWNED;#-0",
    "$(touch PWNED)",
    "`touch PWNED`",
    'it\'s "quoted"',
    "esc\x1b[2Jape",
    "bell\x07\x01\x7f",
    "line\nfeed",
    "rtl\u202eoverride",
    "bytes\udcff\udc80",
    "tópico-0",
    "-rf",
    "",
]


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_a_suggested_word_is_read_back_by_bash_as_its_bytes(name: str, tmp_path: Path) -> None:
    line = command("printf", "%s\\0", name)
    ran = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, check=True)
    assert ran.stdout == os.fsencode(name) + b"\0"
    assert not list(tmp_path.iterdir())  # nothing ran
    assert not [c for c in shell_word(name) if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_a_terminal_gets_no_control_character_and_html_no_markup(name: str) -> None:
    shown = terminal(name)
    assert shown.isprintable() or not shown
    assert "\n" not in shown and "\x1b" not in shown
    assert "<" not in html_text(name) and '"' not in html_text(name)
    assert "\n" not in metric_label(name) and '"' not in metric_label(name).replace('\\"', "")


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_json_gives_back_the_text_and_is_safe_to_print(name: str) -> None:
    text = escape_json_text(json.dumps({"name": name}, ensure_ascii=False))
    assert terminal(text) == text  # nothing a terminal must not be given
    back = json.loads(text)["name"]
    assert back == name.replace("\udcff", "\\xff").replace("\udc80", "\\x80")


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ("../victimdir/daemon", ".._victimdir_daemon"),
        ("..", "__"),
        (".", "_"),
        ("", "unknown"),
        ("a/b\\c d", "a_b_c_d"),
        ("Fleet-Cluster_1.x", "Fleet-Cluster_1.x"),
        ("x" * 300, "x" * 100),
    ],
)
def test_a_field_is_one_name(value: str, part: str) -> None:
    assert path_part(value) == part


def test_terminal_bytes_of_a_dump_and_of_json() -> None:
    assert terminal_bytes(b"a\x1b[31mb\tc\n") == b"a\\x1b[31mb\tc\n"
    assert terminal_bytes("é\u009b\n".encode()) == "é\\x9b\n".encode()
    line = json.dumps({"v": "\x7f\u009b"}, ensure_ascii=False).encode()
    assert json.loads(terminal_bytes(line, json=True)) == {"v": "\x7f\u009b"}


def test_a_dump_on_a_terminal_escapes_what_a_record_holds_and_a_pipe_gets_its_bytes(
    tmp_path: Path,
) -> None:
    """kafka-dump-log.sh prints a record's bytes as they are: so does kdump on a pipe or into a
    file; on a terminal (as GNU ls shows a name) a control character is written ``\\xNN``."""
    from batchbytes import v2_batch, varint

    value = b"\x1b]0;owned\x07\x1b[2J"
    body = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + b"\0"
    part = tmp_path / "escape-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(v2_batch(0, varint(len(body)) + body))
    args = ["dump", str(part / "00000000000000000000.log"), "--print-data-log"]
    piped = subprocess.run([sys.executable, "-m", "kdump", *args], capture_output=True).stdout
    assert b"payload: " + value + b"\n" in piped
    shown = on_terminal(args, styles=True).stdout
    assert "payload: \\x1b]0;owned\\x07\\x1b[2J" in shown
    assert "\x1b" not in shown and "\x07" not in shown
