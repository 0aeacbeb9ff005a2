"""kdump compact against Kafka's own cleaner on the same compacted partition, in the same run.

    python bench/bench_compact.py [--mib 1024] [--kinds large,small,binary] [--repeat 3]

For each kind of partition, about MIB MiB in segments of 256 MiB plus an active one:

- ``large``: batches of 100 records, 1000-byte text values, 20000 keys (most records superseded);
- ``small``: batches of one record of about 100 bytes, 200000 keys;
- ``binary``: batches of 100 records, 1000-byte random values, 20000 keys.

A block of batches is built once (kdump.format.builder) and repeated with its offsets moved on
(a base offset lies outside the CRC), so later copies supersede earlier ones. The indexes are
built by ``kdump rebuild-index`` and the log dir marked cleanly shut down, so Kafka's loader
recovers nothing: what is timed is the cleaning, as a broker's cleaner thread runs it.

Each partition is cleaned by ``kdump compact --output-dir`` (a child process) and by Kafka's
LogCleanerManager and Cleaner (tests/realkafka/java/Cleaner.java, a JVM child process against the
kafka-storage release's classpath, compiled first), each ``--repeat`` times on fresh copies,
alternating; the medians are compared. Start-up is measured apart: the same commands on a
partition holding only its active segment. Ratios below 1: kdump is faster. CPU time (user and
system, every thread: the JVM's compilers and collectors too) is shown beside: on a machine
other jobs load, a process of one thread gets less of it per second than one of many. kdump's
peak RSS is shown beside the key map it sizes (the dedupe buffer, 128 MiB).
The machine is shared: the ratios are what count.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from make_compaction_fixtures import classpath  # noqa: E402

from kdump.format.builder import BatchHeader, BuiltRecord, build_batch  # noqa: E402

T0 = 1_700_000_000_000
SEGMENT_BYTES = 256 << 20
KINDS = {
    # records per batch, value bytes, keys, random values
    "large": (100, 1000, 20000, False),
    "small": (1, 40, 200000, False),
    "binary": (100, 1000, 20000, True),
}
DEDUPE = 128 << 20


def _block(kind: str) -> tuple[list[bytes], int]:
    """One block of batches (offsets from 0) and the offsets it spans: every key once."""
    per_batch, value_bytes, keys, binary = KINDS[kind]
    rng = __import__("random").Random(7)
    text = (b"a value of a compacted topic; " * (value_bytes // 30 + 1))[:value_bytes]
    batches, offset = [], 0
    while offset < keys:
        records = [
            BuiltRecord(
                offset + i,
                T0 + offset + i,
                b"key-%d" % (offset + i),
                rng.randbytes(value_bytes) if binary else text,
                (),
            )
            for i in range(per_batch)
        ]
        header = BatchHeader(offset, offset + per_batch - 1, 0, 0, None, -1, -1, -1, False, False)
        batches.append(build_batch(header, records, None))
        offset += per_batch
    return batches, offset


def write_partition(d: Path, kind: str, mib: int) -> int:
    """The partition, its .log files only; its log end offset."""
    d.mkdir(parents=True)
    block, span = _block(kind)
    starts = [struct.unpack_from(">q", b)[0] for b in block]
    target, written, copy, offset = mib << 20, 0, 0, 0
    out = open(d / f"{0:020d}.log", "wb")  # noqa: SIM115 (reopened per segment)
    segment = 0
    while written < target:
        shifted = bytearray(b"".join(block))
        at = 0
        for batch, start in zip(block, starts, strict=True):
            struct.pack_into(">q", shifted, at, start + copy * span)
            at += len(batch)
        if segment + len(shifted) > SEGMENT_BYTES and segment:
            out.close()
            out = open(d / f"{copy * span:020d}.log", "wb")  # noqa: SIM115
            segment = 0
        out.write(shifted)
        written += len(shifted)
        segment += len(shifted)
        copy += 1
    out.close()
    offset = copy * span
    active = BatchHeader(offset, offset, 0, 0, None, -1, -1, -1, False, False)
    (d / f"{offset:020d}.log").write_bytes(
        build_batch(active, [BuiltRecord(offset, T0, b"key-0", b"x", ())], None)
    )
    return offset + 1


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """Wall time of a child process, its CPU time (user and system, all its threads), and its
    own peak RSS (KiB)."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, cmd)
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--kinds", default="large,small,binary")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--kafka", default="4.4.0")
    a = p.parse_args()
    cp = classpath(a.kafka)
    work = Path(tempfile.mkdtemp(prefix="bench-compact-"))
    kdump = str(ROOT / ".venv/bin/kdump")
    now = str(T0 + 3_600_000)
    try:
        classes = work / "classes"
        subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes),
                        str(ROOT / "tests/realkafka/java/Cleaner.java")], check=True)  # fmt: skip
        for kind in a.kinds.split(","):
            source = work / kind / "src" / "bench-0"
            end = write_partition(source, kind, a.mib)
            subprocess.run([kdump, "rebuild-index", str(source)], check=True,
                           stdout=subprocess.DEVNULL)  # fmt: skip
            empty = work / kind / "empty" / "bench-0"
            empty.mkdir(parents=True)
            for f in source.iterdir():
                if f.name.startswith(f"{end - 1:020d}"):
                    shutil.copy(f, empty)
            times: dict[str, list[float]] = {}
            cpus: dict[str, list[float]] = {}
            rss = 0
            for n in range(a.repeat):
                for name in ("kdump", "kafka", "kdump-empty", "kafka-empty"):
                    log_dir = work / kind / f"{name}-{n}"
                    log_dir.mkdir()
                    (log_dir / ".kafka_cleanshutdown").write_bytes(b"")
                    part = log_dir / "bench-0"
                    shutil.copytree(empty if name.endswith("empty") else source, part)
                    if name.startswith("kdump"):
                        cmd = [kdump, "compact", str(part), "--now", now, "--config",
                               "cleanup.policy=compact", "--dedupe-buffer-size", str(DEDUPE),
                               "--output-dir", str(work / kind / f"{name}-{n}-out")]  # fmt: skip
                    else:
                        cmd = ["java", "-Xmx2g", "-cp", f"{cp}:{classes}", "Cleaner",
                               str(log_dir), "bench-0", now, str(end), str(DEDUPE), "1", "1",
                               "cleanup.policy=compact"]  # fmt: skip
                    took, cpu, peak = timed(cmd)
                    times.setdefault(name, []).append(took)
                    cpus.setdefault(name, []).append(cpu)
                    if name == "kdump":
                        rss = max(rss, peak)
                    shutil.rmtree(log_dir)
                    shutil.rmtree(work / kind / f"{name}-{n}-out", ignore_errors=True)
            size = sum(f.stat().st_size for f in source.glob("*.log"))
            med = {name: statistics.median(ts) for name, ts in times.items()}
            print(f"{kind}: {size / 2**20:.0f} MiB, {end} records, {KINDS[kind][2]} keys")
            cpu = {name: statistics.median(ts) for name, ts in cpus.items()}
            for name, t in med.items():
                runs = len(times[name])
                print(f"  {name:12s} {t:8.2f} s, CPU {cpu[name]:6.2f} s (medians of {runs})")
            print(f"  ratio kdump/kafka (whole commands): {med['kdump'] / med['kafka']:.2f}")
            work_k = med["kdump"] - med["kdump-empty"]
            work_j = med["kafka"] - med["kafka-empty"]
            print(f"  ratio kdump/kafka (start-up apart): {work_k / max(work_j, 1e-9):.2f}")
            print(f"  ratio kdump/kafka (CPU time, all threads): {cpu['kdump'] / cpu['kafka']:.2f}")
            print(f"  kdump peak RSS {rss / 1024:.0f} MiB (key map {DEDUPE >> 20} MiB)")
            shutil.rmtree(work / kind)
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
