"""The documentation site (issue 43): built from docs/ by MkDocs in strict mode, so a warning
(a link to a page that does not exist, an #anchor no heading makes, a page left out of the
navigation) fails the suite; the README's links land on the built pages; what the pages
promise is what the code does (every exit code, the examples' options)."""

from __future__ import annotations

import ast
import glob
import html
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from functools import cache, partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import click
import pytest
import yaml
from chromium import chromium, missing
from conftest import REPO
from localhttp import Quiet, serving

from kdump.cli import cli
from kdump.errors import ExitCode

DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 300  # an operator's five minutes


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    ran = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    warnings = [line for line in ran.stderr.splitlines() if not line.startswith("INFO")]
    assert ran.returncode == 0 and not warnings, ran.stderr
    return out


def anchors(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text()))


def test_the_site_builds_strict_with_every_page_in_its_navigation(site: Path) -> None:
    config = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert config["strict"] == "true"
    assert set(config["validation"].values()) == {"warn"}  # every check on, each a failure
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    for page in pages:
        assert (site / page.replace(".md", ".html")).is_file(), page
    nav = yaml.safe_dump(config["nav"])
    assert {page for page in pages if page not in nav} == set()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The strict build is not a formality: a copy of docs/ with one link and one anchor
    broken does not build, and says which."""
    copy = tmp_path / "repo"
    copy.mkdir()
    (copy / "mkdocs.yml").write_text((REPO / "mkdocs.yml").read_text())
    subprocess.run(["cp", "-r", str(DOCS), str(copy / "docs")], check=True)
    verify = copy / "docs" / "verify.md"
    verify.write_text(
        verify.read_text()
        + "\nSee [gone](no-such-page.md) and [there](findings.md#no-such-code).\n"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=copy, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode != 0
    assert "no-such-page.md" in ran.stderr and "#no-such-code" in ran.stderr


def test_the_search_index_holds_every_page(site: Path) -> None:
    """MkDocs' built-in search: its index is written, with the reference's words in it."""
    index = (site / "search" / "search_index.json").read_text()
    for word in ("LOG_CRC_MISMATCH", "kafka-kdump", "recovery-point-offset-checkpoint"):
        assert word in index, word
    assert 'id="mkdocs-search-query"' in (site / "index.html").read_text()


def test_pages_render_their_lists_tables_and_code(site: Path) -> None:
    """Python-Markdown is stricter than GitHub: a list with no blank line before it, or a code
    block inside a list item indented two spaces, is printed as a paragraph of dashes and
    backticks. None may be."""
    for page in sorted(site.glob("*.html")):
        main = page.read_text().split('<div role="main"', 1)[-1]
        assert "```" not in main, page.name
        for paragraph in re.findall(r"<p>(.*?)</p>", main, re.S):
            assert not re.search(r"(^|\n)\s*([-*] |\d+\. |\||#+ )", paragraph), (
                page.name,
                paragraph[:200],
            )


def readme_links() -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", README.read_text())


def test_the_readme_is_a_five_minute_page() -> None:
    assert len(README.read_text().splitlines()) <= README_MAX_LINES
    headings = re.findall(r"^## (.*)$", README.read_text(), re.M)
    assert headings == [
        "Install",
        "Runbook: damaged segments on a broker",
        "Exit codes",
        "The commands, one example each",
        "Set-up: two commands",
        "Reference",
    ]


def test_every_readme_link_lands_on_a_page_of_the_site(site: Path) -> None:
    readme_anchors = {slug(h) for h in re.findall(r"^#+ (.*)$", README.read_text(), re.M)}
    targets = readme_links()
    assert len(targets) > 30
    for target in targets:
        path, _, anchor = target.partition("#")
        if not path:
            assert anchor in readme_anchors, target
            continue
        assert path.startswith("docs/") and path.endswith(".md"), target
        page = site / path.removeprefix("docs/").replace(".md", ".html")
        assert page.is_file(), target
        if anchor:
            assert anchor in anchors(page), target


def test_every_command_has_a_page_the_readme_links() -> None:
    """A page per command: each of the CLI's commands is named in a page's title, and the
    README links that page."""
    titles = {p.name: p.read_text().splitlines()[0] for p in DOCS.glob("*.md")}
    commands = []
    for name, ctx in subcommands(root()):
        if isinstance(ctx.command, click.Group):
            commands += [f"{name} {sub}" for sub, _ in subcommands(ctx)]
        else:
            commands.append(name)
    assert len(commands) >= 17
    links = set(readme_links())
    for command in commands:
        named = [name for name, title in titles.items() if f"kdump {command}" in title]
        assert named, f"no page's title names kdump {command}"
        assert any(f"docs/{name}" in links for name in named), command


def root() -> click.Context:
    """The context a run makes (its -h/--help: click keeps each command's help option once
    made, so a context made otherwise would change what the man page's generator sees)."""
    return click.Context(cli, info_name="kdump", **cli.context_settings)


def subcommands(ctx: click.Context) -> list[tuple[str, click.Context]]:
    """A group's commands (kdump's are imported when asked for), each in its own context."""
    group = ctx.command
    assert isinstance(group, click.Group)
    found = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
    return [(n, click.Context(c, parent=ctx, info_name=n)) for n, c in found if c is not None]


@cache
def slug(heading: str) -> str:
    """A heading's anchor as mkdocs.yml makes it (GitHub's)."""
    from pymdownx.slugs import slugify

    text = re.sub(r"`([^`]*)`", r"\1", heading)
    return str(slugify(case="lower")(html.unescape(text), "-"))


def shell_block(text: str, heading: str, fence: str = "```") -> str:
    """The first code block after a heading."""
    section = text.split(heading + "\n", 1)[1]
    found = re.search(re.escape(fence) + r"\w*\n(.*?)```", section, re.S)
    assert found is not None, heading
    return found[1]


def test_the_readmes_runbook_is_the_runbooks() -> None:
    """The README's runbook and the full one on the site show the same steps and commands."""
    heading = "Runbook: damaged segments on a broker"
    ours = shell_block(README.read_text(), "## " + heading)
    theirs = shell_block((DOCS / "runbook.md").read_text(), "# " + heading)
    assert ours == theirs
    assert re.findall(r"^# (\d)\.", ours, re.M) == list("1234567")


def kdump_examples() -> list[list[str]]:
    """Every `kdump ...` command line in the README's code blocks."""
    blocks = re.findall(r"```\w*\n(.*?)```", README.read_text(), re.S)
    examples = []
    for line in (line for block in blocks for line in block.splitlines()):
        words = shlex.split(line, comments=True)
        for at, word in enumerate(words):
            if word in ("kdump", ".venv/bin/kdump", "/opt/kdump/bin/kdump") or (
                word == "kdump.pyz" and words[at - 1] == "python3"
            ):
                examples.append(words[at + 1 :])
                break
    return examples


def test_the_readmes_examples_use_options_their_commands_have() -> None:
    examples = kdump_examples()
    assert len(examples) >= 20
    for args in examples:
        ctx = root()
        while isinstance(ctx.command, click.Group) and args:
            sub = ctx.command.get_command(ctx, args[0])
            if sub is None:
                break
            ctx, args = click.Context(sub, parent=ctx, info_name=args[0]), args[1:]
        params = ctx.command.get_params(ctx)
        known = {opt for p in params for opt in (*p.opts, *p.secondary_opts)}
        for word in args:
            if word.startswith("-"):
                assert word.split("=")[0] in known, (ctx.command_path, word)
        assert ctx.command is not cli or args[0] == "--files", args  # a command, or --files


INSTALLER = re.compile(r"\b(?:pip3?|pipx|uv pip|uv tool) install\b([^`#\n]*)")


def installs_of_kdump(text: str) -> list[str]:
    """Every install a text shows that names the distribution without its PyPI name: `kdump`
    alone, with extras or a version (`'kdump[spark]'`, `kdump==1.0`), after an installer or
    anywhere as `kdump[...]`. The one sentence saying `pip install kdump` is another project's is
    not an install."""
    wrong = [m[0] for m in re.finditer(r"(?<![-\w./])kdump\[[a-z,]+\]", text)]
    for line in text.splitlines():
        for found in INSTALLER.finditer(line):
            if "does not install" in line[found.end() :]:
                continue
            for word in found[1].split():
                if re.match(r"""['"]?kdump(\b|$)""", word):
                    wrong.append(line.strip())
    return wrong


def test_every_install_shown_names_kafka_kdump() -> None:
    """PyPI's `kdump` is an unrelated project: every install the README, the site, the
    CHANGELOG, the scripts and kdump's own messages show is of `kafka-kdump`."""
    texts = [README, REPO / "CHANGELOG.md", REPO / "bench" / "README.md", *DOCS.glob("*.md")]
    scripts = [p for p in (REPO / "scripts").glob("*") if p.is_file()]  # not __pycache__
    texts += [*(REPO / "kdump").rglob("*.py"), *scripts]
    shown = {p.relative_to(REPO).as_posix(): installs_of_kdump(p.read_text()) for p in texts}
    assert {path: wrong for path, wrong in shown.items() if wrong} == {}
    assert "pip install 'kafka-kdump[spark]'" in (DOCS / "spark.md").read_text()
    # the check sees what it is for
    spark = "pip install 'kdump[spark]'"
    assert installs_of_kdump(spark) == ["kdump[spark]", spark]
    pinned = "run pip install -U kdump==1.2 now"
    assert installs_of_kdump(pinned) == [pinned]
    assert installs_of_kdump("`pip install kdump` does not install this one") == []


REPO_PATH = re.compile(
    r"(?<![\w/.~$-])((?:kdump|tests|scripts|bench|fixtures|fuzz|docs|\.ci|\.github)/[\w./*-]*[\w*/])"
)
DOTTED = re.compile(r"(?<![\w/.~$-])(kdump(?:\.[A-Za-z_]\w*)+)")
NOT_FILES = ("bench/out/", "fuzz/out/", "fuzz/corpus/TARGET/", "fuzz/dictionaries/TARGET.")
"""Named but not in a checkout: what the benchmarks and fuzzers write, for a TARGET named."""
NOT_NAMES = {"tests/kafka/"}  # docs/realkafka.md says why there is none
FILE_SUFFIXES = (".pyz", ".prom", ".json", ".log", ".html", ".1")


def named_in_the_pages() -> tuple[set[str], set[str]]:
    """The repository's files and kdump's modules the README and the site name."""
    paths: set[str] = set()
    dotted: set[str] = set()
    for page in (README, *DOCS.glob("*.md")):
        text = page.read_text()
        paths |= set(REPO_PATH.findall(text))
        dotted |= {name for name in DOTTED.findall(text) if not name.endswith(FILE_SUFFIXES)}
    return paths, dotted


def defines(path: Path, names: list[str]) -> bool:
    """Whether the module at path defines names[0] (a class, function or assignment at its top
    level, or imported there), names[1] inside that class, and so on."""
    body: list[ast.stmt] = ast.parse(path.read_text()).body
    body += [n for node in body if isinstance(node, (ast.Try, ast.If)) for n in node.body]
    for name in names:
        found: ast.stmt | None = None
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                hit = node.name == name
            elif isinstance(node, ast.Assign):
                hit = any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            elif isinstance(node, ast.AnnAssign):
                hit = isinstance(node.target, ast.Name) and node.target.id == name
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                hit = any((a.asname or a.name) == name for a in node.names)
            else:
                hit = False
            if hit:
                found = node
                break
        if found is None:
            return False
        body = found.body if isinstance(found, ast.ClassDef) else []
    return True


def module_defines(dotted: str) -> bool:
    parts = dotted.split(".")
    for at in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:at])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return defines(path, parts[at:])
    return False


def test_every_file_and_module_the_pages_name_is_there() -> None:
    """The README and the site name kdump's modules and the repository's files (`kdump/...`,
    `tests/...`, `kdump.checks.registry`): each is there, so a module moved or renamed takes
    its pages along."""
    paths, dotted = named_in_the_pages()
    assert len(paths) > 100 and len(dotted) > 50
    missing = set()
    for name in paths - NOT_NAMES:
        if name.startswith(NOT_FILES):
            continue
        if not (glob.glob(str(REPO / name)) if "*" in name else (REPO / name).exists()):
            missing.add(name)
    assert missing == set()
    assert {name for name in dotted if not module_defines(name)} == set()
    # the check sees what it is for
    assert not module_defines("kdump.metrics.NO_SUCH_NAME") and module_defines(
        "kdump.metrics.FAMILIES"
    )
    assert not module_defines("kdump.no_such_module")


def test_every_command_page_says_its_exit_codes(site: Path) -> None:
    """The exit code page links each command's own exit codes, and each link lands."""
    text = (DOCS / "exit-codes.md").read_text()
    links = re.findall(r"\]\(([a-z-]+\.md)#exit-codes\)", text)
    assert len(links) >= 13
    for link in links:
        assert "exit-codes" in anchors(site / link.replace(".md", ".html")), link
    for repair in ("rebuild-index", "trim-index", "recover", "salvage"):
        assert "(repair.md#exit-codes)" in (DOCS / f"{repair}.md").read_text(), repair


def test_the_exit_code_page_names_every_exit_code() -> None:
    text = (DOCS / "exit-codes.md").read_text()
    rows = re.findall(r"^\| ([\d, ]+) \|", text, re.M)
    listed = {int(code) for row in rows for code in row.split(",")}
    assert {int(code) for code in ExitCode} <= listed
    readme = re.findall(r"^\| ([\d, ]+) \|", README.read_text(), re.M)
    assert {int(c) for row in readme for c in row.split(",")} <= listed


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on localhost, as `mkdocs serve` or any web server gives it (the
    search's worker reads its index with a request, which a file:// page may not make)."""

    class Site(Quiet, SimpleHTTPRequestHandler):
        pass

    with serving(partial(Site, directory=str(site))) as url:
        yield url + "/"


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_the_search_box_finds_a_finding_code_in_a_browser(served: str) -> None:
    """The built-in search, used as a person uses it: open the search box on the home page,
    type a finding code, follow the first result to its entry."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    with chromium(900) as driver:
        driver.get(served + "index.html")
        driver.find_element("css selector", '[data-bs-target="#mkdocs_search_modal"]').click()
        box = driver.find_element("id", "mkdocs-search-query")
        WebDriverWait(driver, 30).until(lambda _: box.is_displayed())

        def results(_: object) -> list[str]:
            # the index is built in a worker after the page opens: ask again until it answers
            box.send_keys(Keys.END, " ", Keys.BACKSPACE)
            found = driver.find_elements("css selector", "#mkdocs-search-results a")
            return [str(a.get_attribute("href")) for a in found]

        box.send_keys("LOG_CRC_MISMATCH")
        hrefs = WebDriverWait(driver, 120, poll_frequency=0.5).until(results)
        assert served + "findings.html#log_crc_mismatch" in hrefs
        driver.get(served + "findings.html#log_crc_mismatch")
        heading = driver.find_element("id", "log_crc_mismatch")
        assert heading.text.startswith("LOG_CRC_MISMATCH")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []


def test_the_site_fetches_nothing_from_elsewhere(site: Path) -> None:
    """Scripts, styles and fonts come with the site (no CDN): it opens offline, on a broker
    host's copy as well."""
    for page in sorted(site.glob("*.html")):
        text = page.read_text()
        assert not re.findall(r'<(?:script|link|img)[^>]*(?:src|href)="(?:https?:)?//', text)
