"""The C module's CRC-32C on ARMv8's CRC instructions (the aarch64 wheels, issue 34), checked
on this x86-64 machine: tests/crc_harness.c, with kdump/_speedups.c in it, cross-compiled for
aarch64 and run under QEMU's user-mode emulator against the module's own table-driven CRC.
Debian's gcc-aarch64-linux-gnu and qemu-user-static (scripts/ensure-test-system-deps.sh); the
test skips where they are not installed."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO

CC, QEMU = "aarch64-linux-gnu-gcc", "qemu-aarch64-static"


@pytest.mark.skipif(
    shutil.which(CC) is None or shutil.which(QEMU) is None,
    reason=f"no {CC} or {QEMU} (scripts/ensure-test-system-deps.sh installs them)",
)
def test_armv8_crc_instructions_give_the_table_driven_crc(tmp_path: Path) -> None:
    harness = tmp_path / "crc_harness"
    subprocess.run(
        [CC, "-O2", "-std=c99", "-static", "-Wno-unused-function",
         f"-I{REPO / 'kdump'}", f"-I{sysconfig.get_paths()['include']}",
         str(REPO / "tests" / "crc_harness.c"), "-o", str(harness),
         "-Wl,--unresolved-symbols=ignore-all"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    # -cpu max: a core with the CRC extension (optional in ARMv8.0, asked of the kernel's hwcaps)
    ran = subprocess.run(
        [QEMU, "-cpu", "max", str(harness)], capture_output=True, text=True, timeout=120
    )
    assert (ran.returncode, ran.stdout) == (0, "ARMv8 e3069283 0\n")
