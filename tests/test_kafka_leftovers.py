"""What a healthy broker leaves in its log dir when it is stopped cleanly soon after its own
work (issue 44.10): the segments its cleaner replaced, renamed ``.deleted`` and due to go
``file.delete.delay.ms`` later, and a deleted topic's ``-delete`` directory, due to go
``log.segment.delete.delay.ms`` (60 s) later. ``kdump verify`` of that log dir says each
``.deleted`` file is the broker's own (info, nothing to fix) and warns of nothing in these
partitions; the broker, started again, deletes the ``.deleted`` files itself.

A compacted topic with 1 MiB segments and keys written over and over, so that the cleaner
(``log.cleaner.backoff.ms``, 15 s between its looks) replaces its closed segments; its
``file.delete.delay.ms`` an hour, so the ``.deleted`` files are there when the broker stops
whatever the machine's speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_kdump
from realkafka import Broker, admin, client_log, create_topic, produce, wait_until

pytestmark = pytest.mark.kafka

TOPIC = "leftovers-compacted"
GONE = "leftovers-deleted"
CLEANED_WITHIN = 120.0
"""Seconds the cleaner may take (it looks every 15 s)."""


def test_a_clean_stop_after_a_cleaning_leaves_only_info(
    kafka_broker: Broker, tmp_path: Path
) -> None:
    broker = kafka_broker
    create_topic(
        broker.bootstrap,
        TOPIC,
        1,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "1048576",
            "min.cleanable.dirty.ratio": "0.01",
            "file.delete.delay.ms": "3600000",
        },
    )
    create_topic(broker.bootstrap, GONE, 2)
    produce(
        broker.release,
        broker.bootstrap,
        {"topic": TOPIC, "records": 3000, "value_bytes": 900, "keys": 40, "tombstone_every": 9},
        {"topic": TOPIC, "records": 1500, "value_bytes": 900, "keys": 30},
        {"topic": GONE, "records": 200, "value_bytes": 100},
        log=client_log(tmp_path),
    )
    partition = broker.partition_dir(TOPIC, 0)

    def cleaned() -> bool:
        return broker.cleaned_to(TOPIC, 0) == broker.active_base(TOPIC, 0) and any(
            partition.glob("*.deleted")
        )

    wait_until(cleaned, "the cleaner to clean up to the active segment", CLEANED_WITHIN)
    with admin(broker.bootstrap) as client:
        client.delete_topics([GONE])

    def marked() -> list[Path]:
        return sorted(broker.log_dir.glob(f"{GONE}-*-delete"))

    wait_until(lambda: len(marked()) == 2, "the deleted topic's directories renamed -delete")
    broker.stop()  # a clean stop, well within the minute of the cleaning and of the delete

    deleted = sorted(p.name for p in partition.glob("*.deleted"))
    assert any(n.endswith(".log.deleted") for n in deleted), deleted
    gone = marked()
    assert len(gone) == 2, "the broker removed the -delete directories before it stopped"
    verified = run_kdump(["verify", str(broker.log_dir), "--format", "json"])
    assert verified.exit_code in (0, 1, 2), verified.stderr  # other scenarios' damage: 2
    document = json.loads(verified.stdout)
    ours = [
        f
        for f in document["findings"]
        if any(part.startswith((TOPIC, GONE)) for part in Path(f["path"]).parts)
    ]
    left = {Path(f["path"]).name: f for f in ours if f["code"] == "PARTITION_LEFTOVER_FILE"}
    assert sorted(left) == deleted
    assert all(f["severity"] == "info" and f["fix"] is None for f in left.values()), left
    warned = [f for f in ours if f["severity"] != "info"]
    assert warned == [], warned
    # the text report does not point at kdump recover for them
    ran = run_kdump(["verify", str(partition)])
    lines = [line for line in ran.stdout.splitlines() if "PARTITION_LEFTOVER_FILE" in line]
    assert len(lines) == len(deleted) and all(line.startswith("info ") for line in lines)
    assert "fix:" not in ran.stdout and ran.exit_code == 0, ran.stdout

    broker.start()  # the broker deletes them itself at its start
    assert not any(partition.glob("*.deleted"))
