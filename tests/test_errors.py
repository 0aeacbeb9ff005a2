"""Every exception kdump defines is in kdump.errors, under KdumpError (issue 26): one place to
read what kdump can raise, and one ``except KdumpError`` that catches all of it. Interrupted is
the one exception outside it, by design (a stop signal is a KeyboardInterrupt); the private
``_Stopped`` signals never leave the function that raises them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import kdump
from kdump import errors
from kdump.errors import Interrupted, KdumpError


def kdump_modules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(kdump.__path__, "kdump.")]
    return [importlib.import_module(name) for name in names if name != "kdump.__main__"]


def exceptions_defined_in(module: ModuleType) -> list[type[BaseException]]:
    return [
        obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == module.__name__
        and not name.startswith("_")
    ]


def test_every_exception_is_defined_in_kdump_errors() -> None:
    elsewhere = [
        f"{e.__module__}.{e.__qualname__}"
        for module in kdump_modules()
        if module is not errors
        for e in exceptions_defined_in(module)
    ]
    assert not elsewhere


def test_every_exception_but_interrupted_is_a_kdump_error() -> None:
    outside = [e for e in exceptions_defined_in(errors) if not issubclass(e, KdumpError)]
    assert outside == [Interrupted]
    assert issubclass(Interrupted, KeyboardInterrupt)
