"""kdump verify's speed and memory on a 1 GiB partition, side by side with raw CRC-32C.

Builds (once) partitions of magic v2 batches under bench/out/, with the .index and .timeindex
that LogSegment.recover writes for them (kdump.repair.rebuild), then measures in one run:

(a) ``verify_paths`` of a 1 GiB partition of 16 KiB batches (4 segments of 256 MiB) as a ratio
    to one raw ``crc32c`` pass over the same bytes (target >= 0.5);
(b) batches/s of the same verify on 1 KiB batches (a 256 MiB partition);
(c) the peak RSS of a ``kdump verify`` process on the 1 GiB partition cut into 256 MiB
    segments and into one 1 GiB segment (target < 150 MB, flat in segment size);
(d) the same on one 1 GiB segment of 127-byte batches (8.4 million of them, the typical size
    in the genuine files): memory must not grow with the number of batches (``--small-batch``
    sets the size, ``--rss-only`` runs (d) alone).

Batches come from bench_dump.py's template (kafka-python's builder), with base offsets and
timestamps patched in and the CRC recomputed per batch. ``--profile`` adds where the time of
(a) goes: the per-batch CRC floor, ``scan_log``, the index checks, and a cProfile.

Run from the repository root (needs the ``bench`` extra)::

    .venv/bin/python bench/bench_verify.py              # 1 GiB; about 2.3 GiB of bench/out/
    .venv/bin/python bench/bench_verify.py --size-mib 256 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import mmap
import pstats
import shutil
import sys
import time
from pathlib import Path

import crc32c as crc32c_package
from bench_dump import (
    BASE_OFFSET,
    CRC,
    CRC_AT,
    CRC_FROM,
    OUT,
    REPO,
    T0,
    TIMESTAMPS,
    TIMESTAMPS_AT,
    best_of,
    peak_rss_mib,
    template_batch,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from kdump import speedups
from kdump.checks.indexes import check_offset_index, check_time_index
from kdump.checks.log import scan_log
from kdump.checks.sink import FindingSink
from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.format.layout import LOG_HEADER
from kdump.format.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from kdump.log_scan import LogScan
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.unified_log import local_segments

MIB = 2**20


def small_template(batch_bytes: int) -> tuple[bytearray, int]:
    """One v2 batch of exactly ``batch_bytes`` holding one record (the size of the batches of
    a busy producer with linger.ms=0, ~127 bytes in the genuine files)."""
    for value_size in range(batch_bytes):
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        builder.append(0, T0, b"key-000001", b"v" * value_size, [])
        batch = builder.build()
        if len(batch) >= batch_bytes:
            assert len(batch) == batch_bytes, f"no one-record batch of {batch_bytes} bytes"
            return batch, 1
    raise ValueError(f"no one-record batch of {batch_bytes} bytes")


def build_partition(part: Path, size_mib: int, segment_mib: int, batch_bytes: int) -> int:
    """Write ``size_mib`` MiB of batches of about ``batch_bytes`` in segments of
    ``segment_mib``, with the indexes Kafka's recovery writes; the number of batches."""
    if batch_bytes < 1024:
        template, per_batch = small_template(batch_bytes)
    else:
        template, per_batch = template_batch(batch_bytes)
    size = len(template)
    per_segment = max(1, segment_mib * MIB // size)
    whole = size_mib % segment_mib == 0
    total = size_mib // segment_mib * per_segment if whole else size_mib * MIB // size
    tmp = part.with_name(part.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    written = 0
    while written < total:
        base = written * per_batch
        log = tmp / segment_file_name(base, LOG_SUFFIX)
        with open(log, "wb", buffering=MIB) as f:
            for i in range(written, min(total, written + per_segment)):
                BASE_OFFSET.pack_into(template, 0, i * per_batch)
                first = T0 + i * 1000
                TIMESTAMPS.pack_into(template, TIMESTAMPS_AT, first, first + per_batch - 1)
                CRC.pack_into(
                    template, CRC_AT, crc32c_package.crc32c(memoryview(template)[CRC_FROM:])
                )
                f.write(template)
                written += 1
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            recovered = recover_segment(buf, base, str(log), IndexConfig())
            (tmp / segment_file_name(base, INDEX_SUFFIX)).write_bytes(recovered.index)
            (tmp / segment_file_name(base, TIME_INDEX_SUFFIX)).write_bytes(recovered.time_index)
            del recovered
    shutil.rmtree(part, ignore_errors=True)
    tmp.rename(part)
    return total


def partition(size_mib: int, segment_mib: int, batch_bytes: int) -> Path:
    """The partition for these sizes under bench/out/, built on first use."""
    size = f"{batch_bytes // 1024}k" if batch_bytes % 1024 == 0 else f"{batch_bytes}b"
    part = OUT / f"verify-{size_mib}m-seg{segment_mib}m-{size}" / "bench-0"
    if not part.exists():
        start = time.perf_counter()
        batches = build_partition(part, size_mib, segment_mib, batch_bytes)
        print(
            f"built {part.relative_to(REPO)}: {batches} batches in "
            f"{time.perf_counter() - start:.1f} s",
            flush=True,
        )
    return part


def logs_of(part: Path) -> list[Path]:
    return sorted(part.glob(f"*{LOG_SUFFIX}"))


def raw_crc32c(logs: list[Path]) -> int:
    """One crc32c call over each segment's bytes, through an mmap like verify's."""
    total = 0
    for log in logs:
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            total ^= crc32c_package.crc32c(buf)
    return total


def verify(part: Path) -> int:
    result = verify_paths([str(part)], VerifyOptions())
    assert not result.findings, [f.code for f in result.findings][:5]
    return result.partitions[0].summary.batches


def per_batch_crc32c(logs: list[Path]) -> int:
    """The CRC work verify cannot avoid: one crc32c call per batch over [21, end)."""
    n = 0
    for log in logs:
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            view, pos, end = memoryview(buf), 0, len(buf)
            while pos < end:
                size = LOG_HEADER.unpack_from(buf, pos)[1] + LOG_HEADER.size
                crc32c_package.crc32c(view[pos + CRC_FROM : pos + size])
                pos += size
                n += 1
            view.release()
    return n


def breakdown(part: Path, runs: int) -> list[tuple[str, float]]:
    """Best-of-``runs`` times of verify's parts over the partition's segments."""
    options, segments = VerifyOptions(), local_segments(part)
    scans: dict[int, LogScan] = {}

    def scan() -> int:
        for seg in segments:
            sink = FindingSink(options.max_findings_per_code)
            scans[seg.base_offset] = scan_log(seg.log(), seg.base_offset, options, sink, "")
        return 0

    def offset_indexes() -> int:
        for seg in segments:
            index, sink = seg.offset_index(), FindingSink(options.max_findings_per_code)
            assert index is not None
            check_offset_index(index, scans[seg.base_offset], sink, options, False)
        return 0

    def time_indexes() -> int:
        for seg in segments:
            index, sink = seg.time_index(), FindingSink(options.max_findings_per_code)
            assert index is not None
            check_time_index(index, scans[seg.base_offset], sink, options, False)
        return 0

    logs = logs_of(part)
    return [
        ("raw crc32c, one call per segment", best_of(runs, lambda: raw_crc32c(logs))[0]),
        ("crc32c per batch (verify's floor)", best_of(runs, lambda: per_batch_crc32c(logs))[0]),
        ("scan_log (CRCs included)", best_of(runs, scan)[0]),
        ("check_offset_index", best_of(runs, offset_indexes)[0]),
        ("check_time_index", best_of(runs, time_indexes)[0]),
        ("verify_paths (everything)", best_of(runs, lambda: verify(part))[0]),
    ]


def profile(part: Path, lines: int = 18) -> str:
    profiler = cProfile.Profile()
    profiler.runcall(verify, part)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(lines)
    return out.getvalue()


RSS_LIMIT_MB = 150


def small_batches_rss(size_mib: int, batch_bytes: int) -> None:
    """(d): peak RSS and time of a whole ``kdump verify`` process on one segment of
    ``size_mib`` MiB of ``batch_bytes``-byte batches, as a ratio to the 150 MB limit."""
    part = partition(size_mib, size_mib, batch_bytes)
    log = logs_of(part)[0]
    print(
        f"\n(d) peak RSS of `kdump verify` on one {log.stat().st_size / MIB:.0f} MiB segment of "
        f"{batch_bytes}-byte batches (limit {RSS_LIMIT_MB} MB)"
    )
    rss, t = peak_rss_mib([sys.executable, "-m", "kdump", "verify", "--quiet", str(part)])
    mb = rss * MIB / 1e6
    print(f"  peak RSS {mb:6.0f} MB in {t:.1f} s; ratio to the limit {mb / RSS_LIMIT_MB:.2f} (< 1)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="partition size (1024)")
    parser.add_argument("--segment-mib", type=int, default=256, help="segment size (256)")
    parser.add_argument("--small-mib", type=int, default=256, help="1 KiB-batch partition (256)")
    parser.add_argument("--runs", type=int, default=3, help="timings per measurement (best)")
    parser.add_argument("--skip-rss", action="store_true", help="skip the process RSS runs")
    parser.add_argument("--profile", action="store_true", help="cProfile the verify of (a)")
    parser.add_argument("--small-batch", type=int, default=127, help="bytes per batch of (d)")
    parser.add_argument("--rss-only", action="store_true", help="run only (d)")
    args = parser.parse_args()
    if args.rss_only:
        small_batches_rss(args.size_mib, args.small_batch)
        return 0

    main_part = partition(args.size_mib, args.segment_mib, 16 * 1024)
    small_part = partition(args.small_mib, args.segment_mib, 1024)
    one_segment = None if args.skip_rss else partition(args.size_mib, args.size_mib, 16 * 1024)
    print(f"Python {sys.version.split()[0]}; kdump's fast paths: {speedups.describe()}")

    print(f"\n(a) verify of {main_part.relative_to(REPO)} (16 KiB batches)")
    logs = logs_of(main_part)
    size = sum(p.stat().st_size for p in logs)
    raw_crc32c(logs)  # page the files in before any timing
    t_raw, _ = best_of(args.runs, lambda: raw_crc32c(logs))
    t_verify, batches = best_of(args.runs, lambda: verify(main_part))
    print(f"  {len(logs)} segments, {size / MIB:.0f} MiB, {batches} batches")
    print(
        f"  raw crc32c over the .log files  {size / t_raw / 1e9:6.2f} GB/s  ({t_raw * 1e3:.0f} ms)"
    )
    rate = size / t_verify / 1e9
    print(f"  kdump verify (library)          {rate:6.2f} GB/s  ({t_verify * 1e3:.0f} ms)")
    print(f"  ratio verify / raw crc32c       {t_raw / t_verify:6.2f}   (target >= 0.5)")

    print(f"\n(b) verify of {small_part.relative_to(REPO)} (1 KiB batches)")
    small_logs = logs_of(small_part)
    small_size = sum(p.stat().st_size for p in small_logs)
    raw_crc32c(small_logs)
    t_small_raw, _ = best_of(args.runs, lambda: raw_crc32c(small_logs))
    t_small, small_batches = best_of(args.runs, lambda: verify(small_part))
    print(f"  {small_batches} batches, {small_size / MIB:.0f} MiB in {t_small * 1e3:.0f} ms")
    print(f"  batches/s                       {small_batches / t_small / 1e3:6.0f} k")
    print(f"  ratio verify / raw crc32c       {t_small_raw / t_small:6.2f}")

    if one_segment is not None:
        print(
            "\n(c) peak RSS of one `kdump verify` process (target < 150 MB, flat in segment size)"
        )
        python = [sys.executable]
        idle, _ = peak_rss_mib([*python, "-c", "import kdump.cli"])
        print(f"  python -c 'import kdump.cli'          {idle:6.0f} MiB")
        for part in (main_part, one_segment):
            logs = logs_of(part)
            biggest = max(p.stat().st_size for p in logs) / MIB
            rss, t = peak_rss_mib([*python, "-m", "kdump", "verify", "--quiet", str(part)])
            print(
                f"  {len(logs):2d} segment(s) of {biggest:5.0f} MiB          {rss:6.0f} MiB  "
                f"({t:.1f} s)"
            )

    if one_segment is not None:
        small_batches_rss(args.size_mib, args.small_batch)

    if args.profile:
        print(
            f"\nwhere verify's time goes ({main_part.relative_to(REPO)}, best of {args.runs} each)"
        )
        parts = breakdown(main_part, args.runs)
        total = parts[-1][1]
        for name, t in parts:
            print(f"  {name:<34} {t * 1e3:6.0f} ms  {t / total:6.0%} of verify")
        print(f"\ncProfile of verify {main_part.relative_to(REPO)}, by own time")
        print(profile(main_part))
    return 0


if __name__ == "__main__":
    sys.exit(main())
