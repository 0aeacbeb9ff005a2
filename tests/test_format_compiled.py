"""The compiled message readers (kdump.format.compiled) against the reference reader
(kdump.format.messages, through read_framed_reference): the same fields, or the same error, for
every metadata record the fixtures hold, every record kind encoded from Kafka's JSON specs by
tests/metadata_codec.py, and those bytes cut short or changed."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metadata_codec import encode, metadata_specs

from kdump.format.compiled import NotCompiled, compiled_reader
from kdump.format.internal import read_framed, read_framed_reference
from kdump.format.schemas.metadata import METADATA_RECORD_TYPES
from kdump.storage.local import open_log_file

UUID = "S2kwl2mvSCasFtxUPkayPw"


def outcome(read: Any, value: bytes) -> Any:
    try:
        spec, version, data = read(value, METADATA_RECORD_TYPES)
    except Exception as e:  # the error's type and Kafka's words
        return (type(e).__name__, str(e))
    return (spec.name, version, data)


def compiled(value: bytes) -> Any:
    """What the compiled reader of the value's frame reads, or None where it gives up."""
    spec = METADATA_RECORD_TYPES.get(value[1])
    reader = None if spec is None else compiled_reader(spec, value[2])
    if reader is None:
        return None
    try:
        data, end = reader(value, 3)
    except NotCompiled:
        return None
    return (spec.name, value[2], data) if end == len(value) else None


def fixture_values() -> list[bytes]:
    values = []
    for path in sorted(FIXTURES.rglob("__cluster_metadata-0/*.log")):
        log = open_log_file(path)
        for batch in log.batches():
            if not batch.is_control:
                values.extend(r.value for r in log.records(batch) if r.value is not None)
    return values


SAMPLES: dict[str, tuple[int, dict[str, Any]]] = {
    "PartitionRecord": (
        2,
        {
            "partitionId": 3,
            "topicId": UUID,
            "replicas": [1, 2, 3],
            "isr": [1, 2],
            "leader": 1,
            "leaderRecoveryState": 1,
            "leaderEpoch": 4,
            "partitionEpoch": 9,
            "directories": [UUID, "AAAAAAAAAAAAAAAAAAAAAA", UUID],
            "eligibleLeaderReplicas": [3],
            "lastKnownElr": [],
        },
    ),
    "PartitionChangeRecord": (1, {"partitionId": 0, "topicId": UUID, "isr": [2], "leader": -1}),
    "RegisterBrokerRecord": (
        3,
        {
            "brokerId": 2,
            "incarnationId": UUID,
            "brokerEpoch": 10,
            "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
            "features": [
                {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 20}
            ],
            "rack": None,
            "fenced": True,
            "inControlledShutdown": False,
            "logDirs": [UUID],
        },
    ),
    "DelegationTokenRecord": (
        0,
        {
            "owner": "User:a",
            "requester": "User:a",
            "renewers": ["User:b", "User:c"],
            "tokenId": "t",
        },
    ),
    "UserScramCredentialRecord": (
        0,
        {
            "name": "alice",
            "mechanism": 1,
            "salt": "c2FsdA==",
            "storedKey": "a2V5",
            "serverKey": "c2s=",
            "iterations": 4096,
        },
    ),
    "ClientQuotaRecord": (
        0,
        {
            "entity": [{"entityType": "user", "entityName": None}],
            "key": "producer_byte_rate",
            "value": 1024.0,
            "remove": False,
        },
    ),
    "ConfigRecord": (
        0,
        {"resourceType": 2, "resourceName": "orders", "name": "segment.bytes", "value": None},
    ),
}


def encoded_samples() -> list[bytes]:
    out = [encode(name, data, version) for name, (version, data) in SAMPLES.items()]
    # every record kind at every version, with its defaults
    for name, spec in metadata_specs().items():
        low, _, high = spec["validVersions"].partition("-")
        out.extend(encode(name, {}, v) for v in range(int(low), int(high or low) + 1))
    return out


@pytest.mark.parametrize("source", ["fixtures", "encoded"])
def test_compiled_reads_as_the_reference(source: str) -> None:
    values = fixture_values() if source == "fixtures" else encoded_samples()
    assert len(values) > 20
    for value in values:
        got = outcome(read_framed, value)
        assert got == outcome(read_framed_reference, value)
        assert compiled(value) in (got, None)
        # every genuine and every encoded record reads whole (fixtures/internal holds records
        # newer than kdump's schemas on purpose)
        assert len(got) == 3 or source == "fixtures", got
        assert compiled(value) is not None or len(got) == 2


def test_every_metadata_version_is_compiled() -> None:
    for spec in METADATA_RECORD_TYPES.values():
        for version in range(spec.valid_versions.lowest, spec.valid_versions.highest + 1):
            assert compiled_reader(spec, version) is not None, (spec.name, version)


def test_a_compiled_reader_gives_up_where_the_bytes_end() -> None:
    value = encode("PartitionRecord", *reversed(SAMPLES["PartitionRecord"]))
    reader = compiled_reader(METADATA_RECORD_TYPES[3], 2)
    assert reader is not None
    with pytest.raises(NotCompiled):
        reader(value[:-4], 3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(SAMPLES)),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
    st.integers(0, 400),
)
def test_changed_bytes_read_as_the_reference(
    name: str, changes: list[tuple[int, int]], cut: int
) -> None:
    version, data = SAMPLES[name]
    value = bytearray(encode(name, data, version))
    for at, byte in changes:
        if 3 <= at < len(value):  # the frame itself: read_framed's own checks
            value[at] = byte
    mutated = bytes(value[: max(4, len(value) - cut)])
    expected = outcome(read_framed_reference, mutated)
    assert outcome(read_framed, mutated) == expected
    assert compiled(mutated) in (expected, None)
