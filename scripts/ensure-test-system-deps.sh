#!/bin/sh
# What the test suite needs from the system rather than from PyPI: Debian's chromium and
# chromium-driver, for the browser tests of `kdump report` (tests/test_report_browser.py), and
# Azurite's blob service from npm (azurite-blob), the Azure Blob Storage emulator of the az://
# tests (tests/test_remote_gcs_azure.py); Debian's aarch64 cross compiler and QEMU's user-mode
# emulator, for the C module's ARMv8 CRC-32C (tests/test_crc_armv8.py); Debian's libsnappy1v5,
# Google's snappy, with which kdump compact re-compresses snappy batches as Kafka's snappy-java
# does (tests/test_compact_kafka.py, tests/test_kafka_snappy.py).
# Installs them where missing (apt-get and npm, as root or through password-less sudo); a no-op
# where they are there. Never fails the run: where they cannot be installed (no apt or npm, not
# root, no network), it says why and the tests that need them skip, naming the reason.
if [ "$(id -u)" = 0 ]; then
    run=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    run="sudo -n"
else
    run="none"
fi

browser() {
    if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
        return
    fi
    say() { echo "ensure-test-system-deps: $*; the browser tests will skip" >&2; }
    if ! command -v apt-get >/dev/null 2>&1; then
        say "no apt-get here to install chromium and chromium-driver"
        return
    fi
    if [ "$run" = none ]; then
        say "not root and no password-less sudo to install chromium and chromium-driver"
        return
    fi
    export DEBIAN_FRONTEND=noninteractive
    $run apt-get update -qq >/dev/null 2>&1
    if ! $run apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
        say "apt-get install chromium chromium-driver failed"
    fi
}

azurite() {
    if command -v azurite-blob >/dev/null 2>&1; then
        return
    fi
    say() { echo "ensure-test-system-deps: $*; the az:// tests will skip" >&2; }
    if ! command -v npm >/dev/null 2>&1; then
        say "no npm here to install azurite"
        return
    fi
    if [ "$run" = none ]; then
        say "not root and no password-less sudo to install azurite globally"
        return
    fi
    if ! $run npm install -g --no-audit --no-fund --silent 'azurite@3' >/dev/null 2>&1; then
        say "npm install -g azurite failed"
    fi
}

armv8() {
    if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && command -v qemu-aarch64-static >/dev/null 2>&1; then
        return
    fi
    say() { echo "ensure-test-system-deps: $*; the ARMv8 CRC test will skip" >&2; }
    if ! command -v apt-get >/dev/null 2>&1 || [ "$run" = none ]; then
        say "no apt-get, or not root, to install gcc-aarch64-linux-gnu and qemu-user-static"
        return
    fi
    export DEBIAN_FRONTEND=noninteractive
    $run apt-get update -qq >/dev/null 2>&1
    if ! $run apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu \
        libc6-dev-arm64-cross qemu-user-static >/dev/null 2>&1; then
        say "apt-get install gcc-aarch64-linux-gnu qemu-user-static failed"
    fi
}

snappy() {
    if ldconfig -p 2>/dev/null | grep -q 'libsnappy\.so\.1 '; then
        return
    fi
    say() { echo "ensure-test-system-deps: $*; snappy batches will be compared record by record" >&2; }
    if ! command -v apt-get >/dev/null 2>&1 || [ "$run" = none ]; then
        say "no apt-get, or not root, to install libsnappy1v5"
        return
    fi
    export DEBIAN_FRONTEND=noninteractive
    $run apt-get update -qq >/dev/null 2>&1
    if ! $run apt-get install -y -qq --no-install-recommends libsnappy1v5 >/dev/null 2>&1; then
        say "apt-get install libsnappy1v5 failed"
    fi
}

browser
azurite
armv8
snappy
exit 0
