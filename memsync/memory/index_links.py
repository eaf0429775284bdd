"""MEMORY.md lines that link to given memory files: `forget` and `prune` remove them with the
files, since an index line carries the file's description (its content, in short)."""

from __future__ import annotations

import re
from urllib.parse import unquote

INDEX = "MEMORY.md"
# `[title](file.md)`, `(<file.md>)`, `(file.md "a title")`, `(file.md#part)`
_LINK = re.compile(r"""\]\(\s*(?:<([^<>]+)>|([^)<>\s]+))(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)""")


def link_targets(line: str) -> set[str]:
    """The memory files a Markdown line links to (`[title](file.md)`, `<...>` or %-encoded,
    with a `#part` or a `"title"`: the file is the same)."""
    found = (a or b for a, b in _LINK.findall(line))
    return {unquote(t.split("#", 1)[0]).removeprefix("./") for t in found}


def without_links(text: str, names: set[str]) -> tuple[str, list[str]]:
    """`text` without the lines that link to any of `names`, and the lines removed."""
    kept: list[str] = []
    removed: list[str] = []
    for line in text.splitlines(keepends=True):
        (removed if link_targets(line) & names else kept).append(line)
    return "".join(kept), removed


def linking_lines(text: str | None, name: str) -> list[str]:
    """The lines of `text` that link to `name` (without their line ends)."""
    if not text:
        return []
    return [line for line in text.splitlines() if name in link_targets(line)]


def links_to(text: str | None, name: str) -> bool:
    return bool(linking_lines(text, name))


def made_line(name: str, text: str | None) -> str:
    """An index line for `name` from its frontmatter (`name`, `description`), as Claude Code
    writes them: `- [Title](file.md) — description`."""
    from memsync.memory import frontmatter

    meta = None
    if text is not None:
        try:
            meta = frontmatter.parse(text).meta
        except frontmatter.FrontmatterError:
            meta = None
    title = str(frontmatter.field(meta, "name") or name.rsplit("/", 1)[-1].removesuffix(".md"))
    description = " ".join(str(frontmatter.field(meta, "description") or "").split())
    return f"- [{title}]({name})" + (f" — {description}" if description else "")


def with_lines(text: str, lines: list[str]) -> str:
    """`text` with `lines` added at its end, in its own line ending."""
    end = "\r\n" if "\r\n" in text else "\n"
    body = text.rstrip("\r\n")
    added = "".join(line + end for line in lines)
    return body + end + added if body else added
