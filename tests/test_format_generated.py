"""Segments written by an independent encoder (kafka-python, scripts/make_fixtures.py) parse
back to exactly what the encoder was asked to write (fixtures/generated/expected.json)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from conftest import GENERATED

from kdump.format.compression import codec_name
from kdump.format.layout import TIMESTAMP_TYPE_NAMES
from kdump.storage.local import open_log_file


@cache
def expected_logs() -> dict[str, Any]:
    return json.loads((GENERATED / "expected.json").read_text())["logs"]


def hexed(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


@pytest.mark.parametrize("name", sorted(expected_logs()))
def test_generated_log_parses_to_encoder_input(name: str) -> None:
    exp = expected_logs()[name]
    log = open_log_file(GENERATED / name)
    batches = list(log.batches())
    assert len(batches) == len(exp["batches"])
    end = batches[-1].end if batches else 0
    tail = exp["truncated_tail"]
    assert log.size - end == (0 if tail is None else tail["length"])
    corrupt = exp["corruption"]
    for i, (b, eb) in enumerate(zip(batches, exp["batches"], strict=True)):
        got = {
            "position": b.position,
            "base_offset": b.base_offset,
            "last_offset": b.last_offset,
            "magic": b.magic,
            "compression": codec_name(b.compression),
            "crc": b.crc,
            "timestamp_type": TIMESTAMP_TYPE_NAMES[b.timestamp_type],
            "max_timestamp": b.max_timestamp,
            "producer_id": b.producer_id,
            "producer_epoch": b.producer_epoch,
            "base_sequence": b.base_sequence,
            "is_transactional": b.is_transactional,
            "is_control": b.is_control,
            "partition_leader_epoch": b.partition_leader_epoch,
            "size": b.size,
        }
        assert got == {k: eb[k] for k in got}
        assert log.is_valid(b) == (corrupt is None or corrupt["batch_index"] != i)
        records = list(log.records(b))
        assert [
            {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": hexed(r.key),
                "value": hexed(r.value),
                "headers": [[h.key, hexed(h.value)] for h in r.headers],
                "sequence": r.sequence,
                "crc": r.crc,
            }
            for r in records
        ] == [
            {
                "offset": er["offset"],
                "timestamp": er["timestamp"],
                "key": er["key"],
                "value": er["value"],
                "headers": er["headers"],
                "sequence": er.get("sequence", -1),
                "crc": er.get("crc"),
            }
            for er in eb["records"]
        ]
