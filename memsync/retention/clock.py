"""The day compaction counts ages from: today by this device's clock, but never more than a
day past the newest date the memory itself holds (a session digest's name, a dated section's
heading, a `modified` or `date` field). A clock that runs ahead (a flat CMOS battery, a VM
restored from a snapshot) would otherwise make today's entries look old and compact them away
on every device; ages counted from the memory's own newest date cannot run ahead of it. A
memory with nothing dated lately is compacted as of its newest date, which only keeps more."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, timedelta

from memsync.memory.sections import parse_date
from memsync.retention.policy import digest_period

MARGIN = timedelta(days=1)  # a device a time zone ahead writes tomorrow's date today

_HEADING = re.compile(rb"^#{1,6}[ \t]+(\d{4}-\d{2}-\d{2})", re.M)
_FIELD = re.compile(rb"^[ \t]*(?:modified|date)[ \t]*:[ \t]*['\"]?(\d{4}-\d{2}-\d{2})", re.M)


def newest_date(files: Mapping[str, bytes]) -> date | None:
    """The newest date the memory files hold, in the places memsync and Claude Code date them."""
    found: list[date] = []
    for name, data in files.items():
        period = digest_period(name)
        if period is not None:
            found.append(period.end)
        head = data[: data.find(b"\n---", 3) + 1] if data.startswith(b"---") else b""
        for m in (*_HEADING.finditer(data), *_FIELD.finditer(head)):
            day = parse_date(m.group(1).decode())
            if day is not None:
                found.append(day)
    return max(found, default=None)


def compaction_day(
    files: Mapping[str, bytes], clock: date, given: date | None = None
) -> tuple[date, str | None]:
    """The day to plan compaction for (`given`: the user's `--now`, taken as it is), and, when
    the clock is past what the memory holds by more than MARGIN, a sentence saying so and
    what was held back."""
    if given is not None:
        return given, None
    newest = newest_date(files)
    if newest is None or clock <= newest + MARGIN:
        return clock, None
    from memsync.retention.compact import plan

    day = newest + MARGIN
    held = len(plan(files, clock)) - len(plan(files, day))
    waiting = f": {held} action(s) wait for newer memory" if held > 0 else ""
    note = (
        f"ages are counted from {day.isoformat()}, the day after the newest date the memory "
        f"holds, not from this device's {clock.isoformat()}{waiting} (if the clock is wrong, "
        "set it right; --now DATE overrides)"
    )
    return day, note
