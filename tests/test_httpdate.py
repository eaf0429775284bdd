"""HTTP dates both ways: the three forms RFC 7231 allows, two-digit years by its rule, and the
email package's reading and writing on every second up to year 9999."""

from __future__ import annotations

from datetime import timezone
from email.utils import formatdate, parsedate_to_datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.stores.httpdate import format_date, parse_date

SECONDS = st.integers(min_value=0, max_value=253402300799)  # up to 9999-12-31


@settings(max_examples=500, deadline=None)
@given(SECONDS)
def test_dates_are_read_as_the_email_package_reads_them(moment):
    sent = formatdate(moment, usegmt=True)  # the form Azure sends
    assert parse_date(sent) == parsedate_to_datetime(sent).timestamp() == moment
    offset = formatdate(moment, localtime=False)  # "-0000": UTC, whatever the local zone
    utc = parsedate_to_datetime(offset).replace(tzinfo=timezone.utc).timestamp()
    assert parse_date(offset) == utc == moment


@settings(max_examples=500, deadline=None)
@given(st.one_of(SECONDS, st.floats(min_value=0, max_value=253402300799)))
def test_dates_are_written_as_the_email_package_writes_them(moment):
    assert format_date(moment) == formatdate(moment, usegmt=True)


@pytest.mark.parametrize(
    "value",
    [
        "Tue, 29 Feb 2026 10:00:00 GMT",
        "Mon, 23 Nov 2026 24:00:00 GMT",
        "Mon, 0 Nov 2026 1:00:00 GMT",
    ],
)
def test_impossible_dates_are_refused_as_the_email_package_refuses_them(value):
    with pytest.raises(ValueError):
        parsedate_to_datetime(value)
    with pytest.raises(ValueError):
        parse_date(value)


def test_leap_days_are_dates():
    assert parse_date("Tue, 29 Feb 2028 00:00:00 GMT") == 1835395200.0


@pytest.mark.parametrize(
    "value",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850 form
        "Sun Nov  6 08:49:37 1994",  # ANSI C's asctime() format
    ],
)
def test_the_three_forms_rfc_7231_allows_are_one_moment(value):
    assert parse_date(value) == 784111777.0


NOW = 1795435200.0  # 2026-11-23


@pytest.mark.parametrize(
    ("value", "year"),
    [
        ("Sunday, 06-Nov-94 08:49:37 GMT", 1994),
        ("Tuesday, 06-Nov-75 08:49:37 GMT", 2075),  # 49 years ahead: taken as written
        ("Monday, 06-Nov-77 08:49:37 GMT", 1977),  # 51 years ahead: the century before
        ("Friday, 06-Nov-26 08:49:37 GMT", 2026),
        ("Tue, 06 Nov 00 08:49:37 GMT", 2000),
        ("Thu Nov  6 08:49:37 30", 2030),
    ],
)
def test_a_two_digit_year_is_the_most_recent_one_not_over_50_years_ahead(value, year):
    seconds = parse_date(value, now=NOW)
    assert parsedate_to_datetime(format_date(seconds)).year == year
    assert format_date(seconds)[5:11] == "06 Nov"


@pytest.mark.parametrize(
    "value", ["", "yesterday", "Sun, 06 Nov 1994", "Sun, 31 Nov 1994 08:49:37 GMT"]
)
def test_what_is_not_a_date_is_refused(value):
    with pytest.raises(ValueError):
        parse_date(value)
