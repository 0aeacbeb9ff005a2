"""``kdump replicas`` on a compacted partition's replicas (kdump.replica_content): a replica Kafka
4.4's cleaner cleaned (fixtures/compaction/*/kafka) against the same partition uncleaned (its
input) differs in bytes by right and must compare equal; the four failure kinds of the June
2026 disclosure, staged on such pairs at the byte level (a batch cut out, a marker's type
flipped, a .txnindex entry removed, CRCs fixed), are each named with both sides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cleanedcopies import NAMES, cut_batch, flip_marker, input_copy, kafka_copy, splice
from clirun import run_kdump

CONTENT = {
    "REPLICA_KEY_DIFFERS",
    "REPLICA_ABORTED_VISIBLE",
    "REPLICA_COMMITTED_MISSING",
    "REPLICA_MARKER_MISSING",
}


def _pair(name: str, tmp: Path) -> tuple[Path, Path]:
    """(the cleaned replica, the uncleaned one) of scenario ``name``."""
    _, cleaned = kafka_copy(name, tmp / "cleaned")
    _, uncleaned = input_copy(name, tmp / "uncleaned")
    return cleaned, uncleaned


def _replicas(leader: Path, follower: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    ran = run_kdump(["replicas", str(leader), str(follower), "--leader", str(leader), *extra,
                     "--format", "json"])  # fmt: skip
    assert ran.exit_code in (0, 1, 2), ran.stderr
    return ran.exit_code, json.loads(ran.stdout)


def _content(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in document["findings"] if f["code"] in CONTENT]


OPEN_TRANSACTION_CLEANED = "clean-shutdown"
"""Kafka cleaned this one from an empty producer state (a clean shutdown, no snapshot): to its
cleaner the transaction left open at offset 52 is data, whose keys supersede older committed
values; to the uncleaned replica it is still open (test below)."""


@pytest.mark.parametrize("name", [n for n in NAMES if n != OPEN_TRANSACTION_CLEANED])
def test_a_replica_kafka_cleaned_reads_as_the_uncleaned_one(name: str, tmp_path: Path) -> None:
    cleaned, uncleaned = _pair(name, tmp_path)
    for leader, follower in ((cleaned, uncleaned), (uncleaned, cleaned)):
        code, document = _replicas(leader, follower)
        (f,) = document["followers"]
        assert f["content"] is not None, "compared by bytes only"
        assert f["content"]["differing_keys"] == 0
        assert f["differing_batches"] == 0 and f["batches_compared_from"] > 0
        assert document["findings"] == [] and code == 0


def test_an_open_transaction_kafka_cleaned_as_data(tmp_path: Path) -> None:
    """After a clean shutdown without a producer snapshot the broker starts from an empty
    producer state (UnifiedLog.rebuildProducerState), so its cleaner takes the open
    transaction's records (keys 2-4, offsets 52-54) for data and drops the older values of
    those keys: the committed ones at offsets 39-40 (a transaction) and 51. The uncleaned
    replica, its producer state replayed, still holds them as the latest committed values:
    should the transaction abort, the cleaned replica has lost them. Both kinds are named."""
    cleaned, uncleaned = _pair(OPEN_TRANSACTION_CLEANED, tmp_path)
    code, document = _replicas(cleaned, uncleaned)
    found = {(f["code"], f["offset"]) for f in _content(document)}
    assert found == {("REPLICA_KEY_DIFFERS", 51), ("REPLICA_COMMITTED_MISSING", 39)}
    assert document["followers"][0]["content"]["differing_keys"] == 3 and code == 2


def test_deleted_data_back_on_one_replica(tmp_path: Path) -> None:
    """The uncleaned replica loses key-3's tombstone (offset 8): its older value is back there,
    while the cleaned one holds the deletion."""
    cleaned, uncleaned = _pair("horizons", tmp_path)
    cut_batch(uncleaned, 8)
    code, document = _replicas(cleaned, uncleaned)
    (found,) = _content(document)
    assert found["code"] == "REPLICA_KEY_DIFFERS" and found["path"] == str(uncleaned)
    assert "deleted at offset 8 on the leader" in found["message"]
    assert (
        "value" in found["message"] and "deleted data is back on the follower" in found["message"]
    )
    assert str(cleaned) in found["message"] and code == 2
    assert document["followers"][0]["content"]["differing_keys"] == 1


def test_an_aborted_transaction_served_where_no_txnindex_lists_it(tmp_path: Path) -> None:
    """The uncleaned replica still holds producer 1000's records aborted at offset 4; without
    its .txnindex entry read_committed consumers read them there, not on the cleaned one."""
    cleaned, uncleaned = _pair("transactions", tmp_path)
    splice(uncleaned / "00000000000000000000.txnindex", 0, 34)  # that entry
    code, document = _replicas(cleaned, uncleaned)
    (found,) = _content(document)
    assert found["code"] == "REPLICA_ABORTED_VISIBLE" and found["offset"] == 4
    assert found["path"] == str(uncleaned) and str(cleaned) in found["message"]
    assert code == 2


def test_an_aborted_transaction_committed_on_the_follower(tmp_path: Path) -> None:
    cleaned, uncleaned = _pair("transactions", tmp_path)
    flip_marker(uncleaned, 4)
    (found,) = _content(_replicas(cleaned, uncleaned)[1])
    assert found["code"] == "REPLICA_ABORTED_VISIBLE" and found["offset"] == 4
    assert (
        "ABORT on the leader" in found["message"] and "COMMIT on the follower" in found["message"]
    )


def test_a_committed_transaction_aborted_on_the_follower(tmp_path: Path) -> None:
    cleaned, uncleaned = _pair("transactions", tmp_path)
    flip_marker(uncleaned, 43)
    (found,) = _content(_replicas(cleaned, uncleaned)[1])
    assert found["code"] == "REPLICA_COMMITTED_MISSING" and found["offset"] == 43
    assert found["path"] == str(uncleaned)


def test_a_committed_transactions_records_missing_on_one(tmp_path: Path) -> None:
    """Producer 1000's transaction committed at 43 holds the latest values of key-3..key-6:
    the cleaned replica loses its batch (as if its cleaner took the transaction for aborted)."""
    cleaned, uncleaned = _pair("transactions", tmp_path)
    cut_batch(cleaned, 39)
    (found,) = _content(_replicas(uncleaned, cleaned)[1])
    assert found["code"] == "REPLICA_COMMITTED_MISSING" and found["path"] == str(cleaned)
    assert found["message"].startswith("4 record(s) of the transaction committed at offset 43")
    assert found["offset"] == 39


def test_a_marker_missing_where_its_batches_are(tmp_path: Path) -> None:
    cleaned, uncleaned = _pair("transactions", tmp_path)
    cut_batch(cleaned, 43)  # the COMMIT of the batch at 39..42, which stays
    code, document = _replicas(uncleaned, cleaned)
    (found,) = _content(document)
    assert found["code"] == "REPLICA_MARKER_MISSING" and found["path"] == str(cleaned)
    assert "offsets 39..42" in found["message"] and "stops at 39" in found["message"]
    assert code == 2


def test_a_marker_its_cleaner_dropped_with_its_batches_is_no_difference(tmp_path: Path) -> None:
    """Producer 2000's COMMIT at 9 ends a transaction whose batches the cleaning removed (its
    keys written again later): a later cleaning past its horizon drops the marker too."""
    cleaned, uncleaned = _pair("transactions", tmp_path)
    cut_batch(cleaned, 9)
    code, document = _replicas(uncleaned, cleaned)
    assert _content(document) == [] and code == 0


def test_the_comparison_says_where_its_memory_ran_out(tmp_path: Path) -> None:
    cleaned, uncleaned = _pair("codecs", tmp_path)
    _, document = _replicas(cleaned, uncleaned, "--compaction-key-memory", "4096")
    limited = [f for f in document["findings"] if f["code"] == "REPLICA_CONTENT_LIMITED"]
    assert limited and all(f["severity"] == "info" for f in limited)
    assert _content(document) == []


def test_text_output_names_the_content_comparison(tmp_path: Path) -> None:
    cleaned, uncleaned = _pair("codecs", tmp_path)
    ran = run_kdump(["replicas", str(cleaned), str(uncleaned), "--leader", str(cleaned)])
    assert ran.exit_code == 0, ran.stderr
    assert "compacted: compared by content over offsets 0..1694" in ran.stdout
    assert "68 keys on the leader, 68 on the follower, 0 differing" in ran.stdout
