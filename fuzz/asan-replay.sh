#!/bin/sh
# kdump's C code (kdump/_speedups.c) under AddressSanitizer and UndefinedBehaviorSanitizer:
# builds it with both into a copy of the package, then runs tests/test_speedups.py (and the
# walk's read-ahead and CRC-sharing threads from tests/test_walk.py, the log cleaner's loops
# against their Python twin, tests/test_compact_speedups.py, and every entry point given what
# it must refuse, tests/hostile/test_entry_points.py) and replays
# the `speedups` fuzz corpus (fuzz/out/corpus/speedups, grown by fuzz/run.py speedups) and every
# fixture .log through it. Any out-of-bounds read or undefined behaviour aborts with a report.
#
#   fuzz/asan-replay.sh            # from the repository root, with .venv set up
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

cp -r "$root/kdump" "$root/tests" "$root/fuzz" "$root/fixtures" "$root/pyproject.toml" "$work/"
rm -rf "$work"/kdump/_speedups*.so "$work/fuzz/out"
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
cc -shared -fPIC -std=c99 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    -I"$include" "$root/kdump/_speedups.c" -o "$work/kdump/_speedups$suffix"

LD_PRELOAD="$(cc -print-file-name=libasan.so):$(cc -print-file-name=libubsan.so)"
ASAN_OPTIONS=detect_leaks=0
PYTHONPATH=$work
export LD_PRELOAD ASAN_OPTIONS PYTHONPATH
cd "$work"
"$python" -c 'import kdump, kdump.speedups as s; assert kdump.__file__.startswith("'"$work"'") and s.native'
"$python" -m pytest -q -p no:cacheprovider tests/test_speedups.py -k "not suite_passes"
"$python" -m pytest -q -p no:cacheprovider tests/test_walk.py -k "read_ahead or reading_ahead or share"
"$python" -m pytest -q -p no:cacheprovider tests/test_compact_speedups.py
"$python" -m pytest -q -p no:cacheprovider tests/hostile/test_entry_points.py
mkdir -p "$root/fuzz/out/corpus/speedups"
"$python" fuzz/run.py speedups -runs=0 "$root/fuzz/out/corpus/speedups"
echo "asan-replay: clean"
