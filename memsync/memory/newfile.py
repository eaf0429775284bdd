"""`memsync new TYPE [NAME]`: a memory file from its template, listed in MEMORY.md."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from memsync.memory import frontmatter as memory
from memsync.memory import ids
from memsync.memory.memtypes import TYPES
from memsync.util import resources
from memsync.util.errors import UsageError, UserError
from memsync.util.fsutil import atomic_write, read_text_if_there

# the template file for each type, when its name differs from the type
_TEMPLATE = {"callbacks": "callbacks.md", "commitments": "commitments.md"}


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not slug:
        raise UserError(f"{name!r} has no letters or digits to make a file name from")
    return slug


def filename_for(type_name: str, name: str | None, today: date) -> str:
    mtype = TYPES.get(type_name)
    if mtype is None or type_name == "index":
        known = ", ".join(t for t in TYPES if t != "index")
        raise UserError(f"unknown memory type {type_name!r}; choose one of {known}")
    if mtype.filename:
        return mtype.filename
    if type_name == "session_digest":
        return f"session_digest_{today.isoformat()}.md"
    if not name:
        raise UsageError(f"a {type_name} file needs a NAME, e.g. `memsync new {type_name} topic`")
    return f"{type_name}_{_slug(name)}.md"


def create(
    memory_dir: Path,
    type_name: str,
    name: str | None = None,
    today: date | None = None,
    session: str | None = None,
) -> Path:
    """Write the new file (never over an existing one) and add it to MEMORY.md's index.

    `modified` gets the full time of creation (a date alone ties with another device's edit
    the same day), and a session digest's block heading the time and a random part
    (`## Session 14:05 k3f9`), so two devices' sessions of one day stay two sessions."""
    now = memory.modified_now()
    today = today or date.today()
    session = session or f"{now:%H:%M} {ids.new_suffix()}"
    filename = filename_for(type_name, name, today)
    path = memory_dir / filename
    if path.exists():
        raise UserError(f"{path} already exists; edit it instead")
    title = name or TYPES[type_name].summary.split(":")[0].rstrip(".")
    template = resources.template_text(_TEMPLATE.get(type_name, f"{type_name}.md"))
    text = (
        template.replace("{title}", title)
        .replace("{slug}", memory.name_slug(title) or "memory")
        .replace("{date}", today.isoformat())
        .replace("{session}", session)
        .replace("{modified}", memory.stamp_text(now.replace(microsecond=0)))  # to the second
    )
    # each commitment id gets its own random part: another device may mint ids for this day
    text = re.sub(r"\{nonce\}", lambda _: ids.new_suffix(), text)
    doc = memory.parse(text)
    memory_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode(), 0o600)
    _index(
        memory_dir,
        filename,
        name or str((doc.meta or {}).get("name") or title),
        str((doc.meta or {}).get("description") or ""),
    )
    return path


def _index(memory_dir: Path, filename: str, title: str, description: str) -> None:
    index = memory_dir / "MEMORY.md"
    current = read_text_if_there(index)
    text = "# Memory index\n\n" if current is None else current.rstrip("\n") + "\n"
    if f"]({filename})" in text:
        return
    line = f"- [{title}]({filename})" + (f" — {description}" if description else "")
    text += line + "\n"
    atomic_write(index, text.encode(), 0o600)
