"""HTTP dates (RFC 1123, "Mon, 23 Nov 2026 10:00:00 GMT") both ways, as the email package reads
and writes them, without importing it, `datetime` or `calendar`: every request carries a date
and every listed blob has one, and those imports cost a short sync more than its own work."""

from __future__ import annotations

import time

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_NUMBER = {name: i for i, name in enumerate(_MONTHS, 1)}
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def format_date(seconds: float | None = None) -> str:
    """`email.utils.formatdate(seconds, usegmt=True)`: now, or the given seconds since the epoch."""
    t = time.gmtime(seconds)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year:04d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )


def parse_date(value: str) -> float:
    """Seconds since the epoch of an HTTP date. The GMT form Azure sends is read here; anything
    else (other zones, obsolete forms, impossible dates) goes to the email package's parser."""
    try:
        _, day, month, year, clock, zone = value.split()
        hour, minute, second = (int(part) for part in clock.split(":"))
        y, m, d = int(year), _MONTH_NUMBER[month], int(day)
        valid_day = y >= 1 and 1 <= d <= _days_in(y, m)
        valid_clock = 0 <= hour < 24 and 0 <= minute < 60 and 0 <= second < 60
        if zone == "GMT" and valid_day and valid_clock:
            return float(_days_since_epoch(y, m, d) * 86400 + hour * 3600 + minute * 60 + second)
    except (ValueError, KeyError):
        pass
    from email.utils import parsedate_to_datetime

    return parsedate_to_datetime(value).timestamp()


def _days_in(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _MONTH_DAYS[month - 1]


def _days_since_epoch(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468
