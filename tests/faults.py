"""A store wrapper that injects the faults a real network produces."""

from __future__ import annotations

from memsync.stores.base import Entry, Store
from memsync.util.errors import Unreachable


class FaultyStore(Store):
    """Wraps a store. Arm one fault at a time; it fires on the next matching call.

    - "refuse": the next write fails before reaching the server (nothing changes remotely).
    - "drop": the next write reaches the server and succeeds, but the answer is lost.
    - "move": another writer rewrites the object just before our next replace/delete, so our
      ETag is stale when it arrives.
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.url = inner.url
        self.stats = inner.stats
        self.armed: str | None = None
        self.fired: list[str] = []

    def arm(self, fault: str | None) -> None:
        self.armed = fault

    def _take(self, *kinds: str) -> str | None:
        if self.armed in kinds:
            fault, self.armed = self.armed, None
            self.fired.append(fault)
            return fault
        return None

    def _write(self, call, key: str, *args):
        fault = self._take("refuse", "drop")
        if fault == "refuse":
            raise Unreachable("injected: connection refused")
        out = call(key, *args)
        if fault == "drop":
            raise Unreachable("injected: connection dropped after the server accepted the write")
        return out

    def _move(self, key: str) -> None:
        if self._take("move"):
            data, etag = self.inner.get(key)
            self.inner.replace(key, data, etag)  # same bytes, new ETag

    def list(self) -> dict[str, Entry]:
        return self.inner.list()

    def get(self, key: str) -> tuple[bytes, str]:
        return self.inner.get(key)

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        return self.inner.fetch(key)

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        return self._write(self.inner.create, key, data, edited)

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        self._move(key)
        return self._write(self.inner.replace, key, data, etag, edited)

    def delete(self, key: str, etag: str) -> None:
        self._move(key)
        return self._write(self.inner.delete, key, etag)

    def exists(self) -> bool:
        return self.inner.exists()

    def ensure(self) -> None:
        self.inner.ensure()

    def close(self) -> None:
        self.inner.close()
