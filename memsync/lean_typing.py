"""`typing.NamedTuple` and `typing.Protocol` for the modules on every sync's path, without
importing `typing`.

A no-op sync is mostly Python start-up: `import typing` costs ~4 ms here, and each
`typing.NamedTuple` class ~0.4 ms more (it turns every annotation into a compiled ForwardRef),
about a tenth of the whole process (docs/benchmarks.md). Type checkers see the originals (they
read `TYPE_CHECKING` as true); at run time `NamedTuple` builds the same `collections.namedtuple`
class with the same class syntax, and `Protocol` is a plain base class: memsync never checks a
protocol at run time. Names used only in annotations are imported under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without the import

if TYPE_CHECKING:
    from typing import NamedTuple, Protocol
else:
    _CLASS_KEYS = frozenset({"__module__", "__qualname__", "__annotations__", "__doc__"})

    class _NamedTupleMeta(type):
        """Turns `class Entry(NamedTuple): key: str; size: int = 0` into
        `namedtuple("Entry", ["key", "size"], defaults=[0])` with the class's methods, as
        typing.NamedTupleMeta does."""

        def __new__(mcls, name: str, bases: tuple, namespace: dict) -> type:
            if not bases:  # NamedTuple itself
                return super().__new__(mcls, name, bases, namespace)
            fields = list(namespace.get("__annotations__", {}))
            defaults = [namespace[f] for f in fields if f in namespace]
            if any(f in namespace for f in fields[: len(fields) - len(defaults)]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            cls = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            cls.__annotations__ = namespace.get("__annotations__", {})
            cls.__doc__ = namespace.get("__doc__") or cls.__doc__
            for key, value in namespace.items():
                if key not in fields and key not in _CLASS_KEYS:
                    setattr(cls, key, value)  # methods, properties, class attributes
            return cls

    class NamedTuple(metaclass=_NamedTupleMeta):
        pass

    class Protocol:
        """A documentation base at run time: implementations need not inherit from it."""


__all__ = ["TYPE_CHECKING", "NamedTuple", "Protocol"]
