"""The edit-time record a memory-store remote keeps beside a project's memory
(`_memsync/edited.json`): when each memory's content was edited on the device that wrote it,
for the writes whose own time does not say it.

A memory has no field of its own for that time. The service dates every write (the memory's
`updated_at`, its version's `created_at`), and a write made right after the edit (a hook's
push, an agent writing through the mounted store) is dated by it well enough. Only a write
made later than its edit (a sync of files edited offline or while no hook ran, a merge) needs
its edit time kept, and only those go into this record: name -> [[edited, hash], ...], the
hash being the first HASH hex digits of the content's SHA-256, so an entry speaks only for the
content it was written with, and a memory changed since by any writer no longer matches it.

The record is written before the memory it speaks for (see MemoryStoreStore._note_edited),
so whoever reads a memory and then the record finds the entry if there is one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable

KEY = "_memsync/edited.json"
HASH = 16  # hex digits of the content's SHA-256 an entry keeps: enough to tell contents apart
PER_NAME = 4  # entries a name keeps: a write that lost its race leaves the one that won
Times = dict[str, list[tuple[float, str]]]


def parse(data: bytes | None) -> Times:
    """The entries a record holds (an unreadable record holds none)."""
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    raw = doc.get("edited") if isinstance(doc, dict) else None
    out: Times = {}
    for name, entries in raw.items() if isinstance(raw, dict) else ():
        kept = [
            (float(e[0]), e[1])
            for e in (entries if isinstance(entries, list) else ())
            if isinstance(e, list)
            and len(e) == 2
            and isinstance(e[0], int | float)
            and math.isfinite(e[0])
            and isinstance(e[1], str)
        ]
        if isinstance(name, str) and kept:
            out[name] = kept
    return out


def edited_at(times: Times, name: str, sha256: str) -> float | None:
    """The edit time kept for `name` holding the content of hash `sha256`, or None."""
    return next((t for t, h in times.get(name, ()) if h == sha256[:HASH]), None)


def dump(times: Times) -> bytes:
    doc = {"version": 1, "edited": {n: [[t, h] for t, h in e] for n, e in sorted(times.items())}}
    return json.dumps(doc, separators=(",", ":")).encode()


def changed(
    times: Times,
    batch: Iterable[tuple[str, str, float | None]],
    live: Collection[str],
    limit: int,
) -> Times:
    """`times` with each (name, sha256, edited) of `batch` in it, newest first: an entry for a
    content already kept is replaced, and `edited` None takes the content's entry out (a
    write dated by the service, of content an earlier write had kept). Over `limit` bytes,
    the entries of names not in `live` go first, then the oldest edit times."""
    out = {n: list(e) for n, e in times.items()}
    for name, sha, when in batch:
        kept = [(t, h) for t, h in out.get(name, ()) if h != sha[:HASH]]
        if when is not None:
            kept.insert(0, (when, sha[:HASH]))
        if kept:
            out[name] = kept[:PER_NAME]
        else:
            out.pop(name, None)
    if len(dump(out)) <= limit:
        return out
    for name in [n for n in out if n not in live]:
        del out[name]
    oldest = sorted((t, n, h) for n, e in out.items() for t, h in e)
    size = len(dump(out))
    while oldest and size > limit:
        # the bytes each entry takes, its name's too with its last entry: one dump at the end
        t, n, h = oldest.pop(0)
        out[n] = [e for e in out[n] if e != (t, h)]
        size -= len(json.dumps([t, h], separators=(",", ":"))) + 1
        if not out[n]:
            del out[n]
            size -= len(json.dumps(n)) + 1
        if size <= limit:
            size = len(dump(out))
    return out
