"""A Markdown body as a tree of headed sections holding entries.

An *entry* is a top-level list item with its continuation lines, or a paragraph; blank lines
stay attached to the entry before them, so `render(parse(body)) == body` exactly. Merges,
the compactor and the session-start primer all read memory through this model.
"""

from __future__ import annotations

import re
from datetime import date

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\b")


class Section:
    """A heading (None for the part before the first heading), its entries, its subsections.

    A plain class, not a dataclass: the session-start hook reads memory through this module,
    and `dataclasses` (with the `inspect` it imports) was a tenth of that hook's imports."""

    __slots__ = ("children", "entries", "heading", "level")

    def __init__(
        self,
        heading: str | None,  # the raw heading line(s), newline and following blank lines
        level: int,  # 0 for the root
        entries: list[str] | None = None,
        children: list[Section] | None = None,
    ) -> None:
        self.heading = heading
        self.level = level
        self.entries: list[str] = [] if entries is None else entries
        self.children: list[Section] = [] if children is None else children

    def _fields(self) -> tuple[object, ...]:
        return (self.heading, self.level, self.entries, self.children)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Section):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return (
            f"Section(heading={self.heading!r}, level={self.level!r}, "
            f"entries={self.entries!r}, children={self.children!r})"
        )

    @property
    def title(self) -> str:
        if self.heading is None:
            return ""
        m = _HEADING.match(self.heading.splitlines()[0])
        return m.group(2).strip() if m else self.heading.strip()

    @property
    def key(self) -> str:
        return normalise(self.title)

    @property
    def date(self) -> date | None:
        """The date a heading like `## 2026-04-17` (or `## 2026-04-17 — ...`) stands for."""
        return parse_date(self.title)

    def find(self, title: str) -> Section | None:
        """The first direct subsection whose title starts with `title` (case-insensitive)."""
        wanted = title.lower()
        for child in self.children:
            if child.title.lower().startswith(wanted):
                return child
        return None

    def walk(self) -> list[Section]:
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out

    def render(self) -> str:
        return (
            (self.heading or "")
            + "".join(self.entries)
            + "".join(child.render() for child in self.children)
        )


def parse_date(text: str) -> date | None:
    m = _DATE.match(text.strip())
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def normalise(text: str) -> str:
    """The identity of an entry or heading: whitespace-insensitive."""
    return " ".join(text.split())


def entry_key(entry: str) -> str:
    return normalise(entry)


def _split_entries(lines: list[str]) -> list[str]:
    entries: list[str] = []
    current: list[str] = []
    in_item = False
    in_fence = False
    prev_blank = False
    for line in lines:
        blank = not line.strip()
        if in_fence:
            current.append(line)
            if _FENCE.match(line):
                in_fence = False
            continue
        starts_item = bool(_ITEM.match(line))
        indented = line.startswith((" ", "\t")) and not starts_item
        new_entry = not blank and (
            starts_item or not current or (prev_blank and not (in_item and indented))
        )
        if new_entry and current and any(x.strip() for x in current):
            entries.append("".join(current))
            current = []
        if new_entry:
            in_item = starts_item
        current.append(line)
        if not blank and _FENCE.match(line):
            in_fence = True
        prev_blank = blank
    if current:
        if entries and not any(x.strip() for x in current):
            entries[-1] += "".join(current)
        else:
            entries.append("".join(current))
    return entries


def parse(body: str) -> Section:
    """Parse a Markdown body (frontmatter already removed) into a section tree."""
    root = Section(None, 0)
    stack = [root]
    lines = body.splitlines(keepends=True)
    chunk: list[str] = []
    target = root

    def flush() -> None:
        nonlocal chunk
        if target.heading is not None:
            # blank lines right after a heading belong to the heading
            while chunk and not chunk[0].strip():
                target.heading += chunk.pop(0)
        target.entries.extend(_split_entries(chunk))
        chunk = []

    for line, level in zip(lines, heading_levels(lines), strict=True):
        if not level:
            chunk.append(line)
            continue
        flush()
        while stack[-1].level >= level:
            stack.pop()
        section = Section(line, level)
        stack[-1].children.append(section)
        stack.append(section)
        target = section
    flush()
    return root


def heading_levels(lines: list[str]) -> list[int]:
    """Each line's heading level as `parse` reads it (0: no heading, or in a fenced block)."""
    out = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line.rstrip("\r\n"))
        out.append(len(m.group(1)) if m else 0)
    return out


def render(root: Section) -> str:
    return root.render()


def ensure_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def space_headings(root: Section) -> Section:
    """Make sure every heading after the first piece of text has a blank line before it."""
    previous: list[tuple[Section, int]] = []  # (node, entry index or -1 for the heading)

    def visit(node: Section) -> None:
        if node.heading is not None:
            if previous:
                owner, index = previous[-1]
                text = owner.heading if index < 0 else owner.entries[index]
                if text and text.strip() and not text.endswith("\n\n"):
                    fixed = ensure_newline(text) + "\n"
                    if index < 0:
                        owner.heading = fixed
                    else:
                        owner.entries[index] = fixed
            previous.append((node, -1))
        for i in range(len(node.entries)):
            previous.append((node, i))
        for child in node.children:
            visit(child)

    visit(root)
    return root
