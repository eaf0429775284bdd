"""HTTP dates (RFC 7231, 7.1.1.1) both ways, through the email package: every request carries
one and every listed blob has one.

A recipient reads all three forms: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, what Azure
sends), the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
(`Sun Nov  6 08:49:37 1994`). The email package reads a two-digit year by RFC 2822's rule
(00-49 → 20xx, 50-99 → 19xx); RFC 7231 says instead: the most recent year with those digits
that is not more than 50 years in the future. That rule is applied here.
"""

from __future__ import annotations

import re
import time
from datetime import timezone
from email.utils import formatdate, parsedate_to_datetime

# the year as written: after day and month (IMF-fixdate, RFC 850), or after the clock (asctime)
_YEAR = re.compile(
    r"\d{1,2}[ -][A-Za-z]{3}[ -](\d+)\b|[A-Za-z]{3} +\d{1,2} +\d{1,2}:\d{2}:\d{2} +(\d+)\b"
)


def format_date(seconds: float | None = None) -> str:
    """IMF-fixdate, now or at the given seconds since the epoch."""
    return formatdate(seconds, usegmt=True)


def parse_date(value: str, now: float | None = None) -> float:
    """Seconds since the epoch of an HTTP date in any of its three forms (a date with no zone,
    or `-0000`, is UTC). Raises ValueError for anything else, or an impossible date. `now`:
    the moment a two-digit year is read against (the present by default)."""
    moment = parsedate_to_datetime(value)  # ValueError if it is not a date
    written = _YEAR.search(value)
    year = written.group(1) or written.group(2) if written else None
    if year is not None and len(year) <= 2:
        this_year = time.gmtime(now).tm_year
        full = this_year - this_year % 100 + int(year)
        if full > this_year + 50:  # "appears to be more than 50 years in the future"
            full -= 100
        moment = moment.replace(year=full)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()
