"""kdump tiered scrub at scale: the replay of __remote_log_metadata against decoding alone, and
the comparison with a bucket's listing.

Builds ``bench/out/scrub-N/logs/__remote_log_metadata-K``: N segments of one partition, each
COPY_SEGMENT_STARTED + FINISHED (records written by tests/rlmmbuild.py, independent of kdump),
a new leader epoch every 100 segments whose first segment re-uploads the previous one (so
Kafka's replay supersedes it). Then measures, in one run:

(a) the replay (kdump.tiered.metadata.read_remote_log_metadata), records/s, as a ratio to the
    same records only read and decoded (partition_records + read_framed): the cost of Kafka's
    leader-epoch logic on top of the decoder;
(b) the comparison (kdump.tiered.scrub.scrub) of the replayed state with a listing of the N
    segments' objects in Kafka's RSM layout (5 objects each, parsed by kdump.storage.remote.layouts
    from URLs and sizes, no store involved), segments/s.

    .venv/bin/python bench/bench_scrub.py --segments 100000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from rlmmbuild import MetadataLog, Segment, metadata_partition, uuid_string  # noqa: E402

from kdump.format.internal import read_framed  # noqa: E402
from kdump.format.schemas.remote_log_metadata import REMOTE_LOG_METADATA_RECORD_TYPES  # noqa: E402
from kdump.internal_topics import partition_records  # noqa: E402
from kdump.storage.remote.layouts import parse_listing  # noqa: E402
from kdump.tiered.metadata import read_remote_log_metadata  # noqa: E402
from kdump.tiered.scrub import ScrubOptions, scrub  # noqa: E402

TOPIC_ID = uuid_string(0xB0B)
T0 = 1_700_000_000_000


def segments(n: int) -> list[Segment]:
    out, start, epoch = [], 0, 0
    for i in range(n):
        epochs, end = {epoch: start}, start + 999
        if i and i % 100 == 0:
            # a new leader re-uploads the last segment and 1000 offsets of its own epoch
            epoch += 1
            start = out[-1].start
            epochs, end = {epoch - 1: start, epoch: start + 1000}, start + 1999
        out.append(Segment("bench", TOPIC_ID, 0, uuid_string(i + 1), start, end, epochs))
        start = end + 1
    return out


def build(n: int) -> tuple[Path, list[Segment]]:
    logs = ROOT / "bench" / "out" / f"scrub-{n}" / "logs"
    segs = segments(n)
    number = metadata_partition(TOPIC_ID, 0)
    if not (logs / f"__remote_log_metadata-{number}").exists():
        shutil.rmtree(logs, ignore_errors=True)
        log = MetadataLog()
        for i, s in enumerate(segs):
            log.copied(s, T0 + 10 * i)
        log.write(logs, number)
    return logs, segs


def decode_only(logs: Path) -> int:
    n = 0
    for directory in logs.iterdir():
        for _, _, record in partition_records(directory, lambda *a: None, check_crc=True):
            read_framed(record.value, REMOTE_LOG_METADATA_RECORD_TYPES)
            n += 1
    return n


def best(f, runs: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, value = [], None
    for _ in range(runs):
        t = time.perf_counter()
        value = f()
        times.append(time.perf_counter() - t)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logs, segs = build(args.segments)
    t_decode, records = best(lambda: decode_only(logs), args.runs)
    t_replay, metadata = best(lambda: read_remote_log_metadata([str(logs)]), args.runs)
    print(f"records: {records}")
    print(
        f"(a) decode only: {records / t_decode:,.0f} records/s; replay: "
        f"{records / t_replay:,.0f} records/s; replay/decode time ratio {t_replay / t_decode:.2f}"
    )
    base = "file:///bucket/kafka-tiered-storage/bench-0-" + TOPIC_ID
    listing = [
        (f"{base}/{s.start:020d}-{s.segment_id}.{suffix}", 1000 if suffix == "log" else 10)
        for s in segs
        for suffix in ("log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint")
    ]
    t_parse, layouts = best(lambda: parse_listing(listing), args.runs)
    options = ScrubOptions(now_ms=T0 + 10 * len(segs) + 1)
    t_scrub, result = best(lambda: scrub(layouts.partitions, metadata, options), args.runs)
    print(
        f"(b) listing parsed: {len(segs) / t_parse:,.0f} segments/s; compared: "
        f"{len(segs) / t_scrub:,.0f} segments/s; states {result.summary()['segments_by_state']}"
    )


if __name__ == "__main__":
    main()
