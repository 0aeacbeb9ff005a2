"""Calibrate `kdump startup`'s time estimate against the real broker's log recovery.

    python bench/bench_startup.py [--large-mib 256] [--small-mib 6] [--rounds 3] [--cold]
                                  [--jvm production|tests] > bench/out/cal-N.txt
    python bench/bench_startup.py --summarize bench/out/cal-*.txt

One KRaft broker (tests/realkafka), two topics written with Kafka's Java producer: ``cal-large``
(1000-byte values in batches of up to 64 KiB) and ``cal-small`` (50-byte values, batches of one
or two records), idempotent, as a 4.x producer writes by default. Then, each round, three starts
of the broker on the same files, each after a clean stop with the files changed so that its
load does one kind of work, which the broker times itself:

- ``recover``: no clean shutdown marker and both partitions' recovery points set to 0: every
  segment is re-read by LogSegment.recover (its snapshot at each base offset is there, so no
  producer state is replayed). Rate: the partition's bytes and batches over its "Completed load
  of Log(...) in X ms".
- ``replay``: no marker, the recovery point at the active segment's base, every producer snapshot
  deleted: recoverSegment first replays the producer state of every earlier segment ("Producer
  state recovery took A ms for snapshot load and B ms for segment recovery from offset <active
  base>": B), then recovers the small active segment. Rate: the earlier segments' bytes and
  batches over B.
- ``clean``: a clean start, nothing recovered: LogManager's "Loaded N logs in X ms" over N is the
  cost of a log that needs no work (opening its files, its snapshot, its checkpoints).

From the two payload shapes each stage's time is split into a cost per byte and a cost per batch
(two equations, two unknowns, per round). ``--cold`` evicts the partitions' files from the page
cache before each start (posix_fadvise DONTNEED: as after a power loss, not a process crash). The
machine is shared: every round's figures are printed, then the median and the spread, which go
into docs/startup.md and kdump/startup/calibration.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from realkafka import Cluster, create_topic, produce, release  # noqa: E402
from realkafka.broker_log import LoadReport  # noqa: E402
from realkafka.files import set_recovery_points  # noqa: E402
from realkafka.release import PRODUCTION_JVM  # noqa: E402

from kdump.format.names import CLEAN_SHUTDOWN  # noqa: E402
from kdump.storage.local import LocalStorage  # noqa: E402
from kdump.unified_log import UnifiedLog  # noqa: E402

TOPICS = {
    "cal-large": {"value_bytes": 1000, "batch_size": 65536, "linger_ms": 20},
    "cal-small": {"value_bytes": 50, "batch_size": 120, "linger_ms": 0},
}
MANY = "cal-many"
"""A topic of many small partitions: what a log that needs no work costs, and one whose only
work is its small active segment (most partitions after a crash)."""
MANY_PARTITIONS = 48


def segment_work(partition: Path) -> list[tuple[int, int, int]]:
    """(base offset, bytes, batches) of each segment, from kdump's walk of it."""
    log = UnifiedLog(LocalStorage(partition))
    try:
        out = []
        for segment in log.segments:
            scan = log.walk(segment).scan
            out.append((segment.base_offset, segment.log_size, 0 if scan is None else scan.batches))
        return out
    finally:
        log.close()


def evict(directory: Path) -> None:
    for name in os.listdir(directory):
        fd = os.open(directory / name, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def predicted(log_dir: Path, threads: int) -> list[float]:
    """`kdump startup`'s estimate of LogManager's load of ``log_dir`` (a child process, as a
    user runs it)."""
    ran = subprocess.run(
        [sys.executable, "-m", "kdump", "startup", str(log_dir), "--format", "json",
         "--recovery-threads", str(threads), "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    said = json.loads(ran.stdout)
    return list(said["log_dirs"][0]["estimated_seconds"])


def start_and_read(
    cluster: Cluster, partitions: list[Path], cold: bool, threads: int, row: dict[str, object]
) -> LoadReport:
    """Start the broker, read what it logged of its load, stop it cleanly; ``row`` gets
    kdump's estimate made before (``<stage>_predicted``) and the load's own time."""
    broker = cluster.brokers[0]
    stage = str(row.pop("stage"))
    row[f"{stage}_predicted_s"] = predicted(broker.log_dir, threads)
    if cold:
        for p in partitions:
            evict(p)
    broker.start()
    report = LoadReport.parse(broker.log_lines())
    broker.stop()
    assert report.load_ms is not None
    row[f"{stage}_loaded_s"] = report.load_ms / 1000
    return report


def solve(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, float]:
    """Seconds per byte and per batch from two (bytes, batches, seconds) measurements."""
    (x1, y1, t1), (x2, y2, t2) = a, b
    det = x1 * y2 - x2 * y1
    per_byte = (t1 * y2 - t2 * y1) / det
    per_batch = (x1 * t2 - x2 * t1) / det
    return per_byte, per_batch


SUMMARIZED = (
    ("recover_mib_s", "recovery, per byte (MiB/s)"),
    ("recover_batches_s", "recovery, per batch (batches/s)"),
    ("replay_batches_s", "producer state replay, per batch (batches/s)"),
    ("replay_mib_s", "producer state replay, per byte (MiB/s)"),
    ("clean_per_log_ms", "a log with no work (ms, LogManager's total / N)"),
    ("recover_log_ms", "a log re-reading a small active segment (ms)"),
    ("snapshot_write_ms", "a producer snapshot write (ms, median of a round)"),
    ("segment_ms", "a recovered segment, besides its bytes (ms: the two above, less)"),
    ("load_average", "the machine's 1-minute load average"),
)


def summarize(files: list[str]) -> None:
    """Every round of earlier runs (their printed JSON lines): each figure's median and range,
    warm and cold, as docs/startup.md tabulates them."""
    rows = []
    for name in files:
        with open(name) as f:
            rows += [json.loads(line) for line in f if line.startswith("{")]
    for r in rows:
        if r.get("recover_log_ms") is not None and r.get("clean_log_ms") is not None:
            r["segment_ms"] = r["recover_log_ms"] - r["clean_log_ms"]
    print(f"{len(rows)} rounds from {len(files)} runs")
    print("| figure | page cache | rounds | median | min | max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key, what in SUMMARIZED:
        for cold in (False, True):
            values = [r[key] for r in rows if r.get(key) is not None and r["cold"] == cold]
            if values:
                print(
                    f"| {what} | {'cold' if cold else 'warm'} | {len(values)} | "
                    f"{statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |"
                )


def main() -> None:
    if sys.argv[1:2] == ["--summarize"]:
        summarize(sys.argv[2:])
        return
    p = argparse.ArgumentParser()
    p.add_argument("--large-mib", type=int, default=256)
    p.add_argument("--small-mib", type=int, default=6, help="(the producer's pace: ~5k batches/s)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--kafka", default="4.4.0")
    p.add_argument("--cold", action="store_true")
    p.add_argument("--threads", type=int, default=1, help="num.recovery.threads.per.data.dir")
    p.add_argument(
        "--jvm",
        choices=("production", "tests"),
        default="production",
        help="the broker's JVM options: kafka-server-start.sh's, or the tests' fast-start ones",
    )
    args = p.parse_args()

    rel = release(args.kafka)
    root = Path(tempfile.mkdtemp(prefix="bench-startup-", dir=ROOT / "bench" / "out"))
    cluster = Cluster(
        rel,
        root,
        config={"num.recovery.threads.per.data.dir": str(args.threads)},
        jvm=PRODUCTION_JVM if args.jvm == "production" else None,
    )
    cluster.start()
    broker = cluster.brokers[0]
    log = root / "clients.log"
    try:
        for topic, shape in TOPICS.items():
            mib = args.large_mib if topic == "cal-large" else args.small_mib
            segment = max(1 << 20, (mib << 20) // 4)  # four segments: three to replay
            create_topic(broker.bootstrap, topic, 1, config={"segment.bytes": str(segment)})
            per_record = shape["value_bytes"] + 30
            records = (mib << 20) // per_record
            t0 = time.perf_counter()
            produce(
                rel,
                broker.bootstrap,
                {"topic": topic, "records": records, "idempotent": True, **shape},
                log=log,
            )
            print(f"# produced {topic}: {records} records in {time.perf_counter() - t0:.1f} s")
        create_topic(broker.bootstrap, MANY, MANY_PARTITIONS)
        produce(
            rel,
            broker.bootstrap,
            {"topic": MANY, "records": 20 * MANY_PARTITIONS, "idempotent": True, "keys": 997},
            log=log,
        )
        broker.stop()
        dirs = [broker.partition_dir(t, 0) for t in TOPICS]
        many = [(MANY, p) for p in range(MANY_PARTITIONS)]
        work = {t: segment_work(broker.partition_dir(t, 0)) for t in TOPICS}
        for t, segs in work.items():
            total = sum(s[1] for s in segs)
            batches = sum(s[2] for s in segs)
            print(f"# {t}: {len(segs)} segments, {total} bytes, {batches} batches")
        rounds = []
        for r in range(args.rounds):
            row: dict[str, object] = {"round": r, "jvm": args.jvm, "cold": args.cold}
            row["load_average"] = os.getloadavg()[0]
            # recover: every segment re-read
            (broker.log_dir / CLEAN_SHUTDOWN).unlink(missing_ok=True)
            set_recovery_points(broker.log_dir, {(t, 0): 0 for t in TOPICS})
            set_recovery_points(broker.log_dir, {tp: 0 for tp in many})
            row["stage"] = "recover"
            report = start_and_read(cluster, dirs, args.cold, args.threads, row)
            written = list(report.logs.values())
            row["recover_log_ms"] = statistics.median(
                report.logs[f"{t}-{p}"].load_ms or 0 for t, p in many
            )
            recover = {}
            for t, segs in work.items():
                load = report.logs[f"{t}-0"]
                assert load.recovered_segments == [s[0] for s in segs], load
                recover[t] = (sum(s[1] for s in segs), sum(s[2] for s in segs), load.load_ms / 1e3)
            row["recover"] = recover
            # replay: every earlier segment's producer state replayed, the active one recovered
            (broker.log_dir / CLEAN_SHUTDOWN).unlink(missing_ok=True)
            set_recovery_points(broker.log_dir, {(t, 0): work[t][-1][0] for t in TOPICS})
            for d in dirs:
                for name in os.listdir(d):
                    if name.endswith(".snapshot"):
                        (d / name).unlink()
            row["stage"] = "replay"
            report = start_and_read(cluster, dirs, args.cold, args.threads, row)
            replay = {}
            for t, segs in work.items():
                load = report.logs[f"{t}-0"]
                active = segs[-1][0]
                took = [x for x in load.replays if x.to_offset == active]
                assert took, load
                earlier = segs[:-1]
                replay[t] = (
                    sum(s[1] for s in earlier),
                    sum(s[2] for s in earlier),
                    took[0].replay_ms / 1e3,
                )
            row["replay"] = replay
            # clean: nothing to do
            row["stage"] = "clean"
            report = start_and_read(cluster, dirs, args.cold, args.threads, row)
            assert report.loaded and report.load_ms is not None
            row["clean_per_log_ms"] = report.load_ms / report.loaded
            row["clean_log_ms"] = statistics.median(
                report.logs[f"{t}-{p}"].load_ms or 0 for t, p in many
            )
            row["clean_loaded"] = (report.loaded, report.load_ms)
            for stage in ("recover", "replay"):
                measured = row[stage]
                assert isinstance(measured, dict)
                per_byte, per_batch = solve(measured["cal-large"], measured["cal-small"])
                row[f"{stage}_mib_s"] = 1 / per_byte / (1 << 20) if per_byte > 0 else None
                row[f"{stage}_batches_s"] = 1 / per_batch if per_batch > 0 else None
                for t in TOPICS:
                    b, _, s = measured[t]
                    row[f"{stage}_{t}_mib_s"] = b / s / (1 << 20) if s else None
            for stage in ("recover", "replay", "clean"):
                low, high = row[f"{stage}_predicted_s"]  # type: ignore[misc]
                took = row[f"{stage}_loaded_s"]
                assert isinstance(took, float)
                row[f"{stage}_in_range"] = low <= took <= high
            rounds.append(row)
            writes = [ms for load in written for ms in load.snapshot_write_ms]
            row["snapshot_write_ms"] = statistics.median(writes) if writes else None
            print(json.dumps(row))
        print("# summary (median [min, max])")
        keys = [k for k in rounds[0] if k.endswith(("_s", "_ms")) and k != "round"]
        for k in keys:
            values = [r[k] for r in rounds if isinstance(r[k], int | float)]
            if values:
                print(
                    f"{k}: {statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"
                )
    finally:
        cluster.kill()


if __name__ == "__main__":
    main()
