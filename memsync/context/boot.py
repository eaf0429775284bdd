"""Which boot of the machine this is: a run interrupted in the same boot left its unflushed
writes whole in the page cache; only a restart (a power cut, a crash) can tear them."""

from __future__ import annotations

import time

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str | None:
    """An id that changes at every boot (Linux), or None where there is none to read."""
    try:
        with open(_BOOT_ID, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def boot_time() -> float | None:
    """When this boot started (epoch seconds), or None where it is not known cheaply."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    if clock is None:
        return None
    return time.time() - time.clock_gettime(clock)
