"""Names that are not UTF-8 (issue 27 point 5): a log dir named `printf 'ld\\377'` made --prom
and report exit 3 ("unexpected UnicodeEncodeError") and left the metrics file stale. Names are
bytes on Linux: every output writes such a byte `\\xNN`, by one rule, and none fails on it."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE

from kdump.render.prom import escape_label_value
from kdump.untrusted import ESCAPE_NAMES, escape_json_text, json_text, shown

SHOWN = "ld\\xff"
"""How the log dir's name is printed: the text a reader of any output gets back."""


def log_dir_named_ld_ff(root: Path) -> Path:
    log_dir = Path(os.fsdecode(os.fsencode(root) + b"/ld\xff"))
    shutil.copytree(ORACLE / "plain-0", log_dir / "plain-0")
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nplain 0 0\n")
    return log_dir


def _label_values(text: str) -> list[str]:
    """The label values of a Prometheus text file, unescaped as Prometheus reads them."""
    raw = re.findall(r'="((?:[^"\\]|\\.)*)"', text)
    return [re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], v) for v in raw]


def _text(out: str, files: dict[str, str]) -> list[str]:
    return [out]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _json(out: str, files: dict[str, str]) -> list[str]:
    return [s for line in out.splitlines()[:3] for s in _strings(json.loads(line))]


def _json_document(out: str, files: dict[str, str]) -> list[str]:
    return _strings(json.loads(out))


def _prom(out: str, files: dict[str, str]) -> list[str]:
    return _label_values(files["x.prom"])


def _html(out: str, files: dict[str, str]) -> list[str]:
    return [html.unescape(files["r.html"])]


LOG = "plain-0/00000000000000000000.log"


@pytest.mark.parametrize(
    ("args", "read"),
    [
        (["verify", "DIR"], _text),
        (["verify", "--format", "json", "DIR"], _json_document),
        (["verify", "DIR", "--prom", "OUT/x.prom"], _prom),
        (["report", "DIR", "-o", "OUT/r.html"], _html),
        (["dump", f"DIR/{LOG}"], _text),
        (["dump", "--format", "jsonl", f"DIR/{LOG}"], _json),
        (["explain", "--format", "json", "DIR/plain-0"], _json_document),
        (["txn", "DIR/plain-0"], _text),
        (["rebuild-index", "--dry-run", "--index-interval-bytes", "1024", "DIR"], _text),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_a_name_that_is_not_utf8_is_printed_escaped_everywhere(
    tmp_path: Path, args: list[str], read: Callable[[str, dict[str, str]], list[str]]
) -> None:
    log_dir = log_dir_named_ld_ff(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    for name in ("x.prom", "r.html"):  # what a run before left: it must be replaced
        (out / name).write_text("stale\n")
    argv = [a.replace("DIR", str(log_dir)).replace("OUT", str(out)) for a in args]
    ran = run_kdump(argv)
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    files = {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}
    texts = read(ran.stdout, files)
    assert any(f"/{SHOWN}" in t for t in texts), texts
    assert not any("\udcff" in t or "\ufffd" in t for t in texts)


def test_one_rule_for_text_json_prom_and_html() -> None:
    name = "/data/ld\udcff/tópico-0"  # a byte that is not UTF-8, and one that is
    text = "/data/ld\\xff/tópico-0"
    assert shown(name) == text
    assert name.encode("utf-8", ESCAPE_NAMES).decode() == text
    assert json.loads(json_text({"path": name}))["path"] == text
    assert json.loads(escape_json_text(json.dumps(name, ensure_ascii=False))) == text
    assert _label_values(f'm{{log_dir="{escape_label_value(name)}"}} 1') == [text]
