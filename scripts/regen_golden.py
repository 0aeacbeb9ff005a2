"""Rewrite tests/golden/ from the cases of tests/test_golden.py.

Run from anywhere (it changes to the repository root itself)::

    python scripts/regen_golden.py          # rewrite every golden file
    python scripts/regen_golden.py NAME...  # only these cases

Review every changed line against kafka-dump-log.sh's behaviour before committing
(``git diff tests/golden``): the golden files are the expected output, not a snapshot.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from test_golden import CASES, GOLDEN, golden_paths, run_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="case names (default: all)")
    args = parser.parse_args(argv)
    known = {c.name for c in CASES}
    unknown = sorted(set(args.names) - known)
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)}")
    chosen = [c for c in CASES if not args.names or c.name in args.names]
    GOLDEN.mkdir(parents=True, exist_ok=True)
    if not args.names:
        owned = {p.name for c in CASES for p in golden_paths(c)}
        for stale in GOLDEN.iterdir():
            if stale.name not in owned and not stale.name.startswith("."):
                stale.unlink()
    for c in chosen:
        ran = run_case(c)
        out_path, err_path = golden_paths(c)
        out_path.write_bytes(ran.stdout.encode("utf-8"))
        if ran.stderr:
            err_path.write_bytes(ran.stderr.encode("utf-8"))
        else:
            err_path.unlink(missing_ok=True)
        note = (
            ""
            if ran.exit_code == c.exit_code
            else f"  (exit {ran.exit_code}, case says {c.exit_code})"
        )
        print(
            f"{c.name}: {len(ran.stdout.splitlines())} stdout, "
            f"{len(ran.stderr.splitlines())} stderr lines{note}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
