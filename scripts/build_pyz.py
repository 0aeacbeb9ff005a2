"""Build kdump.pyz, kdump in one file for hosts without pip or a package index (issue 34).

    python scripts/build_pyz.py WHEELDIR OUT.pyz

From kdump's manylinux wheels in WHEELDIR (the cp310 one and the abi3 one, as
scripts/build-dist.sh makes them), uv resolves kdump and its dependencies for each CPython
3.10-3.14 on x86-64 Linux with glibc 2.17 or newer (manylinux_2_17), as wheels only (pip
resolves the same packages, in 25 s per Python on a loaded 2-core machine against uv's 1.5 s:
most of build-dist.sh's time, and of the test suite's that runs it). The packages every
Python's set holds alike go to site/common, the rest (cramjam, crc32c, kdump with its C
module) to site/cp3XY; scripts/pyz_main.py (the archive's __main__) unpacks the two
parts a Python needs into a cache and runs kdump from there.

Why a stdlib zipapp and not shiv or pex: any single file must unpack extension modules to run
them, and both tools do, but shiv puts one site-packages in the file (one version of each
package for every Python: cramjam's newest wheels for 3.10 and 3.14 differ) and unpacks into
~/.shiv with a traceback where that cannot be written; pex resolves each platform apart, but
with a pip of its own that failed here on crcmod (published only as source), and adds its
runtime to every start. The bootstrap here is 120 lines of stdlib.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
# glibc 2.17 and older (uv takes the older manylinux tags with it)
PLATFORM = "x86_64-manylinux_2_17"
# crcmod publishes only its source: built without its C extension (CC=/bin/false), it is a
# pure wheel that serves every Python (it falls back to its Python code)
SOURCE_ONLY = ("crcmod",)
# the wheels' file name: the distribution kafka-kdump ("kdump" on PyPI is another project)
DIST = "kafka_kdump"


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        check=True,
        env=env,
    )


def kdump_wheel(wheels: Path, python: str) -> Path:
    """The wheel of kdump for this Python: its own (cp310) or the stable-ABI one (cp311+)."""
    tag = "cp310-cp310" if python == "3.10" else "cp311-abi3"
    found = sorted(wheels.glob(f"{DIST}-*-{tag}-*manylinux*x86_64*.whl"))
    if len(found) != 1:
        sys.exit(f"build_pyz: expected one kdump {tag} manylinux wheel in {wheels}, found {found}")
    return found[0]


def source_only_wheels(into: Path, kdump: Path) -> None:
    """Pure wheels of the dependencies kdump's metadata names that publish no wheels."""
    with zipfile.ZipFile(kdump) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [
            line.split(":", 1)[1].strip()
            for line in z.read(meta).decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line
        ]
    wanted = [r for r in requires if r.split(">")[0].split("=")[0].strip() in SOURCE_ONLY]
    env = {**os.environ, "CC": "/bin/false"}
    pip("wheel", "--no-deps", "--no-cache-dir", "--no-binary", ",".join(SOURCE_ONLY),
        "-w", str(into), *wanted, env=env)  # fmt: skip


def uv_bin() -> str:
    """uv's binary (the dist extra's). Found once, before any thread: find_uv_bin reads
    sysconfig, whose first read is not thread-safe on 3.11 (a thread saw a path None)."""
    from uv import find_uv_bin

    return str(find_uv_bin())


def resolve(uv: str, python: str, kdump: Path, links: list[Path], target: Path) -> None:
    """kdump and its dependencies for one CPython, as pip would install them, into target."""
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--target", str(target),
         "--only-binary", ":all:", "--python-platform", PLATFORM, "--python-version", python,
         *(f"--find-links={link}" for link in links), str(kdump)],
        check=True,
    )  # fmt: skip
    shutil.rmtree(target / "bin", ignore_errors=True)  # the kdump script, for this machine


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def split(sets: dict[str, Path], site: Path) -> None:
    """site/common: the packages (and modules, and .dist-info) every Python's set holds byte
    for byte; site/cp3XY the rest. Whole packages: Python finds a package in one directory
    of the path, so kdump's C module cannot sit apart from its Python files."""
    contents = {python: files(root) for python, root in sets.items()}

    def top(name: str) -> str:
        return name.split("/")[0]

    tops = {top(name) for found in contents.values() for name in found}
    trees = {
        python: {t: {n: d for n, d in found.items() if top(n) == t} for t in tops}
        for python, found in contents.items()
    }
    first = next(iter(trees.values()))
    common = {t for t in tops if first[t] and all(tree[t] == first[t] for tree in trees.values())}
    for python, found in contents.items():
        for name, data in found.items():
            part = "common" if top(name) in common else "cp" + python.replace(".", "")
            path = site / part / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def checksums(site: Path) -> None:
    """site/SHA256SUMS: each file's SHA-256 (sha256sum's format, archive paths), which
    scripts/pyz_main.py checks every file it unpacks against."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  site/{p.relative_to(site).as_posix()}"
        for p in sorted(site.rglob("*"))
        if p.is_file()
    ]
    (site / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def bootstrap(site: Path, pythons: list[str], version: str) -> str:
    """scripts/pyz_main.py with BUILD filled in; its id names the cache directory, so a
    different build never runs on another's unpacked files."""
    digest = hashlib.sha256()
    for path in sorted(site.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(site).as_posix().encode() + b"\0" + path.read_bytes())
    build = {
        "id": f"{version}-{digest.hexdigest()[:16]}",
        "version": version,
        "pythons": ["cp" + p.replace(".", "") for p in pythons],
    }
    text = (HERE / "pyz_main.py").read_text()
    placeholder = 'BUILD = {"id": "unbuilt", "version": "", "pythons": []}'
    assert placeholder in text
    return text.replace(placeholder, f"BUILD = {json.dumps(build)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", type=Path, help="the directory with kdump's manylinux wheels")
    parser.add_argument("out", type=Path, help="the .pyz to write")
    args = parser.parse_args()
    pythons = [p for p in PYTHONS if p != "3.10" or any(args.wheels.glob(f"{DIST}-*-cp310-*.whl"))]
    if pythons[0] != "3.10":
        print("build_pyz: no cp310 wheel: kdump.pyz will not run on Python 3.10", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        links = [args.wheels, work / "sources"]
        source_only_wheels(links[1], kdump_wheel(args.wheels, pythons[-1]))
        sets = {python: work / "sets" / python for python in pythons}
        uv = uv_bin()
        # side by side: each run mostly waits on the package index
        with ThreadPoolExecutor(len(pythons)) as pool:
            runs = {
                python: pool.submit(
                    resolve, uv, python, kdump_wheel(args.wheels, python), links, into
                )
                for python, into in sets.items()
            }
        for python, run in runs.items():
            if (error := run.exception()) is not None:
                sys.exit(f"build_pyz: uv could not resolve kdump for Python {python}: {error}")
        app = work / "app"
        split(sets, app / "site")
        version = kdump_wheel(args.wheels, pythons[-1]).name.split("-")[1]
        (app / "__main__.py").write_text(bootstrap(app / "site", pythons, version))
        checksums(app / "site")
        zipapp.create_archive(app, args.out, interpreter="/usr/bin/env python3", compressed=True)
    size = args.out.stat().st_size / 2**20
    print(f"wrote {args.out}: {size:.1f} MiB, for CPython {', '.join(pythons)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
