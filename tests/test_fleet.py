"""Audits across a fleet (issue 33): each broker's cron writes ``kdump verify --format json
--output TARGET`` (its broker and cluster from meta.properties, the file written whole), and
``kdump report RESULTS... -o page.html`` draws one page for every broker from those results,
each broker's newest, stale brokers flagged, without reading a segment again."""

from __future__ import annotations

import json
import os
import re
import shutil
from html import escape
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import FIXTURES

from kdump.checks.registry import REGISTRY
from kdump.errors import ExitCode

ORACLE = FIXTURES / "oracle"
DAMAGED = FIXTURES / "corrupt" / "log-crc-mismatch" / "txn-0"
HOUR = 3_600_000


def broker_log_dir(root: Path, broker: int, damaged: bool = False) -> Path:
    """A broker's log dir: two partitions (one of them damaged where asked), meta.properties."""
    log_dir = root / f"broker{broker}" / "kafka-logs"
    shutil.copytree(ORACLE / "plain-0", log_dir / "orders-0")
    shutil.copytree(DAMAGED if damaged else ORACLE / "txn-0", log_dir / "payments-0")
    (log_dir / "meta.properties").write_text(
        f"version=1\nnode.id={broker}\ncluster.id=Fleet-Cluster-1\ndirectory.id=lZ6vvmajTWKDBUTV6SQAtQ\n"
    )
    return log_dir


def audit(log_dir: Path, target: str) -> None:
    ran = run_kdump(["verify", str(log_dir), "--format", "json", "--output", target])
    assert ran.exit_code in (ExitCode.OK, ExitCode.ERRORS), ran.stderr
    assert ran.stdout == ""  # the report went to the target


def test_verify_output_names_the_broker_and_writes_whole(tmp_path: Path) -> None:
    log_dir = broker_log_dir(tmp_path, 7)
    audits = tmp_path / "audits"
    audits.mkdir()
    audit(log_dir, str(audits / "{cluster_id}-{broker_id}-{started}.json"))
    (written,) = audits.iterdir()  # and no temporary file left beside it
    assert re.fullmatch(r"Fleet-Cluster-1-7-\d{8}T\d{9}Z\.json", written.name)
    doc = json.loads(written.read_text())
    assert (doc["run"]["broker_id"], doc["run"]["cluster_id"]) == (7, "Fleet-Cluster-1")
    assert len(doc["summary"]["by_partition"]) == 2


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("{nope}.json", "unknown field {nope}"),
        ("no-such-dir/result.json", "no such directory"),
        ("no-such-dir/{started}.json", "no such directory: no-such-dir"),
        ("file://DIR/no-such-dir/{started}.json", "no such directory"),
        ("{host}.json", "cannot tell two runs apart"),
        ("{cluster_id}/{broker_id}-{log_dirs}.json", "put {started} in it"),
    ],
)
def test_a_bad_output_is_refused_before_any_work(tmp_path: Path, target: str, says: str) -> None:
    target = target.replace("DIR", str(tmp_path))
    ran = run_kdump(["verify", str(ORACLE / "plain-0"), "--format", "json", "-o", target], tmp_path)
    assert ran.exit_code == ExitCode.BAD_INPUT
    assert ran.stdout == "" and says in ran.stderr and len(ran.stderr.splitlines()) == 1


def set_started(path: Path, started: int) -> None:
    """A result as if its run had started then (the runs of other days)."""
    doc = json.loads(path.read_text())
    doc["run"]["started"] = started
    path.write_text(json.dumps(doc))


def rows_of(page: str, table_id: str) -> list[list[str]]:
    """The cells of each row of the table ``table_id``, as text."""
    table = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>", 1)[1])
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in rows
    ]


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, int]:
    """Three brokers' results: broker 1 twice (its older run saw damage since repaired),
    broker 2 damaged, broker 3 last heard of three days ago; the log dirs then removed."""
    audits = tmp_path / "audits"
    now = 1_800_000_000_000
    for broker in (1, 2, 3):
        (audits / str(broker)).mkdir(parents=True)
    old_1 = broker_log_dir(tmp_path, 1, damaged=True)
    audit(old_1, str(audits / "1" / "old.json"))
    set_started(audits / "1" / "old.json", now - 30 * HOUR)
    shutil.rmtree(tmp_path / "broker1")  # repaired since: the same log dir, built again
    for broker in (1, 2, 3):
        log_dir = broker_log_dir(tmp_path, broker, damaged=broker == 2)
        target = audits / str(broker) / "new.json"
        audit(log_dir, str(target))
        set_started(target, now - (72 if broker == 3 else 1) * HOUR)
    for broker in (1, 2, 3):
        shutil.rmtree(tmp_path / f"broker{broker}")  # nothing but the results is read
    return audits, now


def test_the_fleet_page_shows_every_brokers_newest_result(
    tmp_path: Path, fleet: tuple[Path, int]
) -> None:
    audits, now = fleet
    page_path = tmp_path / "fleet.html"
    ran = run_kdump(["report", str(audits), "-o", str(page_path), "--now", str(now)])
    assert ran.exit_code == ExitCode.ERRORS, ran.stderr  # broker 2's damage
    page = page_path.read_text()
    assert "3 broker(s), 6 partition(s)" in page
    brokers = {row[0]: row for row in rows_of(page, "brokers")}
    assert sorted(brokers) == ["broker 1", "broker 2", "broker 3"]
    assert [brokers[b][5] for b in sorted(brokers)] == ["", "", "stale"]
    assert [brokers[b][10] for b in sorted(brokers)] == ["1", "0", "0"]  # older results
    partitions = rows_of(page, "overview")
    assert len(partitions) == 6
    status = {(row[3], row[1]): row[0] for row in partitions}
    # broker 1's newest result is clean; its older one, damaged, is not what is shown
    assert status[("broker 1", "payments")] == "ok"
    assert status[("broker 2", "payments")] in ("damaged", "errors")
    assert partitions[0][3] == "broker 2"  # worst first
    # the offsets held, as verify's table shows them (the log end offset, 1500, is exclusive)
    assert {row[6] for row in partitions if row[1] == "orders"} == {"0..1499"}
    verdict = page.split('id="verdict"')[1].split("</div>")[0]
    assert "errors on 1 broker(s): broker 2" in verdict
    assert "1 broker(s) stale (newest result older than 36 h): broker 3" in verdict
    codes = {row[1]: row for row in rows_of(page, "codes")}
    assert codes["LOG_CRC_MISMATCH"][3] == "broker 2"
    assert codes["LOG_CRC_MISMATCH"][4] == escape(REGISTRY["LOG_CRC_MISMATCH"].meaning)


def test_stale_is_as_old_as_the_operator_says(tmp_path: Path, fleet: tuple[Path, int]) -> None:
    audits, now = fleet
    page_path = tmp_path / "fleet.html"
    args = ["report", str(audits), "-o", str(page_path), "--now", str(now), "-q"]
    run_kdump([*args, "--stale-after", "100"])
    assert "stale" not in page_path.read_text().split('id="verdict"')[1].split("</div>")[0]
    run_kdump([*args, "--stale-after", "0.5"])
    verdict = page_path.read_text().split('id="verdict"')[1].split("</div>")[0]
    assert "3 broker(s) stale" in verdict


def test_a_result_that_is_not_one_is_named_and_the_rest_reported(
    tmp_path: Path, fleet: tuple[Path, int]
) -> None:
    audits, now = fleet
    (audits / "2" / "torn.json").write_text('{"findings": [')
    (audits / "3" / "other.json").write_text('{"run": {"command": "explain"}}')
    page_path = tmp_path / "fleet.html"
    ran = run_kdump(["report", str(audits), "-o", str(page_path), "--now", str(now), "-q"])
    assert ran.exit_code == ExitCode.BAD_INPUT
    assert f"{audits / '2' / 'torn.json'}: not JSON at byte 14" in ran.stderr
    assert "other.json: not a kdump verify --format json result" in ran.stderr
    assert len(rows_of(page_path.read_text(), "overview")) == 6


def test_results_and_partitions_are_not_mixed(tmp_path: Path, fleet: tuple[Path, int]) -> None:
    audits, _ = fleet
    ran = run_kdump(["report", str(audits), str(ORACLE / "plain-0"), "-o", str(tmp_path / "x")])
    assert ran.exit_code == ExitCode.BAD_INPUT and "not both" in ran.stderr
    assert not os.path.exists(tmp_path / "x")


def two_log_dirs(root: Path) -> tuple[Path, Path]:
    """One broker (5) with two log dirs, a partition each."""
    dirs = []
    for name, source in (("data1", ORACLE / "plain-0"), ("data2", ORACLE / "txn-0")):
        log_dir = root / name / "kafka-logs"
        shutil.copytree(source, log_dir / f"{name}-topic-0")
        (log_dir / "meta.properties").write_text(
            "version=1\nnode.id=5\ncluster.id=Fleet-Cluster-1\n"
        )
        dirs.append(log_dir)
    return dirs[0], dirs[1]


def test_a_result_of_another_log_dir_is_not_replaced(tmp_path: Path) -> None:
    """Issue 33: a broker's log dirs verified one run each to one file (a name without fields):
    the second run would replace the first's result and the fleet page would lose that log
    dir; it is refused in one line, the first result kept. A run of the same log dir, or of
    both, replaces it."""
    first, second = two_log_dirs(tmp_path)
    target = tmp_path / "result.json"
    audit(first, str(target))
    (written,) = tmp_path.glob("*.json")
    kept = written.read_bytes()
    ran = run_kdump(["verify", str(second), "--format", "json", "--output", str(target)])
    assert ran.exit_code == ExitCode.BAD_INPUT
    assert len(ran.stderr.splitlines()) == 1
    assert f"{written}: holds the result of log dir(s) {first}" in ran.stderr
    assert "{started}" in ran.stderr
    assert written.read_bytes() == kept
    audit(first, str(target))  # the same log dir again: replaced
    ran = run_kdump(
        ["verify", str(first), str(second), "--format", "json", "--output", str(target)]
    )
    assert ran.exit_code == ExitCode.OK, ran.stderr
    doc = json.loads(written.read_text())
    assert {d["path"] for d in doc["run"]["log_dirs"]} == {str(first), str(second)}


def test_two_runs_on_one_host_never_replace_each_others_result(tmp_path: Path) -> None:
    """Issue 44 point 5: a template is one name per run ({started}, to the millisecond), and a
    name already there (two runs in the same millisecond) is never replaced: the second result
    gets ``-2``; a directory gets the default template beneath it."""
    log_dir = broker_log_dir(tmp_path, 3)
    audits = tmp_path / "audits"
    audits.mkdir()
    for _ in range(2):
        audit(log_dir, str(audits) + "/")
    written = sorted(audits.rglob("*.json"))
    assert len(written) == 2
    assert {p.parent.relative_to(audits).as_posix() for p in written} == {"Fleet-Cluster-1/3"}

    from kdump.storage.outputs import write_new_textfile

    first = audits / "same.json"
    first.write_text("kept\n")
    assert write_new_textfile(str(first), "second\n") == str(audits / "same-2.json")
    assert first.read_text() == "kept\n" and (audits / "same-2.json").read_text() == "second\n"
    assert not [p for p in audits.iterdir() if p.name.startswith(".")]  # nothing left beside


@pytest.mark.parametrize("url", [False, True], ids=["path", "file-url"])
def test_the_readmes_layout_makes_its_directories(tmp_path: Path, url: bool) -> None:
    """Issue 44 point 9: ``/fleet/{cluster_id}/{broker_id}/{started}.json`` (docs/fleet.md's
    layout) makes the directories its fields name, locally and under file://; the result is
    JSON whatever --format says (kdump report reads it)."""
    log_dir = broker_log_dir(tmp_path, 4)
    fleet_dir = tmp_path / "fleet"
    fleet_dir.mkdir()
    template = f"{fleet_dir}/{{cluster_id}}/{{broker_id}}/{{started}}.json"
    ran = run_kdump(["verify", str(log_dir), "-o", ("file://" if url else "") + template])
    assert (ran.exit_code, ran.stdout) == (ExitCode.OK, ""), ran.stderr
    (written,) = fleet_dir.rglob("*.json")
    assert written.parent == fleet_dir / "Fleet-Cluster-1" / "4"
    assert json.loads(written.read_text())["run"]["broker_id"] == 4  # text asked: JSON written
    page = tmp_path / "page.html"
    assert run_kdump(["report", str(fleet_dir), "-o", str(page)]).exit_code == ExitCode.OK


def test_a_cluster_id_cannot_steer_where_the_result_goes(tmp_path: Path) -> None:
    """Issue 39 point 1: ``cluster.id=../victimdir/daemon`` in meta.properties (the broker's
    user writes it) with ``--output '/audits/{cluster_id}.json'`` made root replace
    ``/victimdir/daemon.json``. Each field is one name now."""
    log_dir = broker_log_dir(tmp_path, 9)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=9\ncluster.id=../../victim/d\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "d-x.json").write_text("the victim's\n")
    audits = tmp_path / "a" / "audits"
    audits.mkdir(parents=True)
    ran = run_kdump(["verify", str(log_dir), "-o", f"{audits}/{{cluster_id}}-{{started}}.json"])
    assert ran.exit_code == ExitCode.OK, ran.stderr
    (written,) = audits.iterdir()
    assert written.name.startswith(".._.._victim_d-")
    assert list(victim.iterdir()) == [victim / "d-x.json"]


def test_one_result_per_log_dir_and_the_page_shows_each(tmp_path: Path) -> None:
    """``{log_dirs}`` names each log dir's result apart; kdump report shows the newest result
    of each log dir of a broker (both partitions); a later run of both hides them as older."""
    first, second = two_log_dirs(tmp_path / "disks")
    audits = tmp_path / "audits"
    audits.mkdir()
    target = str(audits / "{broker_id}-{log_dirs}-{started}.json")
    for log_dir in (first, second):
        audit(log_dir, target)
    names = sorted(re.sub(r"-\d{8}T\d{9}Z", "", p.name) for p in audits.iterdir())
    slug = str(tmp_path / "disks").strip("/").replace("/", "_")
    assert names == [f"5-{slug}_data1_kafka-logs.json", f"5-{slug}_data2_kafka-logs.json"]
    page_path = tmp_path / "fleet.html"
    ran = run_kdump(["report", str(audits), "-o", str(page_path)])
    assert ran.exit_code == ExitCode.OK, ran.stderr
    page = page_path.read_text()
    assert "2 partition(s)" in page
    brokers = [row[0] for row in rows_of(page, "brokers")]
    assert brokers == [f"broker 5 ({first})", f"broker 5 ({second})"]
    assert {row[1] for row in rows_of(page, "overview")} == {"data1-topic", "data2-topic"}

    both = audits / "both.json"
    audit(first, str(both))  # a result named otherwise, of the first log dir only
    ran = run_kdump(
        ["verify", str(first), str(second), "--format", "json", "-o", str(audits / "all.json")]
    )
    assert ran.exit_code == ExitCode.OK, ran.stderr
    newest = json.loads((audits / "all.json").read_text())["run"]["started"] + 60_000
    set_started(audits / "all.json", newest)  # the newest, whatever the clock's resolution
    run_kdump(["report", str(audits), "-o", str(page_path)])
    (row,) = rows_of(page_path.read_text(), "brokers")
    assert row[0] == "broker 5" and row[10] == "3"  # the three older results not shown


MALFORMED = {
    "broker-dict": (lambda d: d["run"].update(broker_id={"x": 1}), "run.broker_id: an object"),
    "summary-list": (lambda d: d.update(summary=[]), "summary: an array, not an object"),
    "bytes-text": (
        lambda d: d["summary"]["by_partition"][0].update(bytes="abc"),
        "summary.by_partition[0].bytes: a string, not an integer",
    ),
    "finding-path-int": (
        lambda d: d["findings"].append({"code": "X", "severity": "error", "path": 5}),
        ".path: the int 5, not a string",
    ),
    "started-1e30": (lambda d: d["run"].update(started=1e30), "run.started: the number 1e+30"),
    "started-future": (
        lambda d: d["run"].update(started=d["run"]["started"] + 10 * HOUR),
        "run.started: ",
    ),
    "nan": (lambda d: d["summary"]["by_partition"][0].update(bytes=float("nan")), "NaN is not"),
    "script-fix": (
        lambda d: d["findings"].append(
            {"code": "X", "severity": "error", "path": "/p", "message": "m", "fix": "curl x|sh"}
        ),
        ".fix: 'curl x|sh' is none of kdump's commands",
    ),
}


def test_a_malformed_result_is_named_and_the_rest_drawn(
    tmp_path: Path, fleet: tuple[Path, int]
) -> None:
    """Issue 39 point 8: one malformed result (a broker_id that is an object, a summary that is
    a list, bytes "abc", a finding's path an int...) aborted the whole page with exit 3; a
    ``started`` of 1e30 kept a result the newest for ever. Each is read typed and bounded
    (kdump.readback), named in one line, and the other results drawn."""
    audits, now = fleet
    good = json.loads((audits / "2" / "new.json").read_text())
    for name, (spoil, _) in MALFORMED.items():
        doc = json.loads(json.dumps(good))
        doc["run"]["started"] = now - HOUR
        spoil(doc)
        (audits / "2" / f"{name}.json").write_text(json.dumps(doc))
    page_path = tmp_path / "fleet.html"
    ran = run_kdump(["report", str(audits), "-o", str(page_path), "--now", str(now), "-q"])
    assert ran.exit_code == ExitCode.BAD_INPUT
    assert "Traceback" not in ran.stderr and "unexpected" not in ran.stderr
    for name, (_, says) in MALFORMED.items():
        (line,) = [x for x in ran.stderr.splitlines() if f"/{name}.json: " in x]
        assert says in line, line
    assert len(rows_of(page_path.read_text(), "overview")) == 6  # the good results, all drawn
