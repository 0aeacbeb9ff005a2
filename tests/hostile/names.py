"""A log dir whose names hold what a shell, a terminal, HTML or a path join must not take as
their own (issue 39): ``"``, ``<``, ``;``, ``$(``, ``..``, ESC sequences, the bytes next to NUL
(0x01, 0x7f), a direction override and a byte that is not UTF-8, in the log dir's name, a
partition's topic, ``meta.properties`` and the checkpoints. Built from Kafka's files (the
oracle's txn partition) with damage that makes verify suggest every kind of fix."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import ORACLE

TOPIC = 'o"<b>;$(touch PWNED)..\x1b[31m\x01\x7f\u202e\udcff'
"""A topic as a directory name may hold it (no space: checkpoints split on whitespace)."""
LOG_DIR = 'ld"<i>;$(touch PWNED)..\x1b]0;T\x07\x01\x7f\udcfe'
CLUSTER_ID = '../../victim"><script>alert(1)</script>\x1b[2J'
"""meta.properties' cluster.id (written with Java's escapes: the reader decodes them)."""
PARTITION = f"{TOPIC}-0"


def path_of(*parts: str | Path) -> Path:
    """A path from names that may hold bytes that are not UTF-8 (surrogate-escaped)."""
    return Path(os.fsdecode(b"/".join(os.fsencode(str(p)) for p in parts)))


def _java_escaped(text: str) -> str:
    """``text`` as a Java properties value: every non-ASCII-printable character ``\\uXXXX``."""
    return "".join(c if " " <= c <= "~" else f"\\u{ord(c):04x}" for c in text)


def hostile_log_dir(root: Path) -> Path:
    """``root/LOG_DIR`` holding ``PARTITION`` (the oracle's txn-0: a hanging transaction) with
    its 63 segment's offset index gone and a torn batch after the last, meta.properties naming
    CLUSTER_ID, and checkpoints naming the topic."""
    log_dir = path_of(root, LOG_DIR)
    part = path_of(log_dir, PARTITION)
    shutil.copytree(ORACLE / "txn-0", part)
    (part / "00000000000000000063.index").unlink()
    with open(part / "00000000000000000186.log", "ab") as f:
        f.write(bytes(range(1, 40)))  # a torn batch: recover's cut
    meta = f"version=1\nnode.id=7\ncluster.id={_java_escaped(CLUSTER_ID)}\n"
    (log_dir / "meta.properties").write_text(meta)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        entry = f"0\n1\n{TOPIC} 0 0\n".encode("utf-8", "surrogateescape")
        (log_dir / name).write_bytes(entry)
    return log_dir
