"""MEMORY.md lines that link to given memory files: `forget` and `prune` remove them with the
files, since an index line carries the file's description (its content, in short)."""

from __future__ import annotations

import re
from urllib.parse import unquote

INDEX = "MEMORY.md"
_LINK = re.compile(r"\]\(<?([^)<>\s]+)>?\)")


def link_targets(line: str) -> set[str]:
    """The memory files a Markdown line links to (`[title](file.md)`, `<...>` or %-encoded)."""
    return {unquote(t).removeprefix("./") for t in _LINK.findall(line)}


def without_links(text: str, names: set[str]) -> tuple[str, list[str]]:
    """`text` without the lines that link to any of `names`, and the lines removed."""
    kept: list[str] = []
    removed: list[str] = []
    for line in text.splitlines(keepends=True):
        (removed if link_targets(line) & names else kept).append(line)
    return "".join(kept), removed
