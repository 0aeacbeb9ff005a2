"""Every batch, record, index entry, lookup, sanity check, aborted transaction and producer
snapshot entry of ../shared/oracle (copied to fixtures/oracle) parses to what Kafka's own
classes reported in manifest.json."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import (
    ORACLE,
    offset_index_at,
    oracle_files,
    oracle_manifest,
    time_index_at,
    txn_index_at,
)

from kdump.format.compression import codec_name
from kdump.format.layout import TIMESTAMP_TYPE_NAMES
from kdump.format.records import control_record_key, end_transaction_marker
from kdump.format.snapshot import parse_producer_snapshot
from kdump.storage.local import map_file, open_log_file
from kdump.storage.records import FileRecords


def expected(directory: str, name: str) -> dict[str, Any]:
    return oracle_manifest()["files"][directory][name]


def batch_fields(log: FileRecords, b: Any) -> dict[str, Any]:
    return {
        "position": b.position,
        "baseOffset": b.base_offset,
        "lastOffset": b.last_offset,
        "count": b.count_or_null,
        "magic": b.magic,
        "compresscodec": codec_name(b.compression),
        "crc": b.crc,
        "isValid": log.is_valid(b),
        "maxTimestamp": b.max_timestamp,
        "timestampType": TIMESTAMP_TYPE_NAMES[b.timestamp_type],
        "producerId": b.producer_id,
        "producerEpoch": b.producer_epoch,
        "baseSequence": b.base_sequence,
        "lastSequence": b.last_sequence,
        "isTransactional": b.is_transactional,
        "isControl": b.is_control,
        "partitionLeaderEpoch": b.partition_leader_epoch,
        "sizeInBytes": b.size,
        "nextOffset": b.next_offset,
    }


def record_fields(r: Any, legacy: bool, control: bool) -> dict[str, Any]:
    got = {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "keySize": r.key_size,
        "valueSize": r.value_size,
        "sequence": r.sequence,
        "headerKeys": r.header_keys,
        "headers": [
            {
                "key": h.key,
                "valueSize": -1 if h.value is None else len(h.value),
            }
            for h in r.headers
        ],
    }
    if legacy:
        got.update(isValid=r.is_valid, crc=r.crc, attributes=r.attributes)
    if control:
        key, marker = control_record_key(r), end_transaction_marker(r)
        got["controlType"] = key.type_name if key else None
        got["coordinatorEpoch"] = marker.coordinator_epoch if marker else None
    return got


def sha256(data: bytes | None) -> str | None:
    import hashlib

    return None if data is None else hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(("directory", "name"), oracle_files(".log"))
def test_log_batches_and_records_match_kafka(directory: str, name: str) -> None:
    exp = expected(directory, name)
    log = open_log_file(ORACLE / directory / name)
    batches = list(log.batches())
    assert log.size == exp["sizeInBytes"]
    assert len(batches) == exp["batchCount"]
    for b, eb in zip(batches, exp["batches"], strict=True):
        want = {k: eb[k] for k in batch_fields(log, b)}
        assert batch_fields(log, b) == want
        if "records" not in eb:
            continue
        records = list(log.records(b))
        assert len(records) == len(eb["records"])
        for r, er in zip(records, eb["records"], strict=True):
            got = record_fields(r, b.magic < 2, b.is_control)
            er_headers = [{"key": h["key"], "valueSize": h["valueSize"]} for h in er["headers"]]
            assert got == {**{k: er[k] for k in got if k != "headers"}, "headers": er_headers}
            assert sha256(r.key) == er["keySha256"]
            assert sha256(r.value) == er["valueSha256"]


@pytest.mark.parametrize(("directory", "name"), oracle_files(".index"))
def test_offset_index_matches_kafka(directory: str, name: str) -> None:
    exp = expected(directory, name)
    index = offset_index_at(ORACLE / directory / name)
    index.path = f"{directory}/{name}"
    assert index.file_size == exp["fileSize"]
    assert index.entries == exp["entries"] == exp["maxEntries"]
    assert index.last_offset == exp["lastOffset"]
    assert index.entries_before_first_zero_entry() == exp["entriesBeforeFirstZeroEntry"]
    assert [list(e) for e in list(index)[:5000]] == exp["entryList"]
    check = index.sanity_check()
    assert ("ok" if check is None else f"CorruptIndexException: {check}") == exp["sanityCheck"]
    for target, answer in exp["lookup"].items():
        assert list(index.lookup(int(target))) == answer, target


@pytest.mark.parametrize(("directory", "name"), oracle_files(".timeindex"))
def test_time_index_matches_kafka(directory: str, name: str) -> None:
    exp = expected(directory, name)
    index = time_index_at(ORACLE / directory / name)
    index.path = f"{directory}/{name}"
    assert index.file_size == exp["fileSize"]
    assert index.entries == exp["entries"] == exp["maxEntries"]
    assert list(index.last_entry) == exp["lastEntry"]
    assert index.entries_before_first_zero_entry() == exp["entriesBeforeFirstZeroEntry"]
    assert [list(e) for e in list(index)[:5000]] == exp["entryList"]
    check = index.sanity_check()
    assert ("ok" if check is None else f"CorruptIndexException: {check}") == exp["sanityCheck"]
    for target, answer in exp["lookup"].items():
        assert list(index.lookup(int(target))) == answer, target


@pytest.mark.parametrize(("directory", "name"), oracle_files(".txnindex"))
def test_txn_index_matches_kafka(directory: str, name: str) -> None:
    exp = expected(directory, name)
    index = txn_index_at(ORACLE / directory / name)
    got = [
        {
            "version": t.version,
            "producerId": t.producer_id,
            "firstOffset": t.first_offset,
            "lastOffset": t.last_offset,
            "lastStableOffset": t.last_stable_offset,
        }
        for t in index
    ]
    assert got == exp["abortedTxns"]
    assert index.file_size == exp["fileSize"]
    assert (index.sanity_check() is None) == (exp["sanityCheck"] == "ok")


@pytest.mark.parametrize(("directory", "name"), oracle_files(".snapshot"))
def test_producer_snapshot_matches_kafka(directory: str, name: str) -> None:
    exp = expected(directory, name)
    snapshot = parse_producer_snapshot(map_file(ORACLE / directory / name))
    assert snapshot.is_valid
    got = []
    for e in snapshot.producers:
        bm = e.batch_metadata
        got.append(
            {
                "producerId": e.producer_id,
                "producerEpoch": e.producer_epoch,
                "coordinatorEpoch": e.coordinator_epoch,
                "lastTimestamp": e.last_timestamp,
                "currentTxnFirstOffset": e.open_transaction,
                "batchMetadata": []
                if bm is None
                else [
                    {
                        "firstSeq": bm.first_seq,
                        "lastSeq": bm.last_seq,
                        "firstOffset": bm.first_offset,
                        "lastOffset": bm.last_offset,
                        "offsetDelta": bm.offset_delta,
                        "timestamp": bm.timestamp,
                    }
                ],
            }
        )
    assert got == exp["producers"]
