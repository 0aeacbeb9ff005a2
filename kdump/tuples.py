"""``NamedTuple``, typing's, built for a third of its cost at import.

kdump's records are NamedTuples (a frozen dataclass costs ten times as much to define), and a
verify defines ~70 of them before it reads a byte. typing's ``NamedTuple`` checks every field's
annotation as it defines the class: under ``from __future__ import annotations`` each one is a
string, which it compiles into a ``ForwardRef`` (one ``compile()`` per field, ~300 on verify's
path, ~2.5 ms of its start-up). Nothing of kdump reads those checked annotations at run time;
mypy reads the source. So mypy sees typing's ``NamedTuple`` here, and a run gets the same class
(``collections.namedtuple``'s, the class body's methods, properties and docstring on it) with
its annotations kept as written.

    from kdump.tuples import NamedTuple

    class OffsetPosition(NamedTuple):
        offset: int
        position: int
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    import collections

    # as typing's NamedTupleMeta: what a class body may not set, and what the namedtuple has
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
         "_make", "_replace", "_asdict", "_source"}
    )  # fmt: skip
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _NamedTupleMeta(type):
        def __new__(cls, typename, bases, ns):
            if bases != (NamedTuple,):
                raise TypeError("a NamedTuple inherits from NamedTuple alone")
            annotations = ns.get("__annotations__", {})
            defaults = []
            for name in annotations:
                if name in ns:
                    defaults.append(ns[name])
                elif defaults:
                    raise TypeError(f"Non-default namedtuple field {name} follows a default")
            built = collections.namedtuple(
                typename, list(annotations), defaults=defaults, module=ns["__module__"]
            )
            built.__annotations__ = dict(annotations)
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in annotations:
                    setattr(built, key, value)
            return built

    NamedTuple = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})
