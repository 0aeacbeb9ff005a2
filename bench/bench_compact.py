"""kdump compact against Kafka's own cleaner on the same compacted partition, in the same run.

    python bench/bench_compact.py [--mib 1024] [--value-bytes 1000] [--keys 20000]

Writes a partition of about MIB MiB (kafka-python's encoder, uncompressed batches of 100 records,
``--keys`` distinct keys, so most records are superseded), then cleans two copies: one with
``kdump compact --output-dir`` (a child process), one with Kafka's LogCleanerManager and Cleaner
(tests/realkafka/java/Cleaner.java, a JVM child process against the kafka-storage release's
classpath, compiled first). Prints each wall time, the JVM's and kdump's start-up measured apart
(the same commands on an empty partition), and kdump's time as a ratio of Kafka's (below 1: kdump
is faster). The machine is shared: the ratio is what counts.
"""

from __future__ import annotations

import argparse
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from make_compaction_fixtures import classpath  # noqa: E402

T0 = 1_700_000_000_000


def write_partition(d: Path, mib: int, value_bytes: int, keys: int) -> int:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    d.mkdir(parents=True)
    target = mib << 20
    segment_bytes = 256 << 20
    offset, written, seg_start = 0, 0, 0
    out = open(d / f"{0:020d}.log", "wb")  # noqa: SIM115 (reopened per segment)
    seg_size = 0
    value = bytes(range(256)) * (value_bytes // 256 + 1)
    while written < target:
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 24)
        for i in range(100):
            k = (offset + i) * 7919 % keys
            builder.append(i, T0 + offset + i, b"key-%d" % k, value[:value_bytes], [])
        buf = bytearray(builder.build())
        struct.pack_into(">q", buf, 0, offset)
        out.write(buf)
        offset += 100
        written += len(buf)
        seg_size += len(buf)
        if seg_size >= segment_bytes:
            out.close()
            seg_start, seg_size = offset, 0
            out = open(d / f"{seg_start:020d}.log", "wb")  # noqa: SIM115
    out.close()
    # the active segment: one batch
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 24)
    builder.append(0, T0 + offset, b"key-0", b"x", [])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, offset)
    (d / f"{offset:020d}.log").write_bytes(buf)
    return offset + 1


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--value-bytes", type=int, default=1000)
    p.add_argument("--keys", type=int, default=20000)
    p.add_argument("--kafka", default="4.4.0")
    a = p.parse_args()
    cp = classpath(a.kafka)
    work = Path(tempfile.mkdtemp(prefix="bench-compact-"))
    try:
        classes = work / "classes"
        subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes),
                        str(ROOT / "tests/realkafka/java/Cleaner.java")], check=True)  # fmt: skip
        source = work / "src" / "bench-0"
        end = write_partition(source, a.mib, a.value_bytes, a.keys)
        kdump = str(ROOT / ".venv/bin/kdump")
        now = str(T0 + 3_600_000)
        times = {}
        for name in ("kdump", "kafka", "kdump-empty", "kafka-empty"):
            log_dir = work / name
            log_dir.mkdir()
            if name.endswith("empty"):
                (log_dir / "bench-0").mkdir()  # the active segment alone: nothing to clean
                active = max(source.glob("*.log"))
                shutil.copy(active, log_dir / "bench-0" / active.name)
            else:
                shutil.copytree(source, log_dir / "bench-0")
            part = str(log_dir / "bench-0")
            if name.startswith("kdump"):
                cmd = [kdump, "compact", part, "--now", now, "--config", "cleanup.policy=compact",
                       "--output-dir", str(work / f"{name}-out")]  # fmt: skip
            else:
                cmd = ["java", "-Xmx1g", "-cp", f"{cp}:{classes}", "Cleaner", str(log_dir),
                       "bench-0", now, str(end), str(128 << 20), "1", "1",
                       "cleanup.policy=compact"]  # fmt: skip
            times[name] = timed(cmd)
        size = sum(f.stat().st_size for f in source.glob("*.log"))
        print(f"partition: {size / 2**20:.0f} MiB, {end} records, {a.keys} keys")
        for name, t in times.items():
            print(f"{name:12s} {t:8.2f} s")
        print(f"ratio kdump/kafka (whole commands): {times['kdump'] / times['kafka']:.2f}")
        work_k = times["kdump"] - times["kdump-empty"]
        work_j = times["kafka"] - times["kafka-empty"]
        print(f"ratio kdump/kafka (start-up apart): {work_k / max(work_j, 1e-9):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
