"""The one rule for session digest file names: `session_digest_<label>.md`, where the label is
a day (2026-04-17), an ISO week (2026-W16), a month (2026-04) or a year (2026). The registry
(memtypes), the primer, the digest writer and the roll-ups (retention/compact) read and write
names by it, so a digest one of them writes is the one the others find."""

from __future__ import annotations

import re
from datetime import date

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
