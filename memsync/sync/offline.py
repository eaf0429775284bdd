"""Carry "the remote is unreachable" from one hook to the next.

Offline, every sync waits out its store's retries (seconds per hook, every turn). A hook that
finds the remote unreachable writes a marker in the state dir; hooks within its TTL skip the
network: they queue their changes at once through a store that answers Unreachable. After the
TTL one cheap probe (a TCP connect with a short timeout, or a look at the folder) decides: still
down renews the marker, up removes it and the hook syncs as usual. A sync that reaches the
remote removes the marker too.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from memsync.stores.base import Stats, Store
from memsync.util.errors import Unreachable

TTL = 60.0  # seconds a hook trusts a marker without probing
PROBE_TIMEOUT = 0.3


def _marker(state_dir: Path) -> Path:
    return state_dir / "offline.json"


def read(state_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(_marker(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("reason"), str) else None


def note(state_dir: Path, reason: str) -> None:
    """Record that the remote was unreachable just now."""
    from memsync.util.fsutil import atomic_write, private_dir

    private_dir(state_dir)
    atomic_write(_marker(state_dir), json.dumps({"at": time.time(), "reason": reason}).encode())


def clear(state_dir: Path) -> None:
    with contextlib.suppress(OSError):
        _marker(state_dir).unlink()


def probe(remote: str) -> str | None:
    """Why `remote` looks unreachable, from one cheap attempt; None if it answers."""
    parts = urlsplit(remote)
    if parts.scheme == "file":
        path = unquote(parts.path)
        return None if os.path.isdir(path) else f"the folder {path} is not there"
    if parts.scheme in ("http", "https") and parts.hostname:
        import socket  # a hook on a folder remote never probes a host

        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((parts.hostname, port), timeout=PROBE_TIMEOUT):
                return None
        except OSError as exc:
            return f"{parts.hostname}:{port}: {exc.strerror or exc}"
    return None


def known_offline(state_dir: Path, remote: str, ttl: float = TTL) -> str | None:
    """The reason to skip the network now, or None to try it. Probes once the marker is older
    than `ttl`, renewing or removing it."""
    marker = read(state_dir)
    if marker is None:
        return None
    age = time.time() - float(marker.get("at") or 0)
    if 0 <= age < ttl:
        return marker["reason"]
    why = probe(remote)
    if why is None:
        clear(state_dir)
        return None
    note(state_dir, marker["reason"])
    return marker["reason"]


def after(state_dir: Path, offline: str | None) -> None:
    """Keep the marker in step with what a sync that used the network found."""
    if offline:
        note(state_dir, offline)
    elif _marker(state_dir).exists():
        clear(state_dir)


class OfflineStore(Store):
    """A store that is known to be unreachable: every call raises at once, so the engine queues
    what it would have sent (its usual offline path) without touching the network."""

    def __init__(self, reason: str, url: str = "") -> None:
        self.reason = reason
        self.url = url
        self.stats = Stats()

    def _down(self, *args: Any, **kwargs: Any) -> Any:
        raise Unreachable(self.reason)

    list = get = fetch = create = replace = delete = exists = ensure = _down

    def close(self) -> None:
        pass
