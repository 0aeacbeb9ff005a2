"""Snappy, byte for byte: the blocks kdump compact re-compresses a snappy batch's records into
(kdump.format.compression, through the system's Google snappy) against the blocks Kafka's own
snappy-java (the release's, the one the broker's cleaner calls) makes of the same bytes, on a
corpus of text, binary, repetitive and mixed blocks of every size up to the 32 KiB Kafka's
SnappyOutputStream cuts records into."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from realkafka import Release

from kdump.format.compression import google_snappy

pytestmark = pytest.mark.kafka

WORDS = [
    b"key",
    b"value",
    b"kafka",
    b"record",
    b"compacted",
    b"a",
    b"the",
    b"xxxxxxx",
    b"0123456789",
]


def corpus(rng: random.Random) -> list[bytes]:
    blocks = []
    for i in range(300):
        n = rng.choice([0, 1, 17, 100, 1000, 5000, 20000, 32768])
        kind = i % 5
        if kind == 0:
            data = rng.randbytes(n)
        elif kind == 1:
            data = b" ".join(rng.choice(WORDS) for _ in range(n // 4 + 1))[:n]
        elif kind == 2:
            data = bytes(rng.randrange(4) for _ in range(n))
        elif kind == 3:
            data = (b"record %d of a test; " % i) * (n // 20 + 1)
            data = data[:n]
        else:
            parts: list[bytes] = []
            while sum(map(len, parts)) < n:
                if rng.random() < 0.3:
                    parts.append(rng.randbytes(rng.randint(1, 40)))
                else:
                    parts.append(rng.choice(WORDS) * rng.randint(1, 9))
            data = b"".join(parts)[:n]
        blocks.append(data)
    return blocks


def test_google_snappy_makes_snappy_javas_bytes(kafka_release: Release, tmp_path: Path) -> None:
    raw = google_snappy()
    if raw is None:
        pytest.skip("no system Google snappy (libsnappy.so.1): kdump takes cramjam's Rust port")
    blocks = corpus(random.Random(41))
    for i, block in enumerate(blocks):
        (tmp_path / f"{i:04d}").write_bytes(block)
    result = kafka_release.run("SnappyBlocks", str(tmp_path), log=tmp_path / "snappy.log")
    assert result.stdout.strip().startswith("1.1."), result.stdout
    differ = [
        i
        for i, block in enumerate(blocks)
        if raw(block) != (tmp_path / f"{i:04d}.snappy").read_bytes()
    ]
    assert not differ, f"blocks {differ[:10]} differ from snappy-java's"
