"""Limits: huge length fields allocate nothing of their size, decompression is bounded,
directory walks survive symlink loops, unreadable files are findings, never crashes."""

from __future__ import annotations

import builtins
import os
import shutil
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch, varint
from clirun import own_handlers
from conftest import ORACLE

from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.commands.verify import exit_code
from kdump.errors import KdumpError
from kdump.format.snapshot import parse_producer_snapshot
from kdump.format.walk import iter_batches, iter_records


def peak_allocation(fn: Any) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def decode_all(data: bytes) -> None:
    for batch in iter_batches(data):
        list(iter_records(data, batch))


@pytest.mark.parametrize("field", ["record_length", "key_length", "value_length", "headers"])
def test_gigabyte_length_fields_allocate_nothing_of_that_size(field: str) -> None:
    giga = 1 << 30
    body = {
        "record_length": varint(giga) + b"\x00" * 8,
        "key_length": varint(20) + b"\x00\x00\x00" + varint(giga) + b"\x00" * 16,
        "value_length": varint(20) + b"\x00\x00\x00" + varint(-1) + varint(giga) + b"\x00" * 14,
        "headers": varint(20)
        + b"\x00\x00\x00"
        + varint(-1)
        + varint(-1)
        + varint(giga)
        + b"\x00" * 14,
    }[field]
    data = v2_batch(0, body, records_count=1)

    def run() -> None:
        with pytest.raises(KdumpError):
            decode_all(data)

    assert peak_allocation(run) < 1 << 20


def test_legacy_gigabyte_value_length_allocates_nothing() -> None:
    message = struct.pack(">bb", 0, 0) + struct.pack(">i", -1) + struct.pack(">i", 1 << 30)
    import zlib

    crc = zlib.crc32(message)
    data = struct.pack(">qiI", 0, 4 + len(message), crc) + message + b"\x00" * 64

    def run() -> None:
        with pytest.raises(KdumpError):
            decode_all(data)

    assert peak_allocation(run) < 1 << 20


def test_snapshot_with_a_huge_count_allocates_nothing() -> None:
    data = struct.pack(">hIi", 1, 0, 1 << 30) + b"\x00" * 46

    def run() -> None:
        with pytest.raises(KdumpError):
            parse_producer_snapshot(data, check_crc=False)

    assert peak_allocation(run) < 1 << 20


def test_symlink_loops_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(ORACLE / "txn-0", root / "logs" / "txn-0")
    os.symlink(root, root / "logs" / "loop")
    os.symlink(root / "logs", root / "logs" / "txn-0-again")
    result = verify_paths([str(root)], VerifyOptions())
    assert [Path(r.path).name for r in result.partitions] == ["txn-0"]


def test_unreadable_segment_file_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    part = tmp_path / "txn-0"
    shutil.copytree(ORACLE / "txn-0", part)
    victim = str(part / "00000000000000000063.log")
    real_open = builtins.open

    def deny(path: Any, *args: Any, **kw: Any) -> Any:
        if os.fspath(path) == victim:
            raise PermissionError(13, "Permission denied", victim)
        return real_open(path, *args, **kw)

    monkeypatch.setattr(builtins, "open", deny)
    result = verify_paths([str(part)], VerifyOptions())
    unreadable = [f for f in result.findings if f.code == "FILE_UNREADABLE"]
    assert [f.path for f in unreadable] == [victim]
    assert "Permission denied" in unreadable[0].message
    assert exit_code(result, "error") == 2
    assert len(result.partitions[0].findings) == 1


def test_unreadable_file_at_the_cli_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kdump.cli import main

    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"\x00" * 100)
    real_open = builtins.open

    def deny(path: Any, *args: Any, **kw: Any) -> Any:
        if os.fspath(path) == str(log):
            raise PermissionError(13, "Permission denied", str(log))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(builtins, "open", deny)
    monkeypatch.setattr("sys.argv", ["kdump", "--files", str(log)])
    with pytest.raises(SystemExit) as exit_info, own_handlers():
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 3
    assert err.strip().splitlines()[-1] == f"kdump: {log}: Permission denied"


def test_log_dirs_beside_partitions_are_found(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    shutil.copytree(ORACLE / "txn-0", outer / "txn-0")
    shutil.copytree(ORACLE / "plain-0", outer / "inner" / "plain-0")
    (outer / "inner" / "meta.properties").write_text("version=0\nbroker.id=0\n")
    result = verify_paths([str(outer)], VerifyOptions())
    assert sorted(Path(r.path).name for r in result.partitions) == ["plain-0", "txn-0"]
