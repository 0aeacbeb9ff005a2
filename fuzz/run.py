"""Coverage-guided fuzzing of one kdump target with atheris.

    .venv/bin/python fuzz/run.py TARGET [libFuzzer flags, e.g. -max_total_time=600]

TARGET is one of fuzz/targets.py's TARGETS. The corpus is fuzz/corpus/TARGET (seeded from the
fixtures and the hostile inputs of tests/hostile on the first run); inputs that crash are
written there as crash-* files: keep them, they become regression cases of tests/test_fuzz.py.
fuzz/dictionaries/TARGET.dict, where there is one, is given as libFuzzer's -dict.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parent.parent

with atheris.instrument_imports(include=["kdump"]):
    sys.path.insert(0, str(ROOT / "fuzz"))
    from targets import TARGETS, seeds


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: run.py {{{','.join(TARGETS)}}} [libFuzzer flags]")
    target = sys.argv[1]
    corpus = ROOT / "fuzz" / "corpus" / target
    corpus.mkdir(parents=True, exist_ok=True)
    seed_dir = ROOT / "fuzz" / "out" / "seeds" / target
    seed_dir.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(seeds(target, ROOT)):
        (seed_dir / f"seed-{i:04d}").write_bytes(data)
    work = ROOT / "fuzz" / "out" / "corpus" / target
    work.mkdir(parents=True, exist_ok=True)
    dirs = [str(work), str(seed_dir), str(corpus)]
    flags = sys.argv[2:]
    dictionary = ROOT / "fuzz" / "dictionaries" / f"{target}.dict"
    if dictionary.exists() and not any(f.startswith("-dict=") for f in flags):
        flags.append(f"-dict={dictionary}")
    args = [sys.argv[0], *flags, f"-artifact_prefix={corpus}/", *dirs]
    atheris.Setup(args, TARGETS[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
