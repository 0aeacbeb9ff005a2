"""Every command's output on names a broker's user chose (issue 39 point 6 and the class): a
log dir, a topic and a cluster id holding ``"``, ``<``, ``;``, ``$(``, ``..``, ESC sequences,
the bytes next to NUL, a direction override and bytes that are not UTF-8
(tests/hostile/names.py). Each output kind is checked for its own escaping:

- text on standard output and error: no control or invisible character but line feeds and
  tabs; a name shows as kdump.untrusted.terminal writes it;
- a suggested command (``[fix: ...]`` in text, ``fix`` in JSON): bash reads it back (``eval``
  of ``set --``) into exactly the arguments meant, the path's own bytes, and runs nothing;
- JSON: it parses, and every ``fix`` in it is such a command;
- Prometheus: every line parses, label values hold no control character;
- HTML: only kdump's own elements and attributes (no ``<script>`` but its own, no ``on*``
  handler), the Content-Security-Policy, the names as text;
- files: everything written lies in the directory given.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_kdump

import kdump.report
from hostile.names import CLUSTER_ID, PARTITION, TOPIC, hostile_log_dir, path_of
from kdump.untrusted import content_security_policy, terminal

UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def unsafe_characters(text: str) -> list[str]:
    return sorted({repr(c) for c in text if c not in "\n\t" and unicodedata.category(c) in UNSAFE})


def shell_words(line: str, cwd: Path) -> list[bytes]:
    """The words bash makes of ``line`` (a suggested command), run nowhere: ``eval`` of
    ``set -- LINE`` in ``cwd``, the words printed NUL-separated. Placeholders kdump leaves for
    the operator (``<bootstrap-servers>``) are given a value first."""
    line = line.replace("<bootstrap-servers>", "HOST:9092")
    ran = subprocess.run(
        ["bash", "-c", 'eval "set -- $1" && printf "%s\\0" "$@"', "-", line],
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    assert ran.returncode == 0, (line, ran.stderr)
    assert not list(cwd.iterdir()), f"{line!r} ran something: {list(cwd.iterdir())}"
    return ran.stdout.split(b"\0")[:-1]


class Expected:
    """What a suggested command must name: a path that is there, given as its own bytes, or the
    hostile topic after ``--topic``."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.topic = os.fsencode(TOPIC)

    def check_command(self, line: str, cwd: Path) -> None:
        words = shell_words(line, cwd)
        paths = [w for w in words if w.startswith(b"/")]
        if b"--topic" in words:
            assert words[words.index(b"--topic") + 1] == self.topic, words
        else:
            assert paths, f"{line!r} names no path: {words}"
        for word in paths:
            assert os.path.exists(word), f"{line!r}: {word!r} is no path there"
        root = os.fsencode(self.log_dir.parent)  # the log dir, or the copy of a replica beside it
        assert any(w.startswith(root) for w in paths) or b"--topic" in words


Read = Callable[["Ran", Expected, Path], None]


class Ran:
    def __init__(self, stdout: str, stderr: str, out: Path) -> None:
        self.stdout, self.stderr, self.out = stdout, stderr, out

    def file(self, pattern: str) -> Path:
        found = sorted(self.out.rglob(pattern))
        assert found, f"no {pattern} in {list(self.out.rglob('*'))}"
        return found[0]


FIX = re.compile(r"\[fix: (.*)\]$")


def text(ran: Ran, expected: Expected, cwd: Path) -> None:
    """Text on both streams: nothing raw; every fix a command bash reads back exactly."""
    for stream in (ran.stdout, ran.stderr):
        assert not unsafe_characters(stream), (unsafe_characters(stream), stream[-2000:])
    fixes = [m[1] for line in ran.stdout.splitlines() if (m := FIX.search(line))]
    for line in fixes:
        expected.check_command(line, cwd)


def names_shown(ran: Ran, expected: Expected, cwd: Path) -> None:
    text(ran, expected, cwd)
    assert terminal(TOPIC) in ran.stdout + ran.stderr, ran.stdout[-2000:]


def fixed(ran: Ran, expected: Expected, cwd: Path) -> None:
    """Text with at least one fix."""
    names_shown(ran, expected, cwd)
    assert FIX.search(ran.stdout, re.M) or "[fix: " in ran.stdout, ran.stdout[-2000:]


def _strings(value: object, key: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [("", k), *_strings(v, k)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, key)]
    return []


def _check_json(doc: object, expected: Expected, cwd: Path) -> None:
    strings = _strings(doc)
    assert not [s for _, s in strings if any("\udc80" <= c <= "\udcff" for c in s)]
    for key, value in strings:
        suggested = key == "command" and value.startswith("kdump ")  # kdump startup's advice
        if (key in ("fix", "abort_command", "abort_command_legacy") and value) or suggested:
            expected.check_command(value, cwd)


def json_document(ran: Ran, expected: Expected, cwd: Path) -> None:
    text(ran, expected, cwd)  # JSON is ASCII: nothing raw either
    _check_json(json.loads(ran.stdout), expected, cwd)


def json_lines(ran: Ran, expected: Expected, cwd: Path) -> None:
    assert not unsafe_characters(ran.stderr)
    for line in ran.stdout.splitlines():
        _check_json(json.loads(line), expected, cwd)


def prom(ran: Ran, expected: Expected, cwd: Path) -> None:
    text(ran, expected, cwd)
    content = ran.file("*.prom").read_text()
    assert not unsafe_characters(content)
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-z_]+="(?:[^"\\]|\\.)*",?)*\})? \S+$')
    for line in content.splitlines():
        assert line.startswith("#") or sample.match(line), line


ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "p",
    "div", "span", "table", "thead", "tbody", "tr", "th", "td", "a", "ul", "li", "b", "code",
    "br", "label", "input", "button", "svg", "g", "rect", "line", "text", "path", "circle",
    "polyline", "details", "summary", "section", "nav", "small", "em", "strong",
    "script", "figure", "figcaption", "tspan", "pre", "footer", "select", "option", "dl", "dt",
    "dd", "i", "hr", "caption", "colgroup", "col", "main", "article", "aside", "abbr", "time",
    "ol", "sup", "sub", "noscript", "polygon", "defs", "clippath", "use", "pattern", "template",
}  # fmt: skip


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.data: list[str] = []
        self.policy: str | None = None
        self.scripts = 0
        """Scripts that run (not JSON data)."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs
        values = dict(attrs)
        if tag == "script" and values.get("type") != "application/json":
            self.scripts += 1
        if tag == "meta" and values.get("http-equiv") == "Content-Security-Policy":
            self.policy = values.get("content")

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def html_page(ran: Ran, expected: Expected, cwd: Path) -> None:
    text(ran, expected, cwd)
    page_text = ran.file("*.html").read_text()
    assert not unsafe_characters(page_text)
    page = _Page()
    page.feed(page_text)
    assert set(page.tags) <= ALLOWED_TAGS, set(page.tags) - ALLOWED_TAGS
    assert page.scripts == 1, "one script: kdump's own"
    assert not [a for a, _ in page.attributes if a.startswith("on")], "no event handler"
    own = (Path(kdump.report.__file__).parent / "report.js").read_text()
    assert page.policy == content_security_policy(own)
    shown = "".join(page.data) + " ".join(v or "" for _, v in page.attributes)
    assert terminal(TOPIC) in shown or terminal(CLUSTER_ID) in shown


def written_inside(ran: Ran, expected: Expected, cwd: Path) -> None:
    """Text, and every file the command wrote lies under its output directory."""
    text(ran, expected, cwd)
    for path in ran.out.rglob("*"):
        assert path.resolve().is_relative_to(ran.out.resolve()), path


def fleet(ran: Ran, expected: Expected, cwd: Path) -> None:
    written_inside(ran, expected, cwd)
    html_page(ran, expected, cwd)


COMMANDS: list[tuple[list[str], Read]] = [
    (["verify", "DIR"], fixed),
    (["verify", "DIR", "--format", "json"], json_document),
    (["verify", "DIR", "--format", "jsonl"], json_lines),
    (["verify", "DIR", "--prom", "OUT/x.prom"], prom),
    (["verify", "DIR", "--output", "OUT/{cluster_id}/{broker_id}/{started}.json"], written_inside),
    (["report", "DIR", "-o", "OUT/r.html"], html_page),
    (["dump", "PART/00000000000000000000.log", "PART/00000000000000000186.log"], names_shown),
    (["dump", "PART", "--format", "jsonl", "--deep-iteration"], json_lines),
    (["--files", "PART/00000000000000000000.log,PART/00000000000000000000.index"], names_shown),
    (["lookup", "PART", "--offset", "5", "--explain"], text),
    (["lookup", "PART", "--offset", "5", "--format", "json"], json_document),
    (["txn", "PART"], fixed),
    (["txn", "PART", "--format", "json"], json_document),
    (["explain", "PART"], names_shown),
    (["explain", "PART", "--format", "json"], json_document),
    (["recover", "--dry-run", "PART"], names_shown),
    (["recover", "--dry-run", "--format", "json", "PART"], json_document),
    (["rebuild-index", "--dry-run", "DIR"], names_shown),
    (["trim-index", "--dry-run", "PART"], text),
    (["salvage", "PART", "--output-dir", "OUT/salvaged"], written_inside),
    (["replicas", "PART", "COPY", "--export-lost", "OUT/lost"], written_inside),
    (["metadata", "DIR/__cluster_metadata-0"], text),
    (["startup", "DIR"], names_shown),
    (["startup", "DIR", "--format", "json"], json_document),
    (["compact", "--dry-run", "PART", "--config", "cleanup.policy=compact"], names_shown),
    (
        ["compact", "--dry-run", "--format", "json", "PART", "--config", "cleanup.policy=compact"],
        json_document,
    ),
]


def _label(value: object) -> str:
    return " ".join(value) if isinstance(value, list) else ""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    log_dir = hostile_log_dir(root)
    copy = path_of(root, "copy", PARTITION)
    shutil.copytree(path_of(log_dir, PARTITION), copy)
    _metadata_log(log_dir)
    return log_dir


def _metadata_log(log_dir: Path) -> None:
    from kraftlog import MetadataLog, partition, topic, write_metadata_dir

    log = MetadataLog()
    topic_id = "AAAAAAAAAAAAAAAAAAAAAA"
    # a Java string: every character but the byte that is not UTF-8
    log.records(topic(TOPIC.replace("\udcff", ""), topic_id), partition(topic_id, 0, [7], 7))
    write_metadata_dir(log_dir, bytes(log.data))


@pytest.mark.parametrize(("args", "read"), COMMANDS, ids=[_label(a) for a, _ in COMMANDS])
def test_every_output_escapes_what_names_hold(
    hostile: Path, tmp_path: Path, args: list[str], read: Read
) -> None:
    out, cwd = tmp_path / "out", tmp_path / "shell"
    out.mkdir()
    cwd.mkdir()
    part = path_of(hostile, PARTITION)
    copy = path_of(hostile.parent, "copy", PARTITION)
    argv = [
        a.replace("PART", str(part))
        .replace("DIR", str(hostile))
        .replace("OUT", str(out))
        .replace("COPY", str(copy))
        for a in args
    ]
    ran = run_kdump(argv, cwd=cwd)
    assert "Traceback" not in ran.stderr and "unexpected" not in ran.stderr, ran.stderr
    assert ran.exit_code in (0, 1, 2), f"exit {ran.exit_code}: {ran.stderr[-2000:]}"
    read(Ran(ran.stdout, ran.stderr, out), Expected(hostile), cwd)


@pytest.mark.parametrize("how", [["--output-dir", "OUT/cleaned"], ["--in-place"]])
def test_compact_refuses_a_topic_no_checkpoint_line_can_name(
    hostile: Path, tmp_path: Path, how: list[str]
) -> None:
    """A topic directory whose name is not UTF-8 has no cleaner-offset-checkpoint line (UTF-8
    text, read strictly by Kafka): the cleaning is refused before anything is written, not
    left half-written at its checkpoint."""
    part = path_of(hostile, PARTITION)
    before = sorted(p.name for p in part.iterdir())
    out = tmp_path / "out"
    argv = [a.replace("OUT", str(out)) for a in how]
    ran = run_kdump(["compact", str(part), *argv, "--config", "cleanup.policy=compact"])
    assert ran.exit_code == 3, ran.stderr
    assert ran.stderr.count("\n") == 1 and "is not UTF-8" in ran.stderr, ran.stderr
    assert not out.exists() or not any(out.rglob("*"))
    assert sorted(p.name for p in part.iterdir()) == before
