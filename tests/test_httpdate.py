"""HTTP dates both ways, checked against the email package on every second up to year 9999."""

from __future__ import annotations

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
    offset = formatdate(moment, localtime=False)  # "-0000": the fallback path
    assert parse_date(offset) == parsedate_to_datetime(offset).timestamp()


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
