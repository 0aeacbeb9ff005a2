"""Make fixtures/compaction: partitions written by an independent encoder (kafka-python's
DefaultRecordBatchBuilder, every codec) or taken from fixtures/oracle, each cleaned once by Kafka's
own Cleaner (tests/realkafka/java/Cleaner.java against the kafka-storage release's classpath),
with what it wrote kept beside them. tests/test_compact_kafka.py runs ``kdump compact`` on the
same inputs and compares.

    python scripts/make_compaction_fixtures.py [KAFKA_VERSION [SCENARIO...]]
    (default 4.4.0 and every scenario; needs mvn, javac)

Each scenario is ``fixtures/compaction/NAME/``: ``scenario.json`` (topic settings, now, high
watermark, dedupe buffer, the input's .log mtimes, Kafka's stats line), ``input/`` (a log dir
holding the partition, unless it names an oracle one) and ``kafka/`` (the log dir as Kafka's
cleaner left it).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from batchbytes import fix_crc  # noqa: E402
from explainbuild import indexes  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

OUT = ROOT / "fixtures" / "compaction"
T0 = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR
MTIME = T0 + 10 * HOUR
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"


class Built:
    def __init__(self, data: bytes, base: int, last: int, max_ts: int) -> None:
        self.data, self.base_offset, self.last_offset, self.max_timestamp = data, base, last, max_ts
        self.size = len(data)


def batch(
    base: int,
    records: list[tuple[bytes | None, bytes | None]],
    ts: int,
    codec: int = 0,
    *,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    txn: bool = False,
    horizon: int | None = None,
    append_time: bool = False,
    headers: bool = False,
) -> Built:
    builder = DefaultRecordBatchBuilder(2, codec, txn, pid, epoch, seq, 1 << 24)
    for i, (k, v) in enumerate(records):
        h = [("h\u00e9", b"x" * i), ("n", None)] if headers else []
        assert builder.append(i, ts + i, k, v, h) is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)
    (attributes,) = struct.unpack_from(">h", buf, 21)
    if horizon is not None:
        attributes |= 0x40
        struct.pack_into(">q", buf, 27, horizon)
    if append_time:
        attributes |= 0x08
        struct.pack_into(">q", buf, 35, ts + 99)
    struct.pack_into(">h", buf, 21, attributes)
    fix_crc(buf, 0)
    return Built(bytes(buf), base, base + len(records) - 1, ts + len(records) - 1)


def marker(
    offset: int, commit: bool, pid: int, epoch: int, ts: int, horizon: int | None = None
) -> Built:
    builder = DefaultRecordBatchBuilder(2, 0, True, pid, epoch, -1, 1 << 20)
    builder.append(0, ts, struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 0), [])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, offset)
    (attributes,) = struct.unpack_from(">h", buf, 21)
    attributes |= 0x20
    if horizon is not None:
        attributes |= 0x40
        struct.pack_into(">q", buf, 27, horizon)
    struct.pack_into(">h", buf, 21, attributes)
    fix_crc(buf, 0)
    return Built(bytes(buf), offset, offset, ts)


def write_segment(
    d: Path, batches: list[Built], aborted: list[tuple[int, int, int, int]] = ()
) -> None:
    base = batches[0].base_offset
    name = f"{base:020d}"
    (d / f"{name}.log").write_bytes(b"".join(b.data for b in batches))
    index, time_index = indexes(base, batches, 4096)
    (d / f"{name}.index").write_bytes(b"".join(struct.pack(">ii", *e) for e in index))
    (d / f"{name}.timeindex").write_bytes(b"".join(struct.pack(">qi", *e) for e in time_index))
    if aborted:
        (d / f"{name}.txnindex").write_bytes(
            b"".join(struct.pack(">hqqqq", 0, *a) for a in aborted)
        )


def kv(
    keys: range | list[int], tag: bytes, size: int = 20
) -> list[tuple[bytes | None, bytes | None]]:
    return [
        (b"key-%d" % k, tag + b"-%d-" % k + bytes((k * 7 + i) % 251 for i in range(size)))
        for k in keys
    ]


def scenario_codecs(d: Path) -> dict:
    """Every codec, batches kept whole, rebuilt and emptied; headers, LogAppendTime, tombstones."""
    off, segs = 0, []
    for seg in range(3):
        bs = []
        for codec in range(5):
            recs = kv(range(codec * 3, codec * 3 + 6), b"s%d" % seg, 30 + 40 * codec)
            if seg == 1 and codec == 2:
                recs[1] = (recs[1][0], None)  # a tombstone, stamped by the cleaning
            b = batch(
                off,
                recs,
                T0 + seg * HOUR + codec,
                codec,
                headers=codec == 3,
                append_time=(seg == 2 and codec == 4),
            )
            bs.append(b)
            off = b.last_offset + 1
        segs.append(bs)
    big = [
        (b"big-%d" % (i % 50), bytes((i * 13 + j) % 256 for j in range(300))) for i in range(400)
    ]
    for codec in range(1, 5):
        b = batch(off, big, T0 + 4 * HOUR + codec, codec)
        segs[2].append(b)
        off = b.last_offset + 1
    segs.append([batch(off, kv(range(5), b"active"), T0 + 5 * HOUR)])
    for bs in segs:
        write_segment(d, bs)
    return {"configs": ["cleanup.policy=compact"], "now": T0 + 6 * HOUR}


def scenario_transactions(d: Path, open_txn: bool = False) -> dict:
    """Committed and aborted transactions of producers still active at ``now``: each producer's
    last batch kept empty (61 bytes), markers stamped, the cleaned .txnindex."""
    bs, aborted = [], []
    off = 0
    for round_ in range(4):
        for pid, epoch in ((1000, 0), (2000, 3)):
            b = batch(
                off,
                kv(range(round_, round_ + 4), b"t%d" % pid),
                T0 + off,
                pid=pid,
                epoch=epoch,
                seq=round_ * 4,
                txn=True,
            )
            bs.append(b)
            first = off
            off = b.last_offset + 1
            commit = (round_ + pid // 1000) % 2 == 0
            bs.append(marker(off, commit, pid, epoch, T0 + off))
            if not commit:
                aborted.append((pid, first, off, off + 1))
            off += 1
        b = batch(off, kv(range(3), b"plain"), T0 + off)
        bs.append(b)
        off = b.last_offset + 1
    if open_txn:  # a producer whose transaction no marker ends
        b = batch(off, kv(range(2, 5), b"open"), T0 + off, pid=3000, epoch=0, seq=0, txn=True)
        bs.append(b)
        off = b.last_offset + 1
    write_segment(d, bs[:8], [a for a in aborted if a[2] < bs[8].base_offset])
    write_segment(d, bs[8:], [a for a in aborted if a[2] >= bs[8].base_offset])
    write_segment(d, [batch(off, kv(range(2), b"active"), T0 + off)])
    return {"configs": ["cleanup.policy=compact"], "now": T0 + HOUR}


def scenario_clean_shutdown(d: Path) -> dict:
    """The transactions' partition with one transaction left open, after a clean shutdown
    with no producer snapshot: the broker starts from an empty producer state
    (UnifiedLog.rebuildProducerState), so no open transaction holds the last stable offset
    back and no producer's last batch is kept."""
    spec = scenario_transactions(d, open_txn=True)
    spec["clean_shutdown"] = True
    return spec


def scenario_horizons(d: Path) -> dict:
    """Tombstones and markers whose delete horizons have passed or lie ahead; a checkpoint."""
    now = T0 + 2 * DAY
    s0 = [
        batch(0, kv(range(6), b"a"), T0),
        batch(6, [(b"key-1", None), (b"key-2", None)], T0 + 1, horizon=now - 1),
        batch(8, [(b"key-3", None)], T0 + 2, horizon=now + 1000),
        batch(9, kv([4], b"t"), T0 + 3, pid=77, epoch=1, seq=0, txn=True),
        marker(10, True, 77, 1, T0 + 4, horizon=now - 5),
    ]
    s1 = [
        batch(11, [(b"key-4", None), (b"key-5", b"v")], T0 + 5),
        batch(13, kv(range(8, 12), b"b"), T0 + 6),
        batch(17, [(None, b"no key"), (b"key-8", b"x")], T0 + 7),
    ]
    write_segment(d, s0)
    write_segment(d, s1)
    write_segment(d, [batch(19, kv([1], b"active"), T0 + 8)])
    return {
        "configs": ["cleanup.policy=compact", "delete.retention.ms=3600000"],
        "now": now,
        "checkpoint": 6,
    }


def scenario_partial(d: Path) -> dict:
    """A key map too small for the dirty section: a partial pass and its checkpoint."""
    off = 0
    for seg in range(4):
        bs = []
        for _i in range(5):
            b = batch(off, kv(range(off % 50, off % 50 + 6), b"p%d" % seg), T0 + off)
            bs.append(b)
            off = b.last_offset + 1
        write_segment(d, bs)
    write_segment(d, [batch(off, kv(range(3), b"active"), T0 + off)])
    return {"configs": ["cleanup.policy=compact"], "now": T0 + HOUR, "dedupe": 24 * 40}


def scenario_groups(d: Path) -> dict:
    """Small segments grouped by internal.segment.bytes; min.compaction.lag.ms bounds the range."""
    off = 0
    for seg in range(8):
        b = batch(off, kv(range(seg % 3, seg % 3 + 4), b"g%d" % seg, 60), T0 + seg * HOUR)
        write_segment(d, [b])
        off = b.last_offset + 1
    write_segment(d, [batch(off, kv(range(2), b"active"), T0 + 9 * HOUR)])
    return {
        "configs": [
            "cleanup.policy=compact",
            "internal.segment.bytes=700",
            "min.compaction.lag.ms=7200000",
        ],
        "now": T0 + 8 * HOUR,
    }


BUILT = {
    "codecs": scenario_codecs,
    "transactions": scenario_transactions,
    "horizons": scenario_horizons,
    "partial": scenario_partial,
    "groups": scenario_groups,
    "clean-shutdown": scenario_clean_shutdown,
}
ORACLE = {  # fixtures/oracle partitions, cleaned as they are
    "oracle-plain": ("plain-0", T0 + DAY),
    "oracle-txn": ("txn-0", T0 + HOUR),
    "oracle-variety": ("variety-0", T0 + DAY),
    "oracle-gzip": ("gzip-0", T0 + DAY),
    "oracle-lz4": ("lz4-0", T0 + DAY),
    "oracle-legacyv1": ("legacyv1-0", T0 + DAY),
}


def classpath(version: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>k</groupId><artifactId>k</artifactId><version>1</version><dependencies>"
            f"<dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-storage</artifactId>"
            f"<version>{version}</version></dependency></dependencies></project>"
        )
        out = Path(tmp) / "cp.txt"
        subprocess.run(
            ["mvn", "-q", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={out}"],
            check=True,
        )
        return out.read_text().strip()


def set_mtimes(d: Path, when: int) -> dict[str, int]:
    for f in d.iterdir():
        os.utime(f, ns=(when * 1_000_000, when * 1_000_000))
    return {f.name: when for f in sorted(d.iterdir()) if f.suffix == ".log"}


def main() -> None:
    version = sys.argv[1] if len(sys.argv) > 1 else "4.4.0"
    only = set(sys.argv[2:])  # scenario names: only those made again
    cp = classpath(version)
    classes = Path(tempfile.mkdtemp())
    subprocess.run(
        [
            "javac",
            "-nowarn",
            "-cp",
            cp,
            "-d",
            str(classes),
            str(ROOT / "tests/realkafka/java/Cleaner.java"),
        ],
        check=True,
    )
    kdump = str(ROOT / ".venv/bin/kdump")
    todo = [(n, None) for n in BUILT] + [(n, o) for n, o in ORACLE.items()]
    for name, oracle in todo:
        if only and name not in only:
            continue
        here = OUT / name
        shutil.rmtree(here, ignore_errors=True)
        input_dir = here / "input"
        input_dir.mkdir(parents=True)
        if oracle is None:
            part = input_dir / f"{name}-0"
            part.mkdir()
            spec = BUILT[name](part)
        else:
            part = ROOT / "fixtures/oracle" / oracle[0]
            spec = {"configs": ["cleanup.policy=compact"], "now": oracle[1], "oracle": oracle[0]}
        work = Path(tempfile.mkdtemp()) / "logdir"
        work.mkdir()
        shutil.copytree(part, work / part.name, copy_function=shutil.copy)
        spec["mtimes"] = set_mtimes(work / part.name, MTIME)
        if spec.get("clean_shutdown"):
            (input_dir / CLEAN_SHUTDOWN).write_text("")
            (work / CLEAN_SHUTDOWN).write_text("")
        if "checkpoint" in spec:
            text = f"0\n1\n{part.name.rsplit('-', 1)[0]} 0 {spec['checkpoint']}\n"
            (input_dir / "cleaner-offset-checkpoint").write_text(text)
            (work / "cleaner-offset-checkpoint").write_text(text)
        cfg = [a for c in spec["configs"] for a in ("--config", c)]
        dry = subprocess.run(
            [
                kdump,
                "compact",
                str(work / part.name),
                "--dry-run",
                "--format",
                "json",
                "--now",
                str(spec["now"]),
                *cfg,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        spec["high_watermark"] = json.loads(dry.stdout)["partition"]["high_watermark"]
        spec.setdefault("dedupe", 128 * 1024 * 1024)
        run = subprocess.run(
            [
                "java",
                "-cp",
                f"{cp}:{classes}",
                "Cleaner",
                str(work),
                part.name,
                str(spec["now"]),
                str(spec["high_watermark"]),
                str(spec["dedupe"]),
                "1",
                "1",
                *spec["configs"],
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        spec["kafka"] = run.stdout.strip()
        spec["kafka_version"] = version
        # the active segment's preallocated indexes (10 MiB of zeros each) are not kept
        active = max(f.stem for f in (work / part.name).glob("*.log"))
        spec["kafka_files"] = sorted(f.name for f in (work / part.name).iterdir())
        # a checkout does not keep mtimes, and the cleaner sets them (setLastModified)
        spec["kafka_mtimes"] = {
            f.name: f.stat().st_mtime_ns // 1_000_000
            for f in sorted((work / part.name).iterdir())
            if not f.name.endswith(".deleted")
        }
        shutil.copytree(
            work,
            here / "kafka",
            copy_function=shutil.copy2,
            ignore=lambda _d, names, active=active: [
                n for n in names if n in (f"{active}.index", f"{active}.timeindex")
            ],
        )
        (here / "scenario.json").write_text(json.dumps(spec, indent=1) + "\n")
        print(name, spec["kafka"])


if __name__ == "__main__":
    main()
