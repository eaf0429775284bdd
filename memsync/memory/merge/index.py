"""MEMORY.md: lines by the file they link to (other lines by their text), in the order of the
side that reorganised them."""

from __future__ import annotations

from memsync.memory import frontmatter as memory
from memsync.memory import sections
from memsync.memory.merge.entries import merge_items
from memsync.memory.merge.identity import Item, index_key


def _index_label(item: Item) -> str:
    """Names where, never what (see `merge_entries`): a link line by its target, any other
    line by its position only; its text would outlive a `forget --match` in logs."""
    key = index_key(item.text)
    return f"the index line for {key[5:]}" if key.startswith("link:") else "a line of the index"


def merge_index(
    base: memory.Document | None,
    ours: memory.Document,
    theirs: memory.Document,
    notes: list[str],
) -> str:
    """MEMORY.md: index lines by link target (other lines by their text)."""

    def items(doc: memory.Document | None) -> list[Item] | None:
        if doc is None:
            return None
        lines = [sections.ensure_newline(x) for x in doc.body.splitlines(keepends=True)]
        return [Item(index_key(x), "", x) for x in lines]

    merged = merge_items(
        items(base),
        items(ours) or [],
        items(theirs) or [],
        notes,
        label=_index_label,
        fixed=lambda k: isinstance(k, str) and k.startswith("link:"),
        reorders=True,
    )
    blank_runs: list[str] = []
    for line in (x.text for x in merged):  # collapse blank lines the union may have stacked up
        if not line.strip() and blank_runs and not blank_runs[-1].strip():
            continue
        blank_runs.append(line)
    return "".join(blank_runs)
