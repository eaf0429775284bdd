"""memsync's run-time NamedTuple builds what typing.NamedTuple builds, from the same class body."""

from __future__ import annotations

import typing

import pytest

from memsync import lean_typing


def _make(base: type) -> type:
    class Point(base):  # type: ignore[misc, valid-type]
        """A point on a line, with a label."""

        x: int
        label: str = "origin"
        weight: float = 1.0

        @property
        def shifted(self) -> int:
            return self.x + 1

        @classmethod
        def parse(cls, text: str) -> Point:
            x, label = text.split(":")
            return cls(int(x), label)

        def describe(self) -> str:
            return f"{self.label}@{self.x}"

    return Point


LEAN, TYPED = _make(lean_typing.NamedTuple), _make(typing.NamedTuple)


@pytest.mark.parametrize("args, kwargs", [((3,), {}), ((3, "a"), {}), ((3,), {"weight": 2.5})])
def test_the_same_class_body_makes_the_same_tuple(args, kwargs):
    lean, typed = LEAN(*args, **kwargs), TYPED(*args, **kwargs)
    assert tuple(lean) == tuple(typed) and repr(lean) == repr(typed)
    assert lean._asdict() == typed._asdict() and LEAN._fields == TYPED._fields
    assert LEAN._field_defaults == TYPED._field_defaults
    assert lean._replace(x=9) == typed._replace(x=9)
    assert (lean.shifted, lean.describe()) == (typed.shifted, typed.describe())
    assert LEAN.parse("4:b") == TYPED.parse("4:b") == (4, "b", 1.0)
    assert hash(lean) == hash(typed) and lean == LEAN(*args, **kwargs)


def test_the_class_keeps_its_name_module_docstring_and_annotations():
    assert (LEAN.__name__, LEAN.__module__) == ("Point", __name__)
    assert LEAN.__doc__ == "A point on a line, with a label."
    assert LEAN.__annotations__ == {"x": "int", "label": "str", "weight": "float"}  # not evaluated
    assert issubclass(LEAN, tuple)


def test_fields_cannot_be_reassigned():
    point = LEAN(1)
    with pytest.raises(AttributeError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        LEAN()  # the field without a default is required


def test_a_field_without_a_default_after_one_with_a_default_is_refused_as_typing_refuses_it():
    for base in (typing.NamedTuple, lean_typing.NamedTuple):
        with pytest.raises(TypeError):

            class Bad(base):  # type: ignore[misc, valid-type]
                a: int = 0
                b: int
