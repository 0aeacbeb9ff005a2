"""Make fixtures/realkafka/: a partition a real Kafka broker wrote and stopped cleanly, and what
Kafka's own LogManager does when it loads damaged copies of it (expected.json).

Run from the repository with the test venv (Java 17 and Maven on PATH):

    .venv/bin/python scripts/make_realkafka_fixtures.py [VERSION]

It starts one KRaft broker with the test harness (tests/realkafka), writes the topic
``orders`` (one partition, a segment every 16 index entries: idempotent batches, transactions
with aborts), stops the broker, and copies the log dir's checkpoints, its clean shutdown marker,
``meta.properties`` and ``orders-0`` into fixtures/realkafka/clean-stop/. Then, for each case of
``CASES``, it damages a copy as tests/realkafka/damage.py does (clean: the marker kept; crash:
the marker removed and, where the case says, the recovery point set to 0), loads it with
``load_logs`` (LogManager.loadLogs, no broker) and records Kafka's answer: the log's facts, the
segments it recovered and deleted, and the producer snapshots left. tests/test_broker_load.py
checks kdump's ``broker_load`` against those answers without Java.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from realkafka import Cluster, create_topic, load_logs, produce, release  # noqa: E402
from realkafka.damage import (  # noqa: E402
    deleted_index,
    flipped_middle,
    no_snapshots,
    torn_at_last_index_entry,
    torn_tail,
    write_recovery_points,
    zero_tail,
)

TOPIC, CONFIG = "orders", {"segment.index.bytes": "128", "index.interval.bytes": "1024"}
OUT = REPO / "fixtures" / "realkafka"
KEPT = (
    ".kafka_cleanshutdown",
    "meta.properties",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
)
CASES = {
    # name: (damage, the clean shutdown marker kept, recovery point at 0)
    "torn-tail-clean": (torn_tail, True, False),
    "torn-tail-crash": (torn_tail, False, False),
    "torn-indexed-tail-clean": (torn_at_last_index_entry, True, False),
    "flipped-middle-clean": (flipped_middle, True, False),
    "flipped-middle-crash-below-recovery-point": (flipped_middle, False, False),
    "flipped-middle-crash-recovered": (flipped_middle, False, True),
    "deleted-index-clean": (deleted_index, True, False),
    "no-snapshots-clean": (no_snapshots, True, False),
    "no-snapshots-crash": (no_snapshots, False, False),
    "zero-tail-clean": (zero_tail, True, False),
}


def main(version: str) -> None:
    kafka = release(version)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cluster = Cluster(kafka, work / "broker")
        cluster.start()
        broker = cluster.brokers[0]
        try:
            create_topic(broker.bootstrap, TOPIC, 1, config=CONFIG)
            produce(
                kafka,
                broker.bootstrap,
                {"topic": TOPIC, "records": 250, "value_bytes": 200, "idempotent": True,
                 "linger_ms": 0, "batch_size": 1024, "keys": 5},
                {"topic": TOPIC, "records": 60, "value_bytes": 150, "transactional_id": "orders",
                 "transaction_records": 10, "abort_every": 2, "compression": "snappy"},
                {"topic": TOPIC, "records": 100, "value_bytes": 300, "idempotent": True,
                 "linger_ms": 0, "batch_size": 1024},
                log=work / "clients.log",
            )  # fmt: skip
            broker.stop()
        finally:
            cluster.kill()
        shutil.rmtree(OUT / "clean-stop", ignore_errors=True)
        (OUT / "clean-stop").mkdir(parents=True)
        for name in KEPT:
            shutil.copy(broker.log_dir / name, OUT / "clean-stop" / name)
        shutil.copytree(broker.log_dir / f"{TOPIC}-0", OUT / "clean-stop" / f"{TOPIC}-0")
        expected = {}
        for case, (damage, clean, at_zero) in CASES.items():
            copy = work / case
            shutil.copytree(broker.log_dir, copy)
            damage(copy / f"{TOPIC}-0")
            if not clean:
                (copy / ".kafka_cleanshutdown").unlink()
            if at_zero:
                write_recovery_points(copy, {f"{TOPIC}-0": 0})
            loaded = load_logs(kafka, broker.properties_file, copy, {TOPIC: CONFIG}, work / "l")
            if loaded.error is not None:
                expected[case] = {"error": loaded.error.replace(str(copy) + "/", "")}
                continue
            facts = loaded.logs[f"{TOPIC}-0"]
            lines = loaded.report.logs[f"{TOPIC}-0"]
            expected[case] = {
                "log_end_offset": facts["log_end_offset"],
                "segments": facts["segments"],
                "active_segment": facts["active_segment"],
                "bytes": facts["size"],
                "recovered_segments": sorted(
                    set(lines.recovered_segments)
                    | {int(Path(f).name[:20]) for f in lines.index_rebuilt}
                ),
                "deleted_segments": lines.deleted_segments,
                "snapshots": sorted(
                    int(p.name[:20]) for p in (copy / f"{TOPIC}-0").glob("*.snapshot")
                ),
            }
    (OUT / "expected.json").write_text(
        json.dumps({"kafka": version, "cases": expected}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "4.4.0")
