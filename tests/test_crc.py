"""The two CRC-32C paths of kdump.crc (the hardware ``crc32c`` package and the ``crcmod``
fallback) give the same values on the same bytes, and both give the published values."""

from __future__ import annotations

import mmap
import random

import pytest
from conftest import ORACLE

from kdump import crc
from kdump.format.batch import RecordBatch
from kdump.format.layout import ATTRIBUTES_OFFSET
from kdump.format.walk import iter_batches

IMPLEMENTATIONS = {
    "crc32c": crc.crc32c,
    "package": crc.python_crc32c(),
    "crcmod": crc.crc32c_crcmod,
}

# RFC 3720 (iSCSI) appendix B.4 test vectors, plus the usual check value of CRC catalogues.
KNOWN_CRC32C = [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]


def test_hardware_package_is_used_when_importable() -> None:
    crc32c_package = pytest.importorskip("crc32c")
    assert crc.python_crc32c() is crc32c_package.crc32c


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
@pytest.mark.parametrize(("data", "expected"), KNOWN_CRC32C)
def test_known_crc32c_vectors(name: str, data: bytes, expected: int) -> None:
    assert IMPLEMENTATIONS[name](data) == expected


def test_crc32_is_java_util_zip_crc32() -> None:
    assert crc.crc32(b"123456789") == 0xCBF43926
    assert crc.crc32(b"") == 0
    assert crc.crc32(b"\xff" * 4) == 0xFFFFFFFF


@pytest.mark.parametrize("seed", range(8))
def test_both_paths_agree_on_random_bytes(seed: int) -> None:
    rng = random.Random(seed)
    for size in (1, 2, 3, 7, 8, 15, 16, 63, 64, 255, 4096, rng.randrange(1, 1 << 16)):
        data = rng.randbytes(size)
        assert crc.crc32c(data) == crc.crc32c_crcmod(data), (seed, size)


def test_both_paths_accept_every_buffer_kdump_passes() -> None:
    data = random.Random(42).randbytes(1000)
    expected = crc.crc32c_crcmod(data)
    views: list[crc.Buffer] = [bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]]
    for view in views:
        assert crc.crc32c(view) == expected
        assert crc.crc32c_crcmod(view) == expected


def test_both_paths_validate_every_kafka_written_batch() -> None:
    """CRC-32C over [attributes, end) of every v2 batch Kafka wrote equals its stored crc."""
    checked = 0
    for path in sorted(ORACLE.glob("*/*.log")):
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            for batch in iter_batches(buf, str(path)):
                if not isinstance(batch, RecordBatch):
                    continue
                covered = memoryview(buf)[batch.position + ATTRIBUTES_OFFSET : batch.end]
                assert crc.crc32c(covered) == batch.crc, (path, batch.position)
                assert crc.crc32c_crcmod(covered) == batch.crc, (path, batch.position)
                covered.release()
                checked += 1
    assert checked > 100
