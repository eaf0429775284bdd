"""What compaction keeps and for how long: the policy, the periods session digests roll up
into, and the actions a plan is made of.

A daily digest older than 7 days goes into its ISO week's roll-up; a week that ended more than 30
days ago goes into monthly roll-ups (each day into its own month); a month that ended more than
365 days ago goes into its year's roll-up, kept forever."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from memsync.memory import digests

WRITE = "write"  # a new file (a roll-up)
UPDATE = "update"  # an existing file rewritten
DELETE = "delete"  # a source whose content is in the roll-ups listed in `into`


@dataclass(frozen=True)
class Policy:
    """Ages are in whole days: a thing is due when `(now - its date).days` exceeds the limit."""

    daily_days: int = 7  # a daily digest older than this joins its weekly roll-up
    weekly_days: int = 30  # a week that ended longer ago than this joins its monthly roll-up
    monthly_days: int = 365  # a month that ended longer ago than this joins its yearly roll-up
    voice_days: int = 30  # dated voice calibration sections fold into "Rules learned"
    drafts_days: int = 30  # dated unsent drafts sections are dropped
    delivered_keep: int = 5  # Delivered commitments kept
    callback_idle_days: int = 180  # an Active callback not mentioned for this long retires
    retired_days: int = 180  # a callback retired this long ago is pruned
    dormant_days: int = 90  # philosophical threads untouched this long become dormant


DEFAULT_POLICY = Policy()


@dataclass
class Action:
    kind: str  # write | update | delete
    name: str
    reason: str  # one sentence for the user
    content: bytes | None = None  # the new bytes (None for a delete)
    sources: list[str] = field(default_factory=list)  # files whose content this write holds
    into: list[str] = field(default_factory=list)  # for a delete: the roll-ups holding it
    expected: str | None = None  # sha256 of the file when planned (None: it did not exist)
    reworded: int = 0  # roll-up entries given the wording of a digest that came back


TIERS = ("day", "week", "month", "year")
TIER_WORD = {"week": "weekly", "month": "monthly", "year": "yearly"}


@dataclass(frozen=True)
class Period:
    tier: str  # day | week | month | year
    label: str  # 2026-04-17 | 2026-W16 | 2026-04 | 2026
    start: date
    end: date


def day_period(d: date) -> Period:
    return Period("day", d.isoformat(), d, d)


def week_period(d: date) -> Period:
    year, week, weekday = d.isocalendar()
    monday = d - timedelta(days=weekday - 1)
    return Period("week", f"{year}-W{week:02d}", monday, monday + timedelta(days=6))


def month_period(d: date) -> Period:
    first = d.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return Period("month", f"{d.year}-{d.month:02d}", first, following - timedelta(days=1))


def year_period(d: date) -> Period:
    return Period("year", str(d.year), date(d.year, 1, 1), date(d.year, 12, 31))


def parse_label(label: str) -> Period | None:
    """The period a roll-up label or a `## <label>` heading stands for."""
    m = digests.NAME.fullmatch(digests.digest_name(label.strip()))
    if m is None:
        return None
    try:
        if m.group("day"):
            return day_period(date.fromisoformat(m.group("day")))
        if m.group("wy"):
            return week_period(date.fromisocalendar(int(m.group("wy")), int(m.group("wn")), 1))
        if m.group("month"):
            return month_period(date.fromisoformat(m.group("month") + "-01"))
        return year_period(date(int(m.group("year")), 1, 1))
    except ValueError:
        return None


def digest_period(name: str) -> Period | None:
    """The period a session digest file covers, from its name (None: not a dated digest)."""
    basename = name.rsplit("/", 1)[-1]
    m = re.fullmatch(r"session_digest_(.+)\.md", basename)
    if m is None:
        return None
    period = parse_label(m.group(1))
    return period if period is not None and period.label == m.group(1) else None


def rollup_name(prefix: str, period: Period) -> str:
    return prefix + digests.digest_name(period.label)


def is_due(period: Period, now: date, policy: Policy) -> bool:
    if period.tier == "day":
        return (now - period.start).days > policy.daily_days
    if period.tier == "week":
        return (now - period.end).days > policy.weekly_days
    if period.tier == "month":
        return (now - period.end).days > policy.monthly_days
    return False


def route(d: date, now: date, policy: Policy = DEFAULT_POLICY) -> Period:
    """The roll-up a day's content belongs in today: the smallest period not yet due."""
    month = month_period(d)
    if is_due(month, now, policy):
        return year_period(d)
    week = week_period(d)
    if is_due(week, now, policy):
        return month
    return week


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
