"""What users get (issue 34): scripts/build-dist.sh's sdist, manylinux wheels and kdump.pyz,
each installed or run as a user would, on a machine where nothing can be compiled.

The build runs once for the session (about 30 s of CPU: the C module compiled twice, pip
resolving kdump.pyz's packages for five Pythons; on a shared machine most of its wall time is
waiting on the package index and the disk). Installs take kdump's dependencies from the package
index, as a user's pip does; what the checkout's own kdump answers is asked once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path

import pytest
from conftest import ORACLE, REPO

FIXTURE = ORACLE / "activeprealloc-0"
# nothing compiles: a C extension's build fails at once, as where there is no compiler
NO_COMPILER = {"CC": "/bin/false", "CXX": "/bin/false", "LDSHARED": "/bin/false"}


@cache
def python_at(minor: int) -> Path | None:
    """A CPython 3.<minor> on this machine: on PATH, or beside the one running the tests (pyenv
    and the like keep each version in a directory of its own). The interpreter itself, not a
    shim in front of it: the runs below change HOME."""
    beside = sorted(Path(sys.base_prefix).parent.glob(f"3.{minor}*/bin/python3.{minor}"))
    for candidate in [Path(p) for p in os.get_exec_path() if p] + beside:
        exe = candidate / f"python3.{minor}" if candidate.is_dir() else candidate
        if exe.is_file():
            ran = run([str(exe), "-c", "import sys; print(sys.executable)"], check=False)
            if ran.returncode == 0:
                return Path(ran.stdout.strip())
    return None


def run(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    ran = subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    if check and ran.returncode != 0:
        raise AssertionError(f"{args} exited {ran.returncode}:\n{ran.stdout}\n{ran.stderr}")
    return ran


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    py310 = python_at(10)
    env = {**os.environ, "PYTHON": sys.executable, "PYTHON310": str(py310 or "")}
    run(["sh", str(REPO / "scripts" / "build-dist.sh"), str(out)], env=env)
    return out


def one(out: Path, pattern: str) -> Path:
    found = sorted(out.glob(pattern))
    assert len(found) == 1, (pattern, [p.name for p in out.iterdir()])
    return found[0]


def fresh_venv(where: Path, python: str = sys.executable) -> Path:
    """A new virtual environment without pip (this environment's pip installs into it)."""
    run([python, "-m", "venv", "--without-pip", str(where)])
    return where / "bin"


def pip_install(bin_dir: Path, *what: str) -> None:
    env = {**os.environ, **NO_COMPILER, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # --no-compile: the byte code of rich and pygments is most of an install's disk writes, and
    # none of what is checked here
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q"]
    run([*pip, "--no-compile", *what], env=env)


def verdict(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> object:
    """verify's findings and summary (not the run's times) over every oracle partition."""
    ran = run([*args, "verify", "--format", "json", str(ORACLE)], cwd=cwd, env=env)
    document = json.loads(ran.stdout)
    return document["findings"], document["summary"]


# a time with a Z, which Python 3.10's datetime.fromisoformat does not read by itself
LOOKUP = ["lookup", str(FIXTURE), "--timestamp", "2023-11-14T22:13:25Z", "--format", "json"]


@pytest.fixture(scope="session")
def checkout() -> dict[str, object]:
    """What this checkout's kdump answers, to compare each installed or packed one with."""
    here = [sys.executable, "-m", "kdump"]
    return {"verify": verdict(here), "lookup": json.loads(run([*here, *LOOKUP]).stdout)}


def test_dist_holds_the_sdist_the_wheels_and_the_pyz(dist: Path) -> None:
    sdist = one(dist, "kafka_kdump-*.tar.gz")
    version = sdist.name.removeprefix("kafka_kdump-").removesuffix(".tar.gz")
    abi3 = one(dist, f"kafka_kdump-{version}-cp311-abi3-*.whl")
    # manylinux_2_17: auditwheel found nothing newer than glibc 2.17 in the C module
    assert abi3.name.endswith(".manylinux_2_17_x86_64.whl")
    with zipfile.ZipFile(abi3) as z:
        assert "kdump/_speedups.abi3.so" in z.namelist()
    if python_at(10) is not None:
        cp310 = one(dist, f"kafka_kdump-{version}-cp310-cp310-*.whl")
        with zipfile.ZipFile(cp310) as z:
            assert "kdump/_speedups.cpython-310-x86_64-linux-gnu.so" in z.namelist()
    assert (dist / "kdump.pyz").stat().st_size > 0


def test_wheel_without_a_compiler_runs_the_c_paths(
    dist: Path, checkout: dict[str, object], tmp_path: Path
) -> None:
    """pip install of the wheel where nothing compiles: the C module came built, and gives
    verify's answer over every oracle partition."""
    bin_dir = fresh_venv(tmp_path / "venv")
    pip_install(bin_dir, str(one(dist, "kafka_kdump-*-cp311-abi3-*.whl")))
    version = run([str(bin_dir / "kdump"), "--version"]).stdout
    assert f"from {tmp_path / 'venv'}" in version
    assert re.search(r"^fast paths: C; CRC-32C: (SSE4\.2 instructions|software)", version, re.M)
    assert "to get them" not in version
    assert verdict([str(bin_dir / "kdump")]) == checkout["verify"]


def test_sdist_without_a_compiler_runs_pure_python_and_says_so(
    dist: Path, checkout: dict[str, object], tmp_path: Path
) -> None:
    """pip install of the sdist where nothing compiles: the install succeeds without the C
    module, kdump says it runs pure Python and how to get the C paths, and answers the same."""
    bin_dir = fresh_venv(tmp_path / "venv")
    pip_install(bin_dir, str(one(dist, "kafka_kdump-*.tar.gz")))
    version = run([str(bin_dir / "kdump"), "--version"]).stdout
    assert "fast paths: off, pure Python (not built: " in version
    assert (
        "\nto get them: pip install --force-reinstall --only-binary kafka-kdump 'kafka-kdump=="
        in version
    )
    assert "; or its file, kafka_kdump-" in version
    assert verdict([str(bin_dir / "kdump")]) == checkout["verify"]


def tree(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def newest_python() -> int:
    """The newest CPython after 3.11 that kdump.pyz serves and this machine has (0: none)."""
    return next((minor for minor in (14, 13, 12) if python_at(minor) is not None), 0)


# distinct contents of the file: 3.10's own build, the stable-ABI build on the Python it was
# built for, and on a later one (with that Python's own cramjam and crc32c)
@pytest.mark.parametrize("minor", [10, 11, newest_python()])
def test_pyz_runs_with_the_hosts_python_offline_writing_only_its_cache(
    dist: Path, checkout: dict[str, object], tmp_path: Path, minor: int
) -> None:
    """python3 kdump.pyz from another directory, with no network and a Python where kdump is
    not installed: the C paths run (cp310's own build, the stable-ABI one on 3.11 and later),
    verify answers as the installed kdump does, and nothing is written but the cache that
    `kdump --version` names."""
    python = python_at(minor) if minor else None
    if python is None:
        pytest.skip(f"no Python 3.{minor or '12 or newer'} on this machine")
    home, cwd, tmp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    for d in (home, cwd, tmp):
        d.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "LANG": "C.UTF-8"}
    assert run([str(python), "-c", "import kdump"], cwd=cwd, env=env, check=False).returncode
    offline = (
        ["unshare", "--net"]
        if run(["unshare", "--net", "true"], check=False).returncode == 0
        else []
    )
    pyz = [*offline, str(python), str(dist / "kdump.pyz")]

    version = run([*pyz, "--version"], cwd=cwd, env=env).stdout
    cache = home / ".cache" / "kdump-pyz"
    assert f"from {cache}/" in version and f"/cp3{minor}/kdump (Python 3.{minor}." in version
    assert re.search(r"^fast paths: C; CRC-32C: ", version, re.M)
    assert verdict(pyz, cwd=cwd, env=env) == checkout["verify"]
    # the README's command, as an operator types it on the broker
    readme = next(
        line.split()
        for line in (REPO / "README.md").read_text().splitlines()
        if line.startswith("python3 kdump.pyz verify ")
    )
    assert readme[3:] == ["/var/lib/kafka/data"]
    assert run([*pyz, *readme[2:3], str(ORACLE)], cwd=cwd, env=env).stdout  # exits 0: clean
    assert json.loads(run([*pyz, *LOOKUP], cwd=cwd, env=env).stdout) == checkout["lookup"]
    written = tree(home) | tree(cwd) | tree(tmp)
    assert written and all(p == cache.parent or cache in (p, *p.parents) for p in written)


def test_pyz_says_in_one_line_where_it_cannot_unpack(dist: Path, tmp_path: Path) -> None:
    cache = tmp_path / "a-file"
    cache.write_text("")
    env = {**os.environ, "KDUMP_PYZ_CACHE": str(cache / "cache")}
    ran = run([sys.executable, str(dist / "kdump.pyz"), "--version"], env=env, check=False)
    assert ran.returncode == 3 and ran.stdout == ""
    assert ran.stderr == (
        f"kdump.pyz: cannot unpack into {cache}/cache/{pyz_build(dist)}: Not a directory; "
        "set KDUMP_PYZ_CACHE to a directory this user may write\n"
    )


def test_pyz_refuses_a_python_it_has_no_packages_for(dist: Path) -> None:
    python = python_at(9)
    if python is None:
        pytest.skip("no Python 3.9 on this machine")
    ran = run([str(python), str(dist / "kdump.pyz"), "--version"], check=False)
    assert ran.returncode == 3 and ran.stdout == ""
    oldest = "3.10" if python_at(10) is not None else "3.11"  # the build's, as build_pyz made it
    assert ran.stderr.startswith(
        f"kdump.pyz: this build needs Python {oldest} or newer; this is Python 3.9"
    )


def test_pyz_built_without_a_python_names_its_own_oldest(tmp_path: Path) -> None:
    """Issue 44.9: a kdump.pyz built without a 3.10 (no python3.10 at build time) told a 3.9
    that kdump needs 3.10, and a 3.10 was then refused for another reason. It names the
    oldest Python it carries kdump for."""
    python = python_at(10)
    if python is None:
        pytest.skip("no Python 3.10 on this machine")
    main = (REPO / "scripts" / "pyz_main.py").read_text()
    placeholder = 'BUILD = {"id": "unbuilt", "version": "", "pythons": []}'
    assert placeholder in main
    build = {"id": "test", "version": "0", "pythons": ["cp311", "cp312", "cp313", "cp314"]}
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(main.replace(placeholder, f"BUILD = {json.dumps(build)}"))
    ran = run([str(python), str(app), "--version"], check=False)
    assert ran.returncode == 3 and ran.stdout == ""
    assert ran.stderr.startswith("kdump.pyz: this build needs Python 3.11 or newer; this is ")


def pyz_build(dist: Path) -> str:
    with zipfile.ZipFile(dist / "kdump.pyz") as z:
        main = z.read("__main__.py").decode()
    found = re.search(r'^BUILD = \{"id": "([^"]+)"', main, re.M)
    assert found is not None
    return found[1]


NOBODY = 65534


def _unpacked(dist: Path, cache: Path) -> dict[str, str]:
    env = {**os.environ, "KDUMP_PYZ_CACHE": str(cache)}
    run([sys.executable, str(dist / "kdump.pyz"), "--version"], env=env)
    return env


def _refused(dist: Path, env: dict[str, str], says: str) -> None:
    ran = run([sys.executable, str(dist / "kdump.pyz"), "--version"], env=env, check=False)
    assert ran.returncode == 3 and ran.stdout == "", ran.stderr
    (line,) = ran.stderr.splitlines()
    assert line.startswith("kdump.pyz: not running the code in ") and says in line, line
    assert "so another user could change it" in line


def test_pyz_runs_no_cache_another_user_can_change(dist: Path, tmp_path: Path) -> None:
    """Issue 39 point 3: an existing cache was used whatever its owner and mode, and the build
    id is public; a cache another user can write is code of theirs run as root."""
    # a cache another user owns (a shared KDUMP_PYZ_CACHE, a user's HOME under sudo -E)
    cache = tmp_path / "theirs"
    env = _unpacked(dist, cache)
    for path in [cache, *cache.rglob("*")]:
        os.lchown(path, NOBODY, NOBODY)
    _refused(dist, env, f"belongs to uid {NOBODY}")
    # one that others may write
    mine = tmp_path / "loose"
    env = _unpacked(dist, mine)
    os.chmod(mine / pyz_build(dist), 0o777)
    _refused(dist, env, "is writable by others than its owner (mode 0777)")
    # root's own cache inside a directory of another user's: they may swap it for theirs
    home = tmp_path / "home-of-nobody"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    _refused(dist, {**os.environ, "KDUMP_PYZ_CACHE": str(home / ".cache")}, f"{home} belongs")
    # the same cache, private and this user's, runs
    shutil.rmtree(mine)
    assert run([sys.executable, str(dist / "kdump.pyz"), "--version"], env=_unpacked(dist, mine))


def test_pyz_unpacks_only_the_files_its_build_lists(dist: Path, tmp_path: Path) -> None:
    """Every file unpacked is checked against the SHA-256 the archive lists (site/SHA256SUMS)."""
    changed = tmp_path / "changed.pyz"
    with zipfile.ZipFile(dist / "kdump.pyz") as source, zipfile.ZipFile(changed, "w") as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("kdump/__init__.py"):
                data += b"\nimport os  # planted\n"
            out.writestr(info, data)
    changed.write_bytes(b"#!/usr/bin/env python3\n" + changed.read_bytes())
    env = {**os.environ, "KDUMP_PYZ_CACHE": str(tmp_path / "cache")}
    ran = run([sys.executable, str(changed), "--version"], env=env, check=False)
    assert ran.returncode == 3
    assert "kdump/__init__.py is not the file this build lists" in ran.stderr
    assert not list((tmp_path / "cache").rglob("kdump/__init__.py"))
