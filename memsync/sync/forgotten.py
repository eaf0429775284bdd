"""Forgotten lines, by hash: what a tombstone carries instead of the text, and taking those
lines out of a copy (a history version, a base, a memory file)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container, Iterable

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



def scrub(content: bytes, forgotten: Container[str]) -> bytes:
    """`content` without the lines whose hash is in `forgotten`."""
    text = content.decode("utf-8", "surrogateescape")
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if line_hash(line) not in forgotten]
    if len(kept) == len(lines):
        return content
    return "".join(kept).encode("utf-8", "surrogateescape")

