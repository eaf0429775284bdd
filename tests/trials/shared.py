"""What the forget and purge trials read: the project's memory files on the folder remote."""

from __future__ import annotations

from pathlib import Path

PROJECT = "e2e-project"


def on_remote(remote: Path) -> dict[str, str]:
    """The remote's memory files (memsync's own `_memsync/` records left out)."""
    base = remote / PROJECT
    if not base.is_dir():
        return {}
    return {
        p.relative_to(base).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.name.startswith(".") and "_memsync" not in p.parts
    }
