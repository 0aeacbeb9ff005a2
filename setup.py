"""kdump's optional C fast paths (kdump/_speedups.c); everything else is in pyproject.toml.

The C code keeps to the stable ABI of Python 3.11 (buffers joined it in 3.11), so one
``abi3`` build serves 3.11 and every later Python; 3.10 gets a build of its own, and a
free-threaded Python (no stable ABI there yet) too. Where the module does not build (no C
compiler, no Python headers), kdump installs without it and runs its pure-Python code.
"""

import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

STABLE_ABI = sys.version_info >= (3, 11) and not sysconfig.get_config_var("Py_GIL_DISABLED")


class BuildExt(build_ext):
    """An in-place build (an editable install) also removes the module's builds for other
    tags: Python imports ``_speedups.cpython-311-….so`` before ``_speedups.abi3.so``, so a
    build left from before the stable ABI would shadow every later one."""

    def run(self) -> None:
        super().run()
        if not self.inplace:
            return
        for ext in self.extensions:
            built = Path(self.get_ext_fullpath(ext.name))
            for other in built.parent.glob(built.name.split(".", 1)[0] + ".*.so"):
                if other.name != built.name and built.exists():
                    other.unlink()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "kdump._speedups",
            ["kdump/_speedups.c"],
            optional=True,
            # a function outside the stable ABI is an error here, not a module that fails to load
            extra_compile_args=["-O2", "-std=c99", "-Werror=implicit-function-declaration"],
            py_limited_api=STABLE_ABI,
            define_macros=[("Py_LIMITED_API", "0x030B0000")] if STABLE_ABI else [],
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if STABLE_ABI else {},
)
