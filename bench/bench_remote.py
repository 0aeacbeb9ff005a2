"""kdump verify over S3 against the same files on local disk: throughput, and memory flat in
segment size.

Starts the tests' S3 server (tests/s3server.py: moto's standalone server on localhost, with
authentication on), uploads partitions of one 64 MiB and one 512 MiB segment of 16 KiB magic v2
batches (bench_verify.py builds them, with the indexes Kafka's recovery writes), and runs each
``kdump verify`` as a child process, as an operator would:

(a) throughput of ``kdump verify s3://...`` and of ``kdump verify DIR`` on the same files, and
    their ratio (the best of ``--runs`` wall times each, taking turns);
(b) the peak RSS of ``kdump verify s3://...`` on the 64 MiB and on the 512 MiB segment, and
    their ratio (target: flat, i.e. about 1: a remote .log is read in windows of
    ``--read-ahead``, never whole);
(c) the floor of (a): the same .log fetched by bare ranged GETs of the same 16 MiB (s3fs, in
    this process, nothing parsed), and kdump verify over S3 as a ratio to it.

moto is a Python server: its answers, not the network, bound (a) and (c). Run from the
repository root::

    .venv/bin/python bench/bench_remote.py                # about 3 minutes, 1.2 GiB of bench/out/
    .venv/bin/python bench/bench_remote.py --sizes 64 --runs 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_dump import REPO, peak_rss_mib
from bench_verify import partition

sys.path.insert(0, str(REPO / "tests"))
from s3server import S3Server

from kdump.storage.remote.options import DEFAULT_READ_AHEAD

MIB = 2**20
KDUMP = str(Path(sys.executable).parent / "kdump")


def verify_seconds(target: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [KDUMP, "verify", "--quiet", target], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1, 2):
        sys.exit(f"kdump verify {target} exited {done.returncode}: {done.stderr}")
    return time.perf_counter() - start


def raw_seconds(url: str, size: int) -> float:
    """Bare ranged GETs of ``url``, 16 MiB each, in order: what any client waits for."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    start = time.perf_counter()
    for at in range(0, size, DEFAULT_READ_AHEAD):
        fs.cat_file(url, start=at, end=min(size, at + DEFAULT_READ_AHEAD))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 512], metavar="MIB")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        s3 = S3Server(Path(work))
        s3.start()
        try:
            os.environ.update(s3.env())  # the children's credential chain and endpoint
            run(s3, args.sizes, args.runs)
        finally:
            s3.stop()
    return 0


def run(s3: S3Server, sizes: list[int], runs: int) -> None:
    rss: dict[int, float] = {}
    for size in sizes:
        part = partition(size, size, 16)
        nbytes = sum(f.stat().st_size for f in part.glob("*.log"))
        start = time.perf_counter()
        url = s3.put_tree(part, f"bench/seg{size}m/{part.name}")
        print(f"uploaded {size} MiB to {url} in {time.perf_counter() - start:.1f} s", flush=True)
        local = remote = float("inf")
        for _ in range(runs):  # taking turns: a burst of load elsewhere hits both alike
            local = min(local, verify_seconds(str(part)))
            remote = min(remote, verify_seconds(url))
        print(
            f"(a) {size} MiB segment: verify local {nbytes / MIB / local:.0f} MiB/s "
            f"({local:.2f} s), over S3 {nbytes / MIB / remote:.0f} MiB/s ({remote:.2f} s): "
            f"S3/local = {local / remote:.2f}",
            flush=True,
        )
        log = sorted(part.glob("*.log"))[0]
        raw = min(raw_seconds(f"{url}/{log.name}", nbytes) for _ in range(runs))
        print(
            f"(c) {size} MiB segment: bare ranged GETs {nbytes / MIB / raw:.0f} MiB/s "
            f"({raw:.2f} s): verify over S3 / bare GETs = {raw / remote:.2f}",
            flush=True,
        )
        local_rss, _ = peak_rss_mib([KDUMP, "verify", "--quiet", str(part)])
        rss[size], _ = peak_rss_mib([KDUMP, "verify", "--quiet", url])
        print(
            f"(b) {size} MiB segment: peak RSS over S3 {rss[size]:.0f} MiB, "
            f"local {local_rss:.0f} MiB",
            flush=True,
        )
    if len(rss) > 1:
        small, big = min(rss), max(rss)
        print(
            f"(b) peak RSS over S3, {big} MiB / {small} MiB segment: "
            f"{rss[big]:.0f} / {rss[small]:.0f} MiB = {rss[big] / rss[small]:.2f} "
            f"(segment {big // small}x bigger)"
        )


if __name__ == "__main__":
    sys.exit(main())
