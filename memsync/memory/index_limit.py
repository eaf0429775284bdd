"""How much of MEMORY.md Claude Code loads, and the split that keeps every memory within it.

Claude Code puts only the start of `MEMORY.md` into the system prompt: the index trimmed of
surrounding whitespace, cut to its first 200 lines, then, past 25,000 characters (JavaScript
string length: UTF-16 code units, which is bytes for ASCII), at the last line end before that
(constants `q2=200`, `Mme=25000` beside `"MEMORY.md"` in the 2.1.330 bundle, function `Pyo`;
the same in 2.1.332; docs/claude-code.md). A memory linked only from the part cut off exists,
but Claude never sees it. Every check memsync makes against that limit reads it here.

`split` brings an index back within the limit without losing a link: the lines that do not fit
move, in their order and wording, into sub-index files (one per memory type, `index_<type>.md`,
frontmatter `type: index`, so they sync and merge like MEMORY.md: by link target), each linked
from MEMORY.md by one fixed line. The lines that stay are not touched. An index that loads
whole is never changed, so a second split changes nothing. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from memsync.memory.index_links import INDEX, link_targets

CLAUDE_CODE_VERSION = "2.1.332"  # the newest bundle the limits were read from (2.1.330 alike)
MAX_LINES = 200
MAX_CHARS = 25_000
# what split leaves free under each limit, so a few lines Claude adds do not push it over at once
LINE_ROOM = 10
CHAR_ROOM = 1_000

SUBINDEX = re.compile(r"index_[a-z0-9_]+\.md")
_SUBINDEX_MARK = re.compile(
    r"\A\ufeff?---\r?\n(?:.*\r?\n)*?\s*type:\s*index\s*\r?\n(?:.*\r?\n)*?---"
)
_TITLES = {
    "user": "About the user",
    "feedback": "Feedback",
    "project": "Project notes",
    "reference": "References",
}


def js_length(text: str) -> int:
    """`text.length` in JavaScript: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


class IndexLoad(NamedTuple):
    lines: int  # of the trimmed index, as Claude Code counts them
    chars: int  # JavaScript length of the trimmed index
    loaded: str  # the part Claude Code puts into the system prompt
    rest: str  # the part it cuts off ("" when it loads whole)

    @property
    def whole(self) -> bool:
        return not self.rest


def load(text: str) -> IndexLoad:
    """What Claude Code loads of an index whose text is `text` (its `Pyo`, step for step)."""
    trimmed = text.strip()
    lines = trimmed.count("\n") + 1
    chars = js_length(trimmed)
    if lines <= MAX_LINES and chars <= MAX_CHARS:
        return IndexLoad(lines, chars, trimmed, "")
    kept = "\n".join(trimmed.split("\n")[:MAX_LINES]) if lines > MAX_LINES else trimmed
    if js_length(kept) > MAX_CHARS:
        units = kept.encode("utf-16-le")[: 2 * (MAX_CHARS + 1)].decode("utf-16-le", "ignore")
        cut = units.rfind("\n")
        kept = kept[:cut] if cut > 0 else units[:MAX_CHARS]
    return IndexLoad(lines, chars, kept, trimmed[len(kept) :])


def fits(text: str, room: bool = False) -> bool:
    """Whether Claude Code loads all of `text`; with `room`, with split's margin left free."""
    trimmed = text.strip()
    lines = trimmed.count("\n") + 1
    if room:
        return lines <= MAX_LINES - LINE_ROOM and js_length(trimmed) <= MAX_CHARS - CHAR_ROOM
    return lines <= MAX_LINES and js_length(trimmed) <= MAX_CHARS


def is_subindex(name: str, text: str | None) -> bool:
    """A sub-index `split` wrote: named `index_<type>.md` and marked `type: index`. It is a
    file of links, not a memory: no count of memories includes it."""
    return text is not None and SUBINDEX.fullmatch(name) is not None and bool(
        _SUBINDEX_MARK.match(text)
    )


def unseen(text: str, read: Callable[[str], str | None]) -> list[str]:
    """The memory files linked from the part of the index Claude Code cuts off and reachable
    neither from the part it loads nor through a sub-index that part links (`read(name)`
    gives a file's text, or None). Sub-indexes are not counted."""
    cut = load(text)
    if cut.whole:
        return []
    seen = {t for line in cut.loaded.splitlines() for t in link_targets(line)}
    for name in sorted(seen):
        sub = read(name) if SUBINDEX.fullmatch(name) else None
        if is_subindex(name, sub):
            assert sub is not None
            seen |= {t for line in sub.splitlines() for t in link_targets(line)}
    hidden = {t for line in cut.rest.splitlines() for t in link_targets(line)} - seen
    return sorted(t for t in hidden if not (SUBINDEX.fullmatch(t) and is_subindex(t, read(t))))


def warning(text: str, read: Callable[[str], str | None]) -> str | None:
    """One sentence when Claude Code does not load all of MEMORY.md (None when it does)."""
    cut = load(text)
    if cut.whole:
        return None
    if cut.lines > MAX_LINES:
        size = f"{cut.lines} lines long, past the {MAX_LINES} lines"
    else:
        size = f"{cut.chars:,} characters long, past the {MAX_CHARS:,} characters"
    hidden = len(unseen(text, read))
    what = (
        f"Claude cannot see {hidden} memor{'y' if hidden == 1 else 'ies'} linked only "
        "after that point"
        if hidden
        else "the lines after that point are not loaded"
    )
    return (
        f"MEMORY.md is {size} Claude Code loads: {what}; `memsync compact --index` moves "
        "them into linked sub-indexes"
    )


def warning_for(memory_dir: Path) -> str | None:
    """`warning` for the MEMORY.md in `memory_dir` (None without one); reads only the index
    and the sub-indexes it links, so the session-start hook can afford it."""
    try:
        text = (memory_dir / INDEX).read_bytes().decode("utf-8", "replace")
    except OSError:
        return None

    def read(name: str) -> str | None:
        if SUBINDEX.fullmatch(name) is None:
            return None
        try:
            return (memory_dir / name).read_bytes().decode("utf-8", "replace")
        except OSError:
            return None

    return warning(text, read)


# --- the split ---------------------------------------------------------------------------


def _type_of(name: str, files: Mapping[str, bytes]) -> str:
    """A linked file's memory type, for the sub-index it goes to."""
    from memsync.memory import frontmatter
    from memsync.memory.memtypes import type_of

    meta = None
    data = files.get(name)
    if data is not None:
        try:
            meta = frontmatter.parse(frontmatter.decode(data)).meta
        except (frontmatter.FrontmatterError, UnicodeDecodeError):
            meta = None
    found = type_of(name, meta).name
    return re.sub(r"[^a-z0-9_]", "_", found.lower()) or "other"


def _subindex_name(kind: str, files: Mapping[str, bytes]) -> str:
    """`index_<kind>.md`, or the first free variant when a memory already has that name."""
    name, n = f"index_{kind}.md", 1
    while name in files and not is_subindex(name, _text(files[name])):
        n += 1
        name = f"index_{kind}_{n}.md"
    return name


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def pointer(kind: str, name: str) -> str:
    """MEMORY.md's line for a sub-index. Fixed (no count): two devices that split apart write
    the same line, so their indexes merge without a conflict."""
    title = _TITLES.get(kind, kind.replace("_", " ").capitalize())
    return f"- [{title}: more memories]({name}) — the {kind} memories this index has no room for"


def _new_subindex(kind: str) -> str:
    return (
        "---\n"
        f"name: index_{kind}\n"
        f"description: The {kind} memories MEMORY.md has no room for (Claude Code loads only "
        "its start)\n"
        "metadata:\n"
        "  type: index\n"
        "---\n"
    )


def _key(line: str) -> str:
    targets = sorted(link_targets(line))
    return "link:" + " ".join(targets) if targets else "text:" + line.strip()


def _add_lines(text: str, lines: list[str]) -> str:
    """`text` with `lines` in it: a line linking to what a line there links to replaces it
    (the index's wording is the newer), any other is added at the end."""
    eol = "\r\n" if "\r\n" in text else "\n"
    have = text.splitlines(keepends=True)
    where = {_key(line): i for i, line in enumerate(have) if link_targets(line)}
    if have and not have[-1].endswith("\n"):
        have[-1] += eol
    for line in lines:
        line = line.rstrip("\r\n") + eol
        at = where.get(_key(line))
        if at is not None:
            have[at] = line
        elif line not in have:
            where[_key(line)] = len(have)
            have.append(line)
    return "".join(have)


def split(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The files to write so that Claude Code loads all of MEMORY.md and every memory linked
    from it stays reachable: {name: new content}, empty when the index loads whole already.

    The index's own lines stay in their order and wording up to where, with one line for
    each sub-index, it fits with `LINE_ROOM` lines and `CHAR_ROOM` characters to spare; the
    lines after that go to the sub-index of the type of the file they link to (a line that
    links nothing goes with the next line that does). Pointer lines already there are kept
    in their wording, after the lines that stay; new ones follow them."""
    index = _text(files.get(INDEX))
    if index is None or fits(index):
        return {}
    eol = "\r\n" if "\r\n" in index else "\n"
    lines = index.splitlines(keepends=True)
    subs = {n for line in lines for n in link_targets(line) if is_subindex(n, _text(files.get(n)))}

    def is_pointer(line: str) -> bool:
        return bool(link_targets(line)) and link_targets(line) <= subs

    pointers = [line for line in lines if is_pointer(line)]
    body = [line for line in lines if not is_pointer(line)]
    kinds: dict[int, str] = {}  # line number in body -> sub-index kind
    pending: list[int] = []
    for i, line in enumerate(body):
        targets = sorted(link_targets(line))
        if not targets:
            pending.append(i)
            continue
        kind = _type_of(targets[0], files)
        for j in [*pending, i]:
            kinds[j] = kind
        pending = []
    last = kinds[max(kinds)] if kinds else "other"
    for j in pending:
        kinds[j] = last
    linked = {n for line in pointers for n in link_targets(line)}
    names: dict[str, str] = {}  # kind -> sub-index name
    moved: list[int] = []
    candidate = index
    for keep in range(len(body), -1, -1):
        moved = [i for i in range(keep, len(body)) if body[i].strip()]
        needed = sorted({kinds[i] for i in moved})
        names = {k: _subindex_name(k, files) for k in needed}
        extra = [pointer(k, names[k]) + eol for k in needed if names[k] not in linked]
        kept = body[:keep]
        if kept and not kept[-1].endswith("\n"):
            kept = [*kept[:-1], kept[-1] + eol]
        candidate = "".join(kept + pointers + extra)
        if fits(candidate, room=True) or keep == 0:
            break
    out: dict[str, bytes] = {INDEX: candidate.encode("utf-8")}
    for kind, name in names.items():
        current = _text(files.get(name)) or _new_subindex(kind)
        text = _add_lines(current, [body[i] for i in moved if kinds[i] == kind])
        if text != current:
            out[name] = text.encode("utf-8")
    return out
