"""kdump shipped to Spark executors (issue 40), one executor's side at a time: the executors'
Python of tests/sparkcluster.py (pyspark's requirements, no kdump) runs what a Spark worker
runs for a task of kdump's: the shipped zip put on its path, then kdump.spark.remote's runner
unpickled by value and fed the task's input. The whole way through a real cluster:
tests/cluster/."""

from __future__ import annotations

import json
import pickle
import platform
import shutil
import socket
import subprocess
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from conftest import GENERATED, ORACLE, REPO
from sparkcluster import make_executor_python, spark_home

from kdump import __version__, speedups
from kdump.checks.options import VerifyOptions
from kdump.checks.verify import collect_result, verify_paths
from kdump.discovery import Found, discover
from kdump.spark import remote
from kdump.spark.job import VerifyJob
from kdump.spark.remote import RESULT_FIELDS, TaskRunner
from kdump.spark.ship import VERSION_FILE, build_shipment, shipment_files
from kdump.spark.tasks import pure_python_note
from kdump.unified_log import OpenOptions

WORKER = """\
import pickle, sys
archive = sys.argv[1]
if archive:
    sys.path.insert(1, archive)  # where pyspark's worker puts a --py-files zip
runner, items = pickle.loads(sys.stdin.buffer.read())  # the command, then its input
sys.stdout.buffer.write(pickle.dumps(list(runner.partition(items))))
"""
"""A Spark worker's part, as pyspark.worker does it for an RDD task."""


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = make_executor_python(tmp_path_factory.mktemp("executor") / "venv")
    probe = subprocess.run(  # not from the repository's folder: `-c` imports from the cwd
        [python, "-c", "import kdump"], capture_output=True, text=True, cwd=python.parent
    )
    assert "No module named 'kdump'" in probe.stderr
    return python


def as_executor(
    python: Path,
    archive: Path | None,
    target: str,
    inputs: list[Any],
    site: Path | None = None,
    driver: tuple[str, str] = ("", ""),
) -> list[dict[str, Any]]:
    """RESULT_FIELDS of each input, as an executor running ``python`` gives them (``site``: a
    folder of packages installed there)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(remote)
    items = [(i, pickle.dumps(x)) for i, x in enumerate(inputs)]
    command = cloudpickle.dumps((TaskRunner(target, __version__, driver), items))
    lib = spark_home() / "python" / "lib"
    path = [str(z) for z in sorted(lib.glob("*.zip"))] + ([str(site)] if site else [])
    ran = subprocess.run(
        [python, "-c", WORKER, str(archive or "")],
        input=command,
        capture_output=True,
        env={"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin"},
        cwd=python.parent,  # an executor's own folder, never the repository's
        check=False,
    )
    assert ran.returncode == 0, ran.stderr.decode()[-3000:]
    return [dict(zip(RESULT_FIELDS, row, strict=True)) for row in pickle.loads(ran.stdout)]


def deep_verify_tasks(roots: list[str]) -> tuple[Found, list[list[VerifyJob]]]:
    """`kdump spark verify --deep`'s tasks on ``roots``: one partition each."""
    found = discover(roots, None, OpenOptions())
    deep = VerifyOptions(deep=True)
    return found, [[(i, log, None, deep)] for i, log in enumerate(found.partitions)]


def verified(found: Found, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings the driver assembles from the tasks' results, as `kdump spark verify`."""
    results = {}
    for row in rows:
        assert row["error"] is None, row["error"]
        for i, result, _ in pickle.loads(row["result"]):
            results[i] = result
    number = {id(log): i for i, log in enumerate(found.partitions)}
    result = collect_result(found, lambda log: results[number[id(log)]])
    return [f.to_dict() for f in result.findings]


def test_shipment_holds_kdump_its_c_module_and_executor_dependencies(tmp_path: Path) -> None:
    """The zip holds kdump's package (with its C module where it is built) and what its executor
    side imports, never bytecode or C source; the same files give the same zip name."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Path(build_shipment(str(tmp_path / "a")))
    second = Path(build_shipment(str(tmp_path / "b")))
    assert first.name == second.name and first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert sorted(names) == sorted({name for name, _ in shipment_files()} | {VERSION_FILE})
    version: dict[str, str] = {}
    exec(zipfile.ZipFile(first).read(VERSION_FILE), version)
    assert version["__version__"] == __version__  # the driver's, whatever the disk says
    tops = {n.split("/")[0] for n in names}
    assert tops == {"kdump", "crcmod", "crc32c", "cramjam"}
    assert "kdump/spark/remote.py" in names and "kdump/cli.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".c"))]
    if speedups.built():
        assert any(n.startswith("kdump/_speedups") and n.endswith(".so") for n in names)


def test_an_executor_without_kdump_runs_the_shipped_zip(
    executor_python: Path, tmp_path: Path
) -> None:
    """The executors' Python with nothing but the zip runs `kdump spark verify --deep`'s tasks
    as this process verifies, on kdump's C module and cramjam, both loaded out of the zip
    (copied beside it, once)."""
    archive = Path(build_shipment(str(tmp_path)))
    found, tasks = deep_verify_tasks([str(ORACLE), str(GENERATED)])
    rows = as_executor(executor_python, archive, "kdump.spark.job:verify_group", tasks)
    (fact,) = {row["executor"] for row in rows}
    facts = json.loads(fact)
    assert facts["kdump"] == __version__ and facts["origin"] == f"{archive}/kdump"
    assert facts["decompressor"] == "cramjam"
    if speedups.built():
        assert facts["c_off"] is None
        assert (archive.parent / f"{archive.name}.native" / "kdump").is_dir()
    expected = verify_paths([str(ORACLE), str(GENERATED)], VerifyOptions(deep=True))
    assert verified(found, rows) == [f.to_dict() for f in expected.findings]


def test_executors_of_another_platform_run_pure_python(
    executor_python: Path, tmp_path: Path
) -> None:
    """What an aarch64 driver ships: kdump's C module built for aarch64 (cross-compiled here),
    cramjam's and crc32c's under aarch64's names. On this machine the C module fails to load
    and the others are not found: the executor runs kdump's pure Python, decompresses with
    pyarrow, and finds what the C paths find here, --deep (every record of every codec); the
    driver's note names the executor and why."""
    cc = shutil.which("aarch64-linux-gnu-gcc")
    if cc is None:
        pytest.skip("no aarch64-linux-gnu-gcc (scripts/ensure-test-system-deps.sh installs it)")
    built = tmp_path / "_speedups.abi3.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", "-std=c99", "-w", "-DPy_LIMITED_API=0x030B0000",
         f"-I{sysconfig.get_paths()['include']}", str(REPO / "kdump" / "_speedups.c"),
         "-o", str(built)],
        check=True,
    )  # fmt: skip
    ours = zipfile.ZipFile(build_shipment(str(tmp_path)))
    archive = tmp_path / "aarch64.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in ours.namelist():
            if name.startswith("kdump/_speedups"):
                z.write(built, "kdump/_speedups.abi3.so")
            elif name.endswith(".so"):  # never opened here: named for another platform
                z.writestr(name.replace(f"-{platform.machine()}-", "-aarch64-"), ours.read(name))
            else:
                z.writestr(name, ours.read(name))
    found, tasks = deep_verify_tasks([str(ORACLE), str(GENERATED)])
    rows = as_executor(executor_python, archive, "kdump.spark.job:verify_group", tasks)
    facts = {row["executor"] for row in rows}
    assert len(facts) == 1
    (fact,) = (json.loads(f) for f in facts)
    assert fact["c_off"].startswith("built for another Python or machine: ")
    assert fact["decompressor"] == "pyarrow"
    expected = verify_paths([str(ORACLE), str(GENERATED)], VerifyOptions(deep=True))
    assert verified(found, rows) == [f.to_dict() for f in expected.findings]
    assert pure_python_note([fact]) == (
        f"the executors on {socket.gethostname()} ran kdump's pure Python, slower than its C "
        f"module ({fact['c_off']}); for it, install kdump's wheel for their platform there and "
        "run with --no-ship"
    )
    assert pure_python_note([{**fact, "c_off": None}]) is None


def test_an_executor_without_the_drivers_kdump_is_named(
    executor_python: Path, tmp_path: Path
) -> None:
    """--no-ship: where the executors' Python has kdump at another version, or none, each task
    says so in one line before its input is unpickled (exit 3 on the driver), never answering
    with other code; the driver's own files on its own host pass whatever version they say."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "kdump", site / "kdump", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "kdump" / "_version.py").write_text('__version__ = "0.0.1"\n')
    host = socket.gethostname()
    ship = "let kdump ship itself to the executors (without --no-ship)"
    (other,) = as_executor(executor_python, None, "kdump.spark:probe", [None], site)
    assert (other["result"], other["exit_code"]) == (None, 3)
    assert other["error"] == (
        f"the executors run kdump 0.0.1 ({site / 'kdump'}, Python {executor_python} on {host}); "
        f"the driver runs kdump {__version__}: {ship}, or install kdump {__version__} there"
    )
    # the driver's own files (a local master's workers), whatever version they say now
    own = (host, str((site / "kdump").resolve()))
    (same,) = as_executor(executor_python, None, "kdump.spark:probe", [None], site, own)
    assert same["error"] is None and pickle.loads(same["result"]) is None
    (none,) = as_executor(executor_python, None, "kdump.spark:probe", [None])
    assert (none["result"], none["exit_code"]) == (None, 3)
    assert none["error"] == (
        f"the executors' Python ({executor_python} on {host}) has no kdump: {ship}, or install "
        f"kdump {__version__} there"
    )


def test_the_shipped_kdump_goes_before_an_installed_one(
    executor_python: Path, tmp_path: Path
) -> None:
    """An executor with another kdump installed (0.0.1 here) runs the driver's, shipped: the
    zip is ahead of it on the worker's path, and the task's check finds the driver's version."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "kdump", site / "kdump", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "kdump" / "_version.py").write_text('__version__ = "0.0.1"\n')
    archive = Path(build_shipment(str(tmp_path)))
    (row,) = as_executor(executor_python, archive, "kdump.spark:probe", [None], site)
    assert row["error"] is None and pickle.loads(row["result"]) is None
    facts = json.loads(row["executor"])
    assert (facts["kdump"], facts["origin"]) == (__version__, f"{archive}/kdump")
