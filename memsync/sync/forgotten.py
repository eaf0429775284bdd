"""The forget rule as one pure function (docs/forget.md): what a forget takes out of a file.

`scrub_file(name, data, forgets)` is the only place memsync decides whether content is
forgotten. Every copy a device holds (memory file, history version, merge base, quarantined
copy) and every remote copy the forgetting device rewrites goes through it, so the same bytes
and forgets give the same result everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from memsync.memory.index_limit import SUBINDEX, is_subindex
from memsync.memory.index_links import INDEX, link_targets
from memsync.memory.sections import heading_levels

# --- a forgotten text, by its mark ------------------------------------------------------------

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
    """What a `forget --match` tombstone carries for the text: the length in bytes of its
    folded form and a hash of it under memsync's key, never the text. A device finds the
    lines holding it by hashing every window of that length of each folded line."""
    data = folded(needle).encode("utf-8", "surrogatepass")
    return f"{_TEXT}{len(data)}:{_text_digest(data).hex()}"


def text_marks(forgotten: Iterable[str]) -> dict[int, frozenset[bytes]]:
    """The forgotten texts among `forgotten`, by their length in bytes: {length: {digest}}."""
    out: dict[int, set[bytes]] = {}
    for key in forgotten:
        if key.startswith(_TEXT):
            size, _, digest = key[len(_TEXT) :].partition(":")
            with contextlib.suppress(ValueError):
                if int(size) > 0:
                    out.setdefault(int(size), set()).add(bytes.fromhex(digest))
    return {size: frozenset(digests) for size, digests in out.items()}


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


# --- the rule, as one function ----------------------------------------------------------------
#
# A device that learns of a forget takes out of everything it holds at that moment every line
# holding the text; a heading holding it takes its section, a frontmatter line holding it takes
# the file, and `MEMORY.md` lines linking to a taken file go. `forget FILE` takes the file.
# Everything below is that sentence; nothing else decides whether content is forgotten.


@dataclass(frozen=True)
class Forget:
    """One forget as the remote's tombstone list keeps it: a text's mark (`text_mark`: its
    length and a keyed hash, never the text) or a file's name. The list only grows; each
    device applies each forget once, by its id, when it first reads it."""

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
            out.append(Forget(item["id"], text, file))
    return out


def with_forget(data: bytes | None, forget: Forget) -> bytes:
    """The tombstone list `data` with `forget` added at its end; a forget already there (same
    id: a retry after a 412) is not added again."""
    known = read_forgets(data)
    return _dump(known if any(f.id == forget.id for f in known) else [*known, forget])


def _dump(forgets: list[Forget]) -> bytes:
    doc = {"version": 3, "forgets": [f.as_json() for f in forgets]}
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def scrub_file(
    name: str, data: bytes, forgets: Iterable[Forget], taken: Collection[str] = ()
) -> bytes | None:
    """`data`, the content of memory file `name`, without what `forgets` take: None when the
    file is taken (a `forget FILE` of it, or a frontmatter line holding a forgotten text);
    otherwise without each line holding a forgotten text, each heading holding one with its
    whole section, and, in `MEMORY.md` or a sub-index of it (index_limit.is_subindex), each
    line linking to a name in `taken`. Pure: the
    same bytes and forgets give the same answer on every device, for a memory file, a history
    version, a merge base, a queued upload or a quarantined copy alike."""
    forgets = list(forgets)
    if any(f.file == name for f in forgets):
        return None
    marks = text_marks(f.text for f in forgets if f.text is not None)
    index = bool(taken) and is_index(name, data)
    if not marks and not index:
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
        if holds_text(line, marks) or (index and link_targets(line) & set(taken)):
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
    for name, data in list(out.items()):
        if data is not None and is_index(name, data):
            out[name] = scrub_file(name, data, forgets, taken)
    return out


def is_index(name: str, data: bytes) -> bool:
    """MEMORY.md, or a sub-index compaction split from it: its lines carry the descriptions
    of the files they link to, so a line linking to a forgotten file goes with it."""
    if name == INDEX:
        return True
    return SUBINDEX.fullmatch(name) is not None and is_subindex(
        name, data.decode("utf-8", "replace")
    )


def _body_start(lines: list[str]) -> int:
    """The index of the first line after a frontmatter block (0 without one)."""
    first = lines[0].removeprefix("\ufeff") if lines else ""
    if first.rstrip("\r\n").rstrip(" \t") != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip(" \t") == "---":
            return i + 1
    return 0
