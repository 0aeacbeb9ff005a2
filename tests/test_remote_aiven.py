"""Aiven's segment manifests and chunk indexes read as bucket contents: hostile (issue 27).
Every count and size is checked against kdump's bounds as the manifest is parsed and against
the ``.log`` object's real length before anything is made of it; a refusal is one line naming
the object, the byte position and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import zstandard
from clirun import run_kdump
from conftest import FIXTURES
from hostile.bombs import AIVEN_STEM, aiven_segment, fixed_index, lying_chunk_sizes

from kdump.errors import StoreError
from kdump.storage.remote.aiven import (
    MAX_CHUNK_SIZE,
    MAX_CHUNKS,
    ChunkIndex,
    ManifestError,
    decode_chunk_sizes,
    encode_chunk_sizes,
    parse_manifest,
)

AIVEN = FIXTURES / "tiered" / "aiven"


def manifest(chunk_index: dict[str, Any]) -> bytes:
    doc = json.loads((AIVEN / "manifest-v1-fixed-no-encryption.rsm-manifest.json").read_bytes())
    return json.dumps({**doc, "chunkIndex": chunk_index}).encode()


def offsets(index: ChunkIndex) -> list[int]:
    return [index.stored_offset(i) for i in range(index.count + 1)]


@pytest.mark.parametrize(
    ("name", "stored"), [("fixed", [0, 110, 220, 250]), ("variable", [0, 10, 30, 60])]
)
def test_aivens_own_chunk_indexes(name: str, stored: list[int]) -> None:
    """The chunk indexes of Aiven's tests (core/src/test/resources): 250 bytes in chunks of 100."""
    index = json.loads((AIVEN / f"chunkindex-{name}.json").read_text())
    parsed = parse_manifest(manifest(index), "m").chunk_index
    assert (parsed.count, offsets(parsed), parsed.stored_size) == (3, stored, stored[-1])
    assert list(parsed.chunks(0, 250)) == [0, 1, 2] and parsed.original_range(2) == (200, 250)


@pytest.mark.parametrize("sizes", [[], [7], [5, 300, 70000, 9], [2**31 - 1, 1, 2**24]])
def test_chunk_sizes_codec_round_trip(sizes: list[int]) -> None:
    assert decode_chunk_sizes(encode_chunk_sizes(sizes)) == sizes


@pytest.mark.parametrize(
    ("index", "field", "wanted"),
    [
        (fixed_index(MAX_CHUNK_SIZE + 1, 100, 10, 10), "originalChunkSize", "chunks of 1 to"),
        (fixed_index(0, 100, 10, 10), "originalChunkSize", "chunks of 1 to"),
        (fixed_index(100, 3 * 10**9, 10, 10), "originalFileSize", "0 to 2147483647"),
        (fixed_index(1, 10**8, 1, 1), "originalChunkSize", f"at most {MAX_CHUNKS}"),
        (fixed_index(100, 250, 0, 30), "transformedChunkSize", "stored sizes 0 and 30"),
        (
            {"type": "variable", "originalChunkSize": 100, "originalFileSize": 250,
             "transformedChunks": lying_chunk_sizes(2**31 - 1)},
            "transformedChunks",
            "2147483647 chunk sizes take 2147483659 bytes, not 14",
        ),
        (
            {"type": "variable", "originalChunkSize": 100, "originalFileSize": 250,
             "transformedChunks": lying_chunk_sizes(2)},
            "transformedChunks",
            "2 chunk sizes for 250 bytes in chunks of 100",
        ),
    ],
)  # fmt: skip
def test_chunk_index_refused_before_anything_is_made_of_it(
    index: dict[str, Any], field: str, wanted: str
) -> None:
    data = manifest(index)
    with pytest.raises(ManifestError) as refused:
        parse_manifest(data, "bucket/x.rsm-manifest")
    error = refused.value
    assert error.position == data.index(f'"{field}"'.encode())
    assert str(error).startswith(f"bucket/x.rsm-manifest:{error.position}: chunkIndex.{field}: ")
    assert wanted in str(error)


@pytest.mark.parametrize(
    ("index", "object_size", "wanted", "position"),
    [
        (ChunkIndex(100, 250, 3, (110, 30)), 2, "has 3 chunks, the object 2 bytes", 2),
        (ChunkIndex(100, 250, 3, (110, 30)), 200, "truncated object: 200 bytes", 200),
        (ChunkIndex(100, 250, 3, (110, 30)), 251, "object too long: 251 bytes", 250),
        (
            ChunkIndex(100, 250, 3, None, encode_chunk_sizes([10, 0, 30])),
            40,
            "chunk 1 is stored in no bytes",
            10,
        ),
    ],
)
def test_chunk_index_checked_against_the_object(
    index: ChunkIndex, object_size: int, wanted: str, position: int
) -> None:
    with pytest.raises(StoreError) as refused:
        index.check("bucket/x.log", object_size)
    assert refused.value.position == position and wanted in str(refused.value)


def test_a_chunk_frame_claiming_more_than_its_chunk_is_not_decompressed(tmp_path: Path) -> None:
    """A zstd frame must say its chunk's own size before it is decompressed: here 2 MiB in a
    chunk of 1 MiB (the last and only one of a 1 MiB file in chunks of 4 MiB)."""
    log = zstandard.ZstdCompressor().compress(bytes(2 << 20))
    chunk_index = fixed_index(4 << 20, 1 << 20, len(log), len(log))
    url = aiven_segment(tmp_path / "bucket", chunk_index, log, compression=True)
    ran = run_kdump(["dump", url])
    assert ran.exit_code == 3, ran.stdout + ran.stderr
    assert ran.stderr.count("\n") == 1
    pattern = re.escape(f"kdump: {url}:0: chunk does not decompress: zstd frame of content size ")
    assert re.match(pattern + r"2097152 \(at most 1048576 expected\)", ran.stderr), ran.stderr
    assert AIVEN_STEM in ran.stderr
