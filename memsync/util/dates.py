"""Times as memsync shows them to the user: local time, to the second."""

from __future__ import annotations

import time


def local_time(ts: float | None) -> str:
    """A time (seconds since the epoch) as `2026-04-17 14:03:09` in local time; "never" for
    a time that was never set (None or 0)."""
    if not ts:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
