#!/bin/sh
# What the test suite needs from the system rather than from PyPI: Debian's chromium and
# chromium-driver, for the browser tests of `kdump report` (tests/test_report_browser.py).
# Installs them where missing (apt-get, as root or through password-less sudo); a no-op where
# they are there. Never fails the run: where they cannot be installed (no apt, not root, no
# network), it says why and the browser tests skip, naming the reason.
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
say() { echo "ensure-test-system-deps: $*; the browser tests will skip" >&2; }
if ! command -v apt-get >/dev/null 2>&1; then
    say "no apt-get here to install chromium and chromium-driver"
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    run=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    run="sudo -n"
else
    say "not root and no password-less sudo to install chromium and chromium-driver"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$run apt-get update -qq >/dev/null 2>&1
if ! $run apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
    say "apt-get install chromium chromium-driver failed"
fi
exit 0
