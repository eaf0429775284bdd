"""The section model: parsing is lossless, and headings, dates and entries come out right."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.memory import sections

SAMPLE = """Intro paragraph.

## 2026-04-17 — a long day

### Missed
- too formal
  continued line

- too long

### Landed
1. one-liner

```
## not a heading inside a fence
```

## Rules learned
Short lines beat long ones.
"""


def test_round_trip_is_exact():
    assert sections.render(sections.parse(SAMPLE)) == SAMPLE


def test_tree_shape_dates_and_entries():
    root = sections.parse(SAMPLE)
    assert [c.title for c in root.children] == ["2026-04-17 — a long day", "Rules learned"]
    day = root.children[0]
    assert day.date == date(2026, 4, 17)
    missed = day.find("missed")
    assert missed is not None
    assert [e.strip() for e in missed.entries] == ["- too formal\n  continued line", "- too long"]
    landed = day.find("Landed")
    assert any("not a heading" in e for e in landed.entries)
    assert [s.title for s in root.walk()][1:] == [
        "2026-04-17 — a long day",
        "Missed",
        "Landed",
        "Rules learned",
    ]


_lines = st.sampled_from(
    [
        "## A\n",
        "### B\n",
        "# Top\n",
        "- item\n",
        "  more\n",
        "\n",
        "text\n",
        "1. num\n",
        "```\n",
        "## 2026-01-02\n",
        "* star\n",
        "no newline",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines, max_size=30))
def test_parse_render_round_trip_for_any_body(lines):
    body = "".join(lines)
    assert sections.render(sections.parse(body)) == body


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_round_trip_for_arbitrary_text(body):
    assert sections.render(sections.parse(body)) == body
