"""kdump.tuples.NamedTuple against typing's: the same class in every way a run can tell."""

from __future__ import annotations

import copy
import pickle
import typing
from typing import Any

import pytest

from kdump.tuples import NamedTuple


def record(base: Any, name: str) -> Any:
    """The same class body on ``base``: kdump's NamedTuple or typing's."""

    class Record(base):  # type: ignore[misc, valid-type]
        """A record."""

        __qualname__ = name  # found by pickle as this module's ``name``
        offset: int
        position: int = 0
        path: str | None = None

        @property
        def end(self) -> int:
            return self.offset + self.position

        def moved(self, by: int) -> Any:
            return self._replace(position=self.position + by)

    Record.__name__ = name
    return Record


Ours = record(NamedTuple, "Ours")
Theirs = record(typing.NamedTuple, "Theirs")


class One(NamedTuple):
    only: int


class Bare(NamedTuple):
    pass


@pytest.mark.parametrize("cls", [Ours, Theirs])
def test_a_record_behaves_as_typings(cls: type) -> None:
    r = cls(5, path="p")
    assert r == (5, 0, "p") and isinstance(r, tuple) and hash(r) == hash((5, 0, "p"))
    assert (r.offset, r.position, r.path, r.end) == (5, 0, "p", 5)
    assert repr(r) == f"{cls.__name__}(offset=5, position=0, path='p')"
    assert r.moved(3) == cls(5, 3, "p") and type(r.moved(3)) is cls
    assert r._asdict() == {"offset": 5, "position": 0, "path": "p"}
    assert cls._make([1, 2, 3]) == cls(1, 2, 3)
    assert cls._fields == ("offset", "position", "path") == cls.__match_args__
    assert cls._field_defaults == {"position": 0, "path": None}
    assert cls.__doc__ == "A record."
    assert cls.__module__ == __name__ and cls.__qualname__ == cls.__name__
    assert pickle.loads(pickle.dumps(r)) == r and type(pickle.loads(pickle.dumps(r))) is cls
    assert copy.copy(r) == r and copy.deepcopy(r) == r
    assert cls(offset=1, position=2, path=None) == (1, 2, None)
    match r:
        case cls(offset, position):  # type: ignore[misc]
            assert (offset, position) == (5, 0)
    with pytest.raises(TypeError):
        cls()
    with pytest.raises(TypeError):
        cls(1, 2, 3, 4)
    with pytest.raises(TypeError):
        cls(1, offset=2)
    with pytest.raises(TypeError):
        cls._make([1, 2])
    with pytest.raises(ValueError, match="unexpected field names"):
        r._replace(size=1)
    with pytest.raises(AttributeError):
        r.offset = 6  # type: ignore[misc]
    assert not hasattr(r, "__dict__")


def test_one_field_and_none() -> None:
    assert One(1) == (1,) and One(only=2).only == 2 and repr(One(3)) == "One(only=3)"
    assert Bare() == () and repr(Bare()) == "Bare()" and Bare._fields == ()


def test_what_typing_refuses_is_refused() -> None:
    with pytest.raises(TypeError):

        class Late(NamedTuple):
            a: int = 0
            b: int

    with pytest.raises(AttributeError):

        class Own(NamedTuple):
            a: int

            def _asdict(self) -> dict[str, int]:
                return {}

    with pytest.raises(TypeError):

        class Mixed(NamedTuple, int):  # type: ignore[misc]
            a: int
