"""The command line every page generator has (scripts/make_*_doc.py, make_manpage.py): write
the page, or with --check only say whether the committed one is stale (exit 1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def write_or_check(description: str, path: Path, text: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"only check {path.name}")
    args = parser.parse_args()
    if args.check:
        stale = not path.exists() or path.read_text() != text
        if stale:
            print(f"{path} is stale: run {sys.argv[0]}", file=sys.stderr)
        return int(stale)
    path.write_text(text)
    print(f"wrote {path}")
    return 0
