"""How many times each command walks each segment's ``.log`` from its start: counted by a hook on
the one walk (kdump.format.walk.LogWalk, which every reader of a log's batches goes through),
not timed. One walk per segment is the rule (the partition's facts, verify's checks and the
producer state's replay ride on it); where a command walks a segment more than once, WALKS says
so and why, so that a second walk is never added unseen and one taken away is recorded.

A walk that starts inside the file (the tail after the last index entry that Kafka's
LogSegment.readNextOffset reads, a lookup's read from its index entry) is not a whole walk and
is not counted.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE

from kdump.format import walk
from kdump.format.walk import BatchRun, LogWalk

Args = Callable[[Path, Path], list[str]]

COMMANDS: dict[str, Args] = {
    "dump": lambda p, _: ["dump", *map(str, sorted(p.glob("*.log")))],
    "verify": lambda p, _: ["verify", str(p)],
    "verify --deep": lambda p, _: ["verify", "--deep", str(p)],
    "verify --jobs 2": lambda p, _: ["verify", "--jobs", "2", str(p)],
    "explain": lambda p, _: ["explain", str(p)],
    "txn": lambda p, _: ["txn", str(p)],
    "report": lambda p, other: ["report", str(p), "-o", str(other.parent / "report.html")],
    "recover --dry-run": lambda p, _: ["recover", "--dry-run", str(p)],
    "rebuild-index --dry-run": lambda p, _: ["rebuild-index", "--dry-run", str(p)],
    "replicas": lambda p, other: ["replicas", str(p), str(other)],
    "lookup": lambda p, _: ["lookup", str(p), "--offset", "5"],
    "lookup --timestamp": lambda p, _: ["lookup", str(p), "--timestamp", "0"],
    "compact --dry-run": lambda p, _: ["compact", "--dry-run", str(p)],
    "startup": lambda p, _: ["startup", str(p)],
}

FACTS = "the partition's facts (its log end) come from verify's walk of every segment"
CLEANING = (
    "the cleaner's two passes, as Kafka's (Cleaner.buildOffsetMap, then cleanSegments: the "
    "explanation's preview is the cleaning, not a third); LogSegment.readNextOffset from the "
    "offset index's last entry (none in a small segment: from 0); the facts' walk"
)
REPLICAS = "each replica's verify walk, then replica_content's batches (between both ends)"

WALKS: dict[tuple[str, str], tuple[tuple[int, ...], str]] = {
    ("variety-0", "replicas"): ((2, 2), REPLICAS),
    ("variety-0", "lookup"): ((2, 1), f"the lookup's own read of the first segment; {FACTS}"),
    ("variety-0", "lookup --timestamp"): ((2, 1), f"the lookup's own read; {FACTS}"),
    ("variety-0", "compact --dry-run"): ((4, 2), CLEANING),
    ("txn-0", "replicas"): ((2, 2, 2, 2), REPLICAS),
    ("txn-0", "lookup"): ((2, 1, 1, 1), f"the lookup's own read of the first segment; {FACTS}"),
    ("txn-0", "lookup --timestamp"): ((2, 1, 1, 1), f"the lookup's own read; {FACTS}"),
    ("txn-0", "compact --dry-run"): ((3, 3, 3, 2), CLEANING),
}
"""(partition, command) -> (the whole walks of each of its segments, in order; why more than
one). A transactional partition's last stable offset is the broker's rebuild of its producer
state from the loaded snapshot's offset, and kdump txn's records past it are read from there: both
start at an offset index entry, no whole walk."""

PARTITIONS = ("variety-0", "txn-0")
"""Two segments of plain batches; four of transactions, markers and aborted ones."""


class Walks:
    """Whole walks of each ``.log``, by path, while installed (the hook on LogWalk)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counted: Counter[str] = Counter()
        iterate = LogWalk.__iter__
        counted = self.counted

        def counting(self: LogWalk) -> Iterator[BatchRun]:
            if self.start == 0:
                counted[self.path] += 1
            return iterate(self)

        monkeypatch.setattr(walk.LogWalk, "__iter__", counting)


@pytest.mark.parametrize("partition", PARTITIONS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_walks_per_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partition: str, command: str
) -> None:
    here = tmp_path / "a" / partition
    other = tmp_path / "b" / partition
    shutil.copytree(ORACLE / partition, here)
    shutil.copytree(ORACLE / partition, other)
    walks = Walks(monkeypatch)
    ran = run_kdump(COMMANDS[command](here, other))
    assert ran.exit_code in (0, 1, 2), ran.stderr
    logs = sorted(here.glob("*.log"))
    per_segment = tuple(walks.counted[str(log)] for log in logs)
    expected, why = WALKS.get((partition, command), ((1,) * len(logs), "one walk each"))
    assert per_segment == expected, f"{per_segment} walks per segment, not {expected}: {why}"


def test_the_hook_counts_a_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook itself: walks from the start count (two here), one from inside the file does
    not."""
    from kdump.storage.local import open_log_file

    log = ORACLE / "variety-0" / "00000000000000000000.log"
    walks = Walks(monkeypatch)
    records = open_log_file(log)
    try:
        assert sum(run.n for run in records.walk()) > 0
        first = next(iter(records.walk())).end
        list(records.walk(first))
    finally:
        records.close()
    assert walks.counted == Counter({str(log): 2})
