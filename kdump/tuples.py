"""``NamedTuple``, typing's, built for a fraction of its cost at import.

kdump's records are NamedTuples (a frozen dataclass costs ten times as much to define), and a
verify defines ~60 of them before it reads a byte. typing's ``NamedTuple`` spends most of that
on two things no run needs: it checks every field's annotation (under ``from __future__ import
annotations`` each one a string it compiles into a ``ForwardRef``: ~300 ``compile()`` calls on
verify's path), and ``collections.namedtuple`` compiles each class's ``__new__`` from source
(another ~60, the largest single cost of a verify's start-up after the modules themselves).

So mypy reads typing's ``NamedTuple`` here, and a run gets a class that behaves as
``collections.namedtuple``'s (a tuple subclass with the same ``__new__`` signature, defaults,
field descriptors, ``_make``, ``_replace``, ``_asdict``, ``_fields``, ``_field_defaults``,
``__match_args__``, repr and pickling), the class body's methods, properties and docstring on
it, its annotations kept as written. Its ``__new__`` is compiled once per number of fields and
renamed for each class (``CodeType.replace``), so construction runs the same code as
namedtuple's: ``tuple.__new__(cls, (field, ...))``.

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
    from functools import cache
    from types import FunctionType

    try:
        from _collections import _tuplegetter  # namedtuple's own field descriptor, in C
    except ImportError:  # pragma: no cover - a Python without it
        from operator import itemgetter

        def _tuplegetter(index, doc):
            return property(itemgetter(index), doc=doc)

    _tuple_new = tuple.__new__
    _NEW_GLOBALS = {"_tuple_new": _tuple_new, "__builtins__": {}}

    # as typing's NamedTupleMeta: what a class body may not set, and what it sets that is not
    # copied onto the class
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
         "_make", "_replace", "_asdict", "_source"}
    )  # fmt: skip
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    @cache
    def _new_code(arity):
        """``__new__(_cls, _0, _1, ...)`` of ``arity`` fields, compiled once per arity."""
        args = "".join(f"_{i}, " for i in range(arity))
        namespace = {}
        exec(f"def __new__(_cls, {args}):\n    return _tuple_new(_cls, ({args}))", namespace)
        return namespace["__new__"].__code__

    @classmethod
    def _make(cls, iterable):
        """A new instance from a sequence or iterable of the fields' values."""
        made = _tuple_new(cls, iterable)
        if len(made) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(made)}")
        return made

    def _replace(self, /, **changes):
        """A new instance with the named fields replaced."""
        values = [changes.pop(name, value) for name, value in zip(self._fields, self, strict=True)]
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return _tuple_new(type(self), values)

    def _asdict(self):
        """The fields by name, in order."""
        return dict(zip(self._fields, self, strict=True))

    def _repr(self):
        shown = ", ".join(
            f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True)
        )
        return f"{type(self).__name__}({shown})"

    def _getnewargs(self):
        """The fields as a plain tuple (how copy and pickle make one again)."""
        return tuple(self)

    class _NamedTupleMeta(type):
        def __new__(cls, typename, bases, ns):
            if bases != (NamedTuple,):
                raise TypeError("a NamedTuple inherits from NamedTuple alone")
            annotations = ns.get("__annotations__", {})
            fields = tuple(annotations)
            defaults = []
            for name in fields:
                if name.startswith("_"):
                    raise ValueError(f"Field names cannot start with an underscore: {name!r}")
                if name in ns:
                    defaults.append(ns[name])
                elif defaults:
                    raise TypeError(f"Non-default namedtuple field {name} follows a default")
            new = FunctionType(
                _new_code(len(fields)).replace(co_varnames=("_cls", *fields)),
                _NEW_GLOBALS,
                "__new__",
                tuple(defaults) or None,
            )
            new.__qualname__ = f"{typename}.__new__"
            namespace = {
                "__module__": ns["__module__"],
                "__doc__": f"{typename}({', '.join(fields)})",
                "__slots__": (),
                "_fields": fields,
                "_field_defaults": dict(
                    zip(fields[len(fields) - len(defaults) :], defaults, strict=True)
                ),
                "__new__": new,
                "_make": _make,
                "_replace": _replace,
                "__repr__": _repr,
                "_asdict": _asdict,
                "__getnewargs__": _getnewargs,
                "__match_args__": fields,
            }
            for index, name in enumerate(fields):
                namespace[name] = _tuplegetter(index, f"Alias for field number {index}")
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in annotations:
                    namespace[key] = value
            built = type(typename, (tuple,), namespace)
            built.__annotations__ = dict(annotations)
            return built

    NamedTuple = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})
