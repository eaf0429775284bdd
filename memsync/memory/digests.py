"""The one rule for session digest file names: `session_digest_<label>.md`, where the label is
a day (2026-04-17), an ISO week (2026-W16), a month (2026-04) or a year (2026). The registry
(memtypes), the primer, the digest writer and the roll-ups (retention/compact) read and write
names by it, so a digest one of them writes is the one the others find."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, timedelta

# the label's parts are named groups: day | wy + wn (ISO year and week) | month | year
LABEL = (
    r"(?:(?P<day>\d{4}-\d{2}-\d{2})|(?P<wy>\d{4})-W(?P<wn>\d{2})"
    r"|(?P<month>\d{4}-\d{2})|(?P<year>\d{4}))"
)
PATTERN = rf"session_digest_{LABEL}\.md"  # over a base name, whole
NAME = re.compile(PATTERN)


def digest_name(label: str | date) -> str:
    """The file name of the digest for a day, or for a roll-up's period label."""
    return f"session_digest_{label.isoformat() if isinstance(label, date) else label}.md"


def is_rollup(path: str) -> bool:
    """A week's, month's or year's digest (compaction's roll-up), by its file name."""
    m = NAME.fullmatch(path.rsplit("/", 1)[-1])
    return m is not None and m.group("day") is None


def digest_day(basename: str) -> str | None:
    """The day (ISO date) of a daily digest's file name; None for any other name."""
    m = NAME.fullmatch(basename)
    return m.group("day") if m else None


def span(name: str) -> tuple[date, date] | None:
    """The first and last day a dated digest (by its name, folder and all) covers; None for
    any other name."""
    m = NAME.fullmatch(name.rsplit("/", 1)[-1])
    try:
        if m is None:
            return None
        if m.group("day"):
            day = date.fromisoformat(m.group("day"))
            return day, day
        if m.group("wy"):
            monday = date.fromisocalendar(int(m.group("wy")), int(m.group("wn")), 1)
            return monday, monday + timedelta(days=6)
        if m.group("month"):
            first = date.fromisoformat(m.group("month") + "-01")
            following = (first + timedelta(days=32)).replace(day=1)
            return first, following - timedelta(days=1)
        year = int(m.group("year"))
        return date(year, 1, 1), date(year, 12, 31)
    except ValueError:
        return None


def rolled_up(deleted: Iterable[str], present: Iterable[str]) -> set[str]:
    """The digests among `deleted` that a roll-up among `present` covers (same folder, the
    digest's days inside the roll-up's): what a compaction deletes once it rolled them up,
    not a loss. Read from the names alone."""
    rollups: dict[str, list[tuple[str, date, date]]] = {}
    for name in present:
        days = span(name)
        if days is not None and is_rollup(name):
            rollups.setdefault(name.rpartition("/")[0], []).append((name, *days))
    found = set()
    for name in deleted:
        days = span(name)
        if days is None:
            continue
        for rollup, start, end in rollups.get(name.rpartition("/")[0], []):
            if rollup != name and start <= days[0] <= days[1] <= end:
                found.add(name)
                break
    return found
