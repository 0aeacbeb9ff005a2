"""Fuzz targets: each takes arbitrary bytes and may raise nothing but kdump's own KdumpError.

Used by fuzz/run.py (coverage-guided, atheris) and tests/test_fuzz.py (hypothesis, bounded).
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from kdump import speedups
from kdump.checks.gather import IndexGather
from kdump.checks.indexes import check_offset_index, check_time_index
from kdump.checks.log import scan_log
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.errors import KdumpError
from kdump.format.index import OffsetIndex
from kdump.format.internal import MESSAGE_PARSERS, decode_control_record
from kdump.format.records import Record, control_record_key, end_transaction_marker
from kdump.format.snapshot import parse_producer_snapshot
from kdump.format.textfiles import (
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
)
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.format.walk import iter_batches, iter_records
from kdump.producer_state import ProducerStateManager
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.storage.records import FileRecords
from kdump.storage.remote.aiven import parse_manifest

LIMIT = 1 << 20


def fuzz_log(data: bytes) -> None:
    try:
        for batch in iter_batches(data, "fuzz.log"):
            batch.is_valid(data)
            for record in iter_records(data, batch, "fuzz.log", LIMIT):
                if batch.is_control:
                    control_record_key(record)
                    end_transaction_marker(record)
    except KdumpError:
        pass


def _probe_index(index: OffsetIndex | TimeIndex, data: bytes) -> None:
    used = index.used_entries
    index.entries_before_first_zero_entry()
    index.sanity_check()
    for i in range(min(used, 64)):
        index.entry(i)
    target = struct.unpack(">q", (data[:8] + bytes(8))[:8])[0]
    index.lookup(target)
    index.lookup(target, used)
    index.ceiling(target, used)


def fuzz_index(data: bytes) -> None:
    _probe_index(OffsetIndex(data, 1000, "fuzz.index"), data)


def fuzz_time_index(data: bytes) -> None:
    _probe_index(TimeIndex(data, 1000, "fuzz.timeindex"), data)


def fuzz_txn_index(data: bytes) -> None:
    index = TransactionIndex(data, 1000, "fuzz.txnindex")
    list(index)
    index.sanity_check()


def fuzz_snapshot(data: bytes) -> None:
    with contextlib.suppress(KdumpError):
        parse_producer_snapshot(data, "fuzz.snapshot")


def fuzz_checkpoints(data: bytes) -> None:
    readers = (
        read_offset_checkpoint,
        read_leader_epoch_checkpoint,
        read_partition_metadata,
        read_meta_properties,
    )
    for read in readers:
        with contextlib.suppress(KdumpError):
            read(data, "fuzz-checkpoint")


def _record(data: bytes) -> Record:
    """The first two bytes give the key length (0xFFFF: null key); the rest is the value."""
    n = int.from_bytes(data[:2], "big") if len(data) >= 2 else 0
    key = None if n == 0xFFFF else data[2 : 2 + n]
    value = data[2 + (0 if key is None else len(key)) :] or None
    return Record(0, 0, key, value, (), -1, 0, len(data))


def fuzz_internal(data: bytes) -> None:
    """The internal-topic decoders and KRaft control records report errors, never raise."""
    record = _record(data)
    for parse in MESSAGE_PARSERS.values():
        parse(record)
    for control_type in range(8):
        decode_control_record(control_type, record)


def internal_seed(key: bytes | None, value: bytes | None) -> bytes:
    head = b"\xff\xff" if key is None else len(key).to_bytes(2, "big") + key
    return head + (value or b"")


CLI_RUNS: list[list[str]] = [
    ["--files", "{log},{index},{timeindex}", "--deep-iteration", "--print-data-log"],
    ["dump", "{dir}", "--format", "jsonl", "--deep-iteration"],
    ["verify", "{dir}", "--deep", "--format", "json"],
    ["lookup", "{dir}", "--offset", "3", "--format", "json"],
    ["lookup", "{dir}", "--timestamp", "1700000000000", "--explain"],
    ["rebuild-index", "{dir}", "--dry-run", "--index-interval-bytes", "100"],
    ["recover", "{dir}", "--dry-run"],
]


class CliBug(AssertionError):
    """The CLI printed a traceback or its last-resort 'unexpected' line, or a bad exit code."""


def run_cli(args: list[str]) -> tuple[int, str]:
    from kdump.cli import main

    err, out = io.StringIO(), io.StringIO()
    saved = sys.argv, sys.stdout, sys.stderr
    sys.argv, sys.stdout, sys.stderr = ["kdump", *args], out, err
    try:
        main()
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        sys.argv, sys.stdout, sys.stderr = saved
    return code, err.getvalue()


def fuzz_cli(data: bytes) -> None:
    """The first bytes split the input into a .log, an .index and a .timeindex."""
    cut1 = int.from_bytes(data[:2] or b"\x00", "big") % (len(data) + 1)
    cut2 = cut1 + int.from_bytes(data[2:3] or b"\x00", "big") * 8 // 3
    files = {"log": data[3:cut1], "index": data[cut1:cut2], "timeindex": data[cut2:]}
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "fuzz-0"
        part.mkdir()
        paths = {}
        for suffix, content in files.items():
            paths[suffix] = str(part / f"{0:020d}.{suffix}")
            Path(paths[suffix]).write_bytes(content)
        for template in CLI_RUNS:
            args = [a.format(dir=part, **paths) for a in template]
            code, err = run_cli(args)
            if code not in (0, 1, 2, 3) or "Traceback" in err or "kdump: unexpected" in err:
                raise CliBug(f"kdump {' '.join(args)} -> {code}: {err[-2000:]}")


def fuzz_aiven(data: bytes) -> None:
    """An Aiven segment manifest (bucket contents): parsed, its chunk index checked against
    objects of several lengths, then every chunk's stored range read; only KdumpError."""
    try:
        index = parse_manifest(data, "fuzz.rsm-manifest").chunk_index
    except KdumpError:
        return
    for object_size in (0, len(data), index.count, 1 << 20):
        try:
            index.check("fuzz.log", object_size)
        except KdumpError:
            continue
        for i in index.chunks(0, index.original_file_size):
            index.original_range(i)
            assert index.stored_offset(i) < index.stored_offset(i + 1) <= object_size


def fuzz_state(data: bytes) -> None:
    """A ``verify --state`` file (kdump's own, read back: issue 39): loaded, typed and bounded,
    or a warning; what loads restores as walk facts and findings. Never an exception."""
    from kdump.checks.verify_state import VerifyState

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.json"
        path.write_bytes(data)
        os.chmod(path, 0o600)
        state = VerifyState.load(path)
    for key, verified in state.segments.items():
        verified.restore_scan(key)
        verified.restore_findings()
    for key, prefix in state.active.items():
        from kdump.checks.verify_state import restore_scan

        restore_scan(prefix.scan, key)


def fuzz_fleet(data: bytes) -> None:
    """A fleet's verify result (kdump's own, read back: issue 39): parsed typed and bounded,
    or one InputError naming it; what parses draws on the fleet page."""
    from kdump.audit_results import FleetAudit, parse_audit
    from kdump.report.fleet import render_fleet_html

    now = 1_800_000_000_000
    try:
        audit = parse_audit("fuzz.json", data, now)
    except KdumpError:
        return
    from kdump.audit_results import BrokerAudit

    page = "".join(render_fleet_html(FleetAudit([BrokerAudit(audit, 0, False)], now, 1), ["x"]))
    assert "<script>alert" not in page


class SpeedupsMismatch(AssertionError):
    """The C fast paths and the pure-Python code disagree on the same bytes."""


def _outcome(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except KdumpError as e:
        return (type(e).__name__, str(e))


def _everything(data: bytes) -> list[object]:
    """What every C-accelerated path makes of ``data``: batches, records, verify's scan and
    index checks (indexes cut from the same bytes), and LogSegment.recover."""
    options = VerifyOptions(deep=False)
    sink = FindingSink(options.max_findings_per_code)
    out: list[object] = []

    def parse() -> None:
        for batch in iter_batches(data, "fuzz.log"):
            out.append((batch, batch.is_valid(data)))
            out.append(_outcome(lambda b=batch: list(iter_records(data, b, "fuzz.log", LIMIT))))

    out.append(_outcome(parse))
    third = len(data) // 3
    offset_index = OffsetIndex(data[: third // 8 * 8], 0, "i")
    time_index = TimeIndex(data[third : third + third // 12 * 12], 0, "t")
    gather = IndexGather(offset_index, time_index)
    scan = scan_log(FileRecords("fuzz.log", data), 0, options, sink, "fuzz", gather)
    check_offset_index(offset_index, scan, sink, options, False)
    check_time_index(time_index, scan, sink, options, False)
    out += [scan, gather.position_rows, gather.offset_rows, sink.findings]
    producers = ProducerStateManager()
    out += [recover_segment(data, 0, "f", IndexConfig(64), producers, None)]
    return out


def fuzz_speedups(data: bytes) -> None:
    """The C fast paths (kdump/_speedups.c) against the pure-Python reference."""
    if not speedups.built():
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from purepython import pure_python

    fast = _everything(data)
    with pure_python():
        pure = _everything(data)
    if fast != pure:
        raise SpeedupsMismatch(f"C and Python disagree:\n{fast}\n{pure}")


TARGETS: dict[str, Callable[[bytes], None]] = {
    "log": fuzz_log,
    "index": fuzz_index,
    "timeindex": fuzz_time_index,
    "txnindex": fuzz_txn_index,
    "snapshot": fuzz_snapshot,
    "checkpoint": fuzz_checkpoints,
    "cli": fuzz_cli,
    "internal": fuzz_internal,
    "speedups": fuzz_speedups,
    "aiven": fuzz_aiven,
    "state": fuzz_state,
    "fleet": fuzz_fleet,
}

SEED_SUFFIXES = {
    "log": (".log",),
    "index": (".index",),
    "timeindex": (".timeindex",),
    "txnindex": (".txnindex",),
    "snapshot": (".snapshot",),
    "checkpoint": ("checkpoint", "partition.metadata"),
    "cli": (".log",),
    "internal": (),
    "speedups": (".log",),
    "aiven": ("rsm-manifest", ".rsm-manifest.json"),
    "state": (),
    "fleet": (),
}


def _internal_seeds(root: Path, limit: int = 400) -> list[bytes]:
    """Key/value pairs of genuine __consumer_offsets and __cluster_metadata records."""
    out: list[bytes] = []
    for pattern in ("__consumer_offsets-*/*.log", "__cluster_metadata-*/*.log"):
        for path in sorted((root / "fixtures" / "realfiles").rglob(pattern)):
            data = path.read_bytes()
            with contextlib.suppress(KdumpError):
                for batch in iter_batches(data, str(path)):
                    for record in iter_records(data, batch, str(path), LIMIT):
                        out.append(internal_seed(record.key, record.value))
            if len(out) >= limit:
                return out[:limit]
    return out


def cli_seed(log: bytes) -> bytes:
    """``log`` as fuzz_cli's input: the whole of it the .log, no index, no time index."""
    return (len(log) + 3).to_bytes(2, "big") + b"\x00" + log


def _hostile_seeds(target: str, root: Path) -> list[bytes]:
    """The hostile inputs of tests/hostile/bombs.py (issue 27), small: decompression bombs of
    records and messages for the log targets, manifests whose counts and sizes lie for aiven."""
    sys.path.insert(0, str(root / "tests"))
    from hostile import bombs

    if target == "aiven":
        lying = [
            bombs.variable_index_claiming(2**31 - 1, 200),
            bombs.fixed_index(1, 10**8, 1, 1),
            bombs.fixed_index(1 << 30, 1 << 30, 32 << 10, 32 << 10),
        ]
        return [bombs.manifest(index) for index in lying]
    if target not in ("log", "cli", "speedups"):
        return []
    logs = [
        bombs.record_bomb((64 << 10) // len(bombs.EMPTY_RECORD)),
        bombs.record_bomb(9000, attributes=0x30, producer_id=7, producer_epoch=0),
        bombs.invalid_batch() + bombs.record_bomb(9000, base_offset=1),
        bombs.legacy_wrapper_bomb(2500),
    ]
    return [cli_seed(log) for log in logs] if target == "cli" else logs


def _written_seeds(target: str, root: Path) -> list[bytes]:
    """What kdump itself writes and reads back: a state file and a verify result of the oracle
    partitions (one clean, one with findings), made here by kdump."""
    if target not in ("state", "fleet"):
        return []
    import shutil

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("plain-0", "txn-0"):
            part = Path(tmp) / name
            shutil.copytree(root / "fixtures" / "oracle" / name, part)
            (part / "00000000000000000000.index").unlink(missing_ok=True)  # a finding
            state, result = Path(tmp) / f"{name}.state", Path(tmp) / f"{name}.json"
            run_cli(["verify", str(part), "--state", str(state), "--output", str(result)])
            out.append((state if target == "state" else result).read_bytes())
    return out


def seeds(target: str, root: Path, max_size: int = 64 * 1024) -> list[bytes]:
    """Fixture files for ``target``, small ones, the hostile inputs, what kdump writes and
    reads back, plus any saved corpus entries."""
    out = _internal_seeds(root) if target == "internal" else []
    out += _written_seeds(target, root)
    out += _hostile_seeds(target, root)
    for base in (
        root / "fixtures" / "oracle",
        root / "fixtures" / "generated",
        root / "fixtures" / "tiered",
        root / "fuzz" / "corpus" / target,
    ):
        if not base.exists():
            continue
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                path = Path(dirpath) / name
                wanted = base.name == target or name.endswith(SEED_SUFFIXES[target])
                if wanted and 0 < path.stat().st_size <= max_size:
                    out.append(path.read_bytes())
    return out
