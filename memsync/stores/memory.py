"""An in-memory store: the reference implementation of the protocol, for tests and simulations."""

from __future__ import annotations

import itertools
import threading
import time
from typing import ClassVar

from memsync.stores.base import Entry, Stats, Store, check_key
from memsync.util.errors import AlreadyExists, NotFound, PreconditionFailed


class MemoryStore(Store):
    """Objects in a dict; ETags are a counter, so rewriting identical bytes still moves the ETag
    (as on Azure)."""

    _named: ClassVar[dict[str, dict[str, tuple[bytes, str, float]]]] = {}
    _edited: ClassVar[dict[int, dict[str, float]]] = {}
    _counter = itertools.count(1)

    def __init__(
        self, prefix: str = "", objects: dict[str, tuple[bytes, str, float]] | None = None
    ) -> None:
        self.url = f"memory://{prefix}"
        self.prefix = prefix
        self.objects: dict[str, tuple[bytes, str, float]] = {} if objects is None else objects
        # the writers' edit times, by key (shared like `objects` between openers of a name)
        self.edited: dict[str, float] = self._edited.setdefault(id(self.objects), {})
        self.stats = Stats()
        self._lock = threading.Lock()
        self.remote_name: str | None = None  # set by `named`: its projects can be listed

    def projects(self) -> tuple[str, ...] | None:
        if self.remote_name is None:
            return None
        self.stats.count("list")
        start = f"{self.remote_name}/"
        named = list(self._named.items())
        return tuple(
            sorted(
                key[len(start) :]
                for key, objects in named
                if key.startswith(start) and objects and "/" not in key[len(start) :]
            )
        )

    @classmethod
    def named(cls, name: str, prefix: str) -> MemoryStore:
        """A store shared by every opener of the same name within this process."""
        store = cls(prefix, cls._named.setdefault(f"{name}/{prefix}", {}))
        store.remote_name = name
        return store

    def _etag(self) -> str:
        return f'"m{next(self._counter)}"'

    def list(self) -> dict[str, Entry]:
        self.stats.count("list")
        with self._lock:
            items = list(self.objects.items())
        return {k: Entry(k, etag, len(data), mtime) for k, (data, etag, mtime) in items}

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        check_key(key)
        self.stats.count("get")
        with self._lock:
            if key not in self.objects:
                raise NotFound(f"{key} is not on the remote")
            data, etag, _ = self.objects[key]
            edited = self.edited.get(key)
        self.stats.bytes_down += len(data)
        return data, etag, edited

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        check_key(key)
        self.stats.count("put", up=len(data))
        with self._lock:
            if key in self.objects:
                raise AlreadyExists(f"{key} already exists on the remote")
            etag = self._etag()
            self.objects[key] = (bytes(data), etag, time.time())
            self._set_edited(key, edited)
            return etag

    def _set_edited(self, key: str, edited: float | None) -> None:
        if edited is None:
            self.edited.pop(key, None)
        else:
            self.edited[key] = edited

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        check_key(key)
        self.stats.count("put", up=len(data))
        with self._lock:
            current = self.objects.get(key)
            if current is None or current[1] != etag:
                raise PreconditionFailed(f"{key} changed on the remote")
            new = self._etag()
            self.objects[key] = (bytes(data), new, time.time())
            self._set_edited(key, edited)
            return new

    def delete(self, key: str, etag: str) -> None:
        check_key(key)
        self.stats.count("delete")
        with self._lock:
            current = self.objects.get(key)
            if current is None:
                raise NotFound(f"{key} is not on the remote")
            if current[1] != etag:
                raise PreconditionFailed(f"{key} changed on the remote")
            del self.objects[key]

    def exists(self) -> bool:
        return True

    def ensure(self) -> None:
        pass

    def close(self) -> None:
        pass
