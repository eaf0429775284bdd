"""Forgotten lines, by hash: what a tombstone carries instead of the text, and taking those
lines out of a copy (a history version, a base, a memory file)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import unicodedata
from collections.abc import Collection, Container, Iterable, Mapping
from dataclasses import dataclass

from memsync.memory.index_links import INDEX, link_targets
from memsync.memory.sections import heading_levels
from memsync.util.resources import template_lines

_WORD = re.compile(r"\w")


def line_hash(line: str) -> str | None:
    """The hash a tombstone carries for a forgotten line (None for a line with no word in it,
    such as `---` or a blank: those are in every file)."""
    text = line.strip()
    if not _WORD.search(text):
        return None
    digest = hashlib.sha256(b"memsync-forgotten-line\n" + text.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def line_hashes(lines: Iterable[str]) -> set[str]:
    return {h for h in map(line_hash, lines) if h is not None}


# a voice rule as compaction writes it (retention/compact.py `_rule_entry`): the entry's first
# line after its date and the section it sat in
_RULE = re.compile(r"^\s*[-*+]\s+\d{4}-\d{2}-\d{2}(?: \([^)]*\))?:\s*(.+)$")


def earlier_forms(line: str) -> list[str]:
    """The lines a compacted voice rule (`- 2026-10-01 (Missed): text`) was made from: the
    entry `- text` under its dated section, with any bullet. Compaction writes no words of
    its own, so the rule is that entry: forgetting one forgets the other."""
    m = _RULE.match(line)
    return [f"{bullet} {m.group(1)}" for bullet in "-*+"] if m else []


_HEADING_LINE = re.compile(r"^\s*#{1,6}\s+(\S.*?)\s*$")


def heading_forms(line: str) -> list[str]:
    """A heading at every level: compaction moves a digest's `## Session …` down a level
    into its roll-up (fresh-eyes s32c, R2), and the heading is the same words there."""
    m = _HEADING_LINE.match(line)
    return [f"{'#' * n} {m.group(1)}" for n in range(1, 7)] if m else []


def title_parts(line: str) -> list[str]:
    """The titles a heading the merge made of two (`## A / B`: a section renamed differently
    on two devices) joins, each a heading of its level: the devices that renamed it keep
    their own title in history (fresh-eyes s33b, F6)."""
    m = _HEADING_LINE.match(line)
    if not m or " / " not in m.group(1):
        return []
    level = line.strip().split(" ", 1)[0]
    return [f"{level} {part.strip()}" for part in m.group(1).split(" / ") if part.strip()]


def identity(line: str) -> set[str]:
    """The hashes a forgotten line may be known by: its own, its earlier forms' if it is a
    compacted rule, and a heading's at any level."""
    return line_hashes([line, *earlier_forms(line), *heading_forms(line)])


# --- forgotten text (`forget --match`), by hash ----------------------------------------------

_TEXT = "text:"


def folded(text: str) -> str:
    """What `forget --match` compares: case-insensitive, and blind to Unicode normalisation
    (text typed decomposed, as macOS input can give, finds the same text stored composed)."""
    return unicodedata.normalize("NFC", text).casefold()


_TEXT_PREFIX = hashlib.sha256(b"memsync-forgotten-text\n")


def _text_digest(data: bytes) -> bytes:
    digest = _TEXT_PREFIX.copy()
    digest.update(data)
    return digest.digest()[:16]


def text_mark(needle: str) -> str:
    """What a `forget --match` tombstone carries for the text itself, beside the hashes of
    the lines it took: its length and a hash (never the text). A device holds the text in
    wordings the forgetting device never saw (a line reworded there and synced, then
    forgotten: the devices that had not pulled the rewording hold the words before it, which
    no line hash names; fresh-eyes s33c, G1). The mark sits among the line hashes; where a
    device scrubs content it synced before the forget (and its history), lines holding the
    text go too. A line of a device's own that no other device saw stays: new content."""
    data = folded(needle).encode("utf-8", "surrogatepass")
    return f"{_TEXT}{len(data)}:{_text_digest(data).hex()}"


def text_marks(forgotten: Iterable[str]) -> dict[int, frozenset[bytes]]:
    """The forgotten texts among `forgotten`, by their length in bytes: {length: {digest}}."""
    out: dict[int, set[bytes]] = {}
    for key in forgotten:
        if is_mark(key):
            size, _, digest = key[len(_TEXT) :].partition(":")
            with contextlib.suppress(ValueError):
                if int(size) > 0:
                    out.setdefault(int(size), set()).add(bytes.fromhex(digest))
    return {size: frozenset(digests) for size, digests in out.items()}


def is_mark(key: str) -> bool:
    """Whether `key`, among forgotten line hashes, is a forgotten text's mark."""
    return key.startswith(_TEXT)


def without_marks(forgotten: Iterable[str]) -> set[str]:
    """The line hashes alone, for a new history copy: a line holding a forgotten text still
    in a memory file when the copy is made is new content (a scrub took the old ones)."""
    return {key for key in forgotten if not is_mark(key)}


def holds_text(line: str, marks: dict[int, frozenset[bytes]]) -> set[str]:
    """The marks (`text_mark`) of the forgotten texts `line` holds."""
    if not marks:
        return set()
    data = folded(line).encode("utf-8", "surrogatepass")
    return {
        f"{_TEXT}{size}:{found.hex()}"
        for size, digests in marks.items()
        if (found := _window_in(data, size, digests)) is not None
    }


@functools.lru_cache(maxsize=8192)
def _window_in(data: bytes, size: int, digests: frozenset[bytes]) -> bytes | None:
    """The digest of the first window of `data`, `size` bytes long, whose hash is one of
    `digests` (UTF-8 finds a character string inside another at the same bytes). Cached: the
    history copies of one file, scrubbed one after another, share most of their lines."""
    salt = _TEXT_PREFIX
    for i in range(len(data) - size + 1):
        window = salt.copy()  # `_text_digest`, inlined: this loop is the scrub's cost
        window.update(data[i : i + size])
        if (digest := window.digest()[:16]) in digests:
            return digest
    return None


def known_by(
    line: str, forgotten: Collection[str], marks: dict[int, frozenset[bytes]] | None = None
) -> set[str]:
    """The entries of `forgotten` `line` is known by: its identity's hashes, and the marks of
    the forgotten texts it holds (`marks`, when the caller has them from `text_marks`)."""
    found = {h for h in identity(line) if h in forgotten}
    return found | holds_text(line, text_marks(forgotten) if marks is None else marks)


def scrub(content: bytes, forgotten: Container[str], keep: Container[str] = ()) -> bytes:
    """`content` without the lines whose hash is in `forgotten` (a compacted rule whose
    earlier form is forgotten included), the subheadings a forgotten heading held that hold
    nothing now (a forgotten session's `### Arcs`; not one whose hash is in `keep`) and the
    blank lines the cut doubled."""
    text = content.decode("utf-8", "surrogateescape")
    lines = text.splitlines(keepends=True)
    marks = text_marks(forgotten) if isinstance(forgotten, Iterable) else {}
    gone = {
        i
        for i, line in enumerate(lines)
        if any(h in forgotten for h in identity(line)) or holds_text(line, marks)
    }
    if not gone:
        return content
    gone |= {i for i in _emptied(lines, gone) if line_hash(lines[i]) not in keep}
    kept: list[str] = []
    cut = False
    for i, line in enumerate(lines):
        if i in gone:
            cut = True
        elif not (cut and not line.strip() and kept and not kept[-1].strip()):
            cut = cut and not line.strip()
            kept.append(line)
    return "".join(kept).encode("utf-8", "surrogateescape")


def _emptied(lines: list[str], gone: set[int]) -> set[int]:
    """The subheadings under a forgotten heading with nothing left under them: the section's
    own structure, which would otherwise end up under the section before it."""
    levels = heading_levels(lines)

    def span(i: int) -> range:  # the lines under heading i, down to the next at its level
        end = next((k for k in range(i + 1, len(lines)) if 0 < levels[k] <= levels[i]), None)
        return range(i + 1, len(lines) if end is None else end)

    out = set()
    for i in sorted(gone):
        if not levels[i]:
            continue
        for j in span(i):
            if (
                levels[j]
                and j not in gone
                and not any(k not in gone and not levels[k] and lines[k].strip() for k in span(j))
            ):
                out.add(j)
    return out


_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


def body_hash(content: bytes) -> str | None:
    """The hash a `forget FILE` tombstone carries for each forgotten version of the file: of
    its text after the frontmatter, surrounding whitespace left out (None for a body with no
    word in it, or none but a memory template's lines: those are in every new file, `memsync
    new` writes them). A copy under another name, its frontmatter rewritten or not (a rename,
    as Claude does one), is the same forgotten content."""
    text = content.decode("utf-8", "surrogateescape")
    body = _FRONTMATTER.sub("", text, count=1).strip()
    templates = template_lines()
    if not any(
        _WORD.search(line) and " ".join(line.split()) not in templates for line in body.splitlines()
    ):
        return None
    digest = hashlib.sha256(b"memsync-forgotten-file\n" + body.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def body_hashes(versions: Iterable[bytes | None]) -> set[str]:
    return {h for h in map(body_hash, (v for v in versions if v)) if h is not None}


_HEADING = re.compile(r"^\s*#")


def body_line_hashes(versions: Iterable[bytes | None]) -> set[str]:
    """The line hashes a `forget FILE` tombstone carries for the body lines of the forgotten
    versions: the lines that can say what the file said once moved elsewhere (a sentence
    merged into another file, a copy renamed and edited). Left out: the frontmatter,
    headings, lines without a word, and the memory templates' lines, which are in files
    that never held the forgotten content."""
    templates = template_lines()
    out = set()
    for content in versions:
        if not content:
            continue
        text = content.decode("utf-8", "surrogateescape")
        body = _FRONTMATTER.sub("", text, count=1)
        for line in body.splitlines():
            if _HEADING.match(line) or " ".join(line.split()) in templates:
                continue
            h = line_hash(line)
            if h is not None:
                out.add(h)
    return out


# --- the rule, as one function ----------------------------------------------------------------
#
# A device that learns of a forget takes out of everything it holds at that moment every line
# holding the text; a heading holding it takes its section, a frontmatter line holding it takes
# the file, and `MEMORY.md` lines linking to a taken file go. `forget FILE` takes the file.
# Everything below is that sentence; nothing else decides whether content is forgotten.


@dataclass(frozen=True)
class Forget:
    """One forget as the remote's tombstone list keeps it: a text's mark (`text_mark`: its
    length and a keyed hash, never the text) or a file's name. `serial` is its place in the
    list, counted from 1: the list only grows, so a writer that knew `n` forgets knew exactly
    those numbered 1 to `n`, and whatever it wrote is scrubbed of the later ones by whoever
    reads it (`unknown_to`). That count is the whole of the causal order; no clock is read."""

    serial: int
    id: str
    text: str | None = None  # `text:<len>:<hash>`
    file: str | None = None

    def as_json(self) -> dict[str, str]:
        out = {"id": self.id}
        if self.text is not None:
            out["text"] = self.text
        if self.file is not None:
            out["file"] = self.file
        return out


def read_forgets(data: bytes | None) -> list[Forget]:
    """The forgets a tombstone list holds, in order (an unreadable list holds none)."""
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    items = doc.get("forgets") if isinstance(doc, dict) else None
    out: list[Forget] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        text, file = item.get("text"), item.get("file")
        text = text if isinstance(text, str) and text_marks([text]) else None
        file = file if isinstance(file, str) and file else None
        if text is not None or file is not None:
            out.append(Forget(len(out) + 1, item["id"], text, file))
    return out


def with_forget(data: bytes | None, forget: Forget) -> tuple[bytes, Forget]:
    """The tombstone list `data` with `forget` added at its end (numbered there), and the
    forget as numbered. A forget already in the list (same id) is not added again."""
    known = read_forgets(data)
    for f in known:
        if f.id == forget.id:
            return _dump(known), f
    added = Forget(len(known) + 1, forget.id, forget.text, forget.file)
    return _dump([*known, added]), added


def _dump(forgets: list[Forget]) -> bytes:
    doc = {"version": 3, "forgets": [f.as_json() for f in forgets]}
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def unknown_to(knew: int, forgets: Iterable[Forget]) -> list[Forget]:
    """The forgets a writer that knew `knew` of them had not learned of when it wrote."""
    return [f for f in forgets if f.serial > knew]


def holds(line: str, forgets: Iterable[Forget]) -> bool:
    """Whether `line` holds a forgotten text (case-insensitive, any Unicode form)."""
    marks = text_marks(f.text for f in forgets if f.text is not None)
    return bool(holds_text(line, marks))


def scrub_file(
    name: str, data: bytes, forgets: Iterable[Forget], taken: Collection[str] = ()
) -> bytes | None:
    """`data`, the content of memory file `name`, without what `forgets` take: None when the
    file is taken (a `forget FILE` of it, or a frontmatter line holding a forgotten text);
    otherwise without each line holding a forgotten text, each heading holding one with its
    whole section, and, in `MEMORY.md`, each line linking to a name in `taken`. Pure: the
    same bytes and forgets give the same answer on every device, for a memory file, a history
    version, a merge base, a queued upload or a quarantined copy alike."""
    forgets = list(forgets)
    if any(f.file == name for f in forgets):
        return None
    marks = text_marks(f.text for f in forgets if f.text is not None)
    if not marks and not (taken and name == INDEX):
        return data
    text = data.decode("utf-8", "surrogateescape")
    lines = text.splitlines(keepends=True)
    start = _body_start(lines)
    if any(holds_text(line, marks) for line in lines[:start]):
        return None
    levels = [0] * start + heading_levels(lines[start:])
    gone: set[int] = set()
    i = start
    while i < len(lines):
        line = lines[i]
        if holds_text(line, marks) or (name == INDEX and taken and link_targets(line) & set(taken)):
            gone.add(i)
            if levels[i]:  # a heading takes its section: down to the next heading at its level
                j = i + 1
                while j < len(lines) and not 0 < levels[j] <= levels[i]:
                    gone.add(j)
                    j += 1
                i = j
                continue
        i += 1
    if not gone:
        return data
    kept: list[str] = []
    cut = False
    for i, line in enumerate(lines):
        if i in gone:
            cut = True
        elif not (cut and not line.strip() and kept and not kept[-1].strip()):
            cut = cut and not line.strip()
            kept.append(line)
    return "".join(kept).encode("utf-8", "surrogateescape")


def scrub_files(
    files: Mapping[str, bytes | None], forgets: Iterable[Forget]
) -> dict[str, bytes | None]:
    """Every file of a set (a memory folder, a device's bases, its queue) as `scrub_file`
    leaves it, `MEMORY.md` without its links to the files taken anywhere in the set or by a
    `forget FILE`."""
    forgets = list(forgets)
    out = {n: None if d is None else scrub_file(n, d, forgets) for n, d in files.items()}
    taken = {n for n, d in out.items() if d is None} | {f.file for f in forgets if f.file}
    index = out.get(INDEX)
    if index is not None:
        out[INDEX] = scrub_file(INDEX, index, forgets, taken)
    return out


def _body_start(lines: list[str]) -> int:
    """The index of the first line after a frontmatter block (0 without one)."""
    first = lines[0].removeprefix("\ufeff") if lines else ""
    if first.rstrip("\r\n").rstrip(" \t") != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip(" \t") == "---":
            return i + 1
    return 0
