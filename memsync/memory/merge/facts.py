"""Fact files (user, feedback, project, reference) and frontmatter: a fact edited on both
sides keeps the later edit whole, the other version goes to local history; fields merge
one by one."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from typing import Any, NamedTuple

from memsync.memory import frontmatter as memory
from memsync.memory.merge.entries import union
from memsync.memory.merge.result import MergeResult, ValueLost


def _timestamp(value: object) -> float | None:
    """Seconds since the epoch of a frontmatter time (a date, a datetime, ISO 8601 text)."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def modified_of(meta: dict[str, Any] | None) -> float | None:
    """The frontmatter `modified` time, top level or under `metadata:` (Claude Code's shape)."""
    return _timestamp(memory.field(meta, "modified"))


def merge_meta(
    base: dict[str, Any] | None,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    ours_newer: bool,
    notes: list[str],
) -> dict[str, Any]:
    """Field by field: the side that changed a field wins. Both changed: lists union,
    mappings merge field by field, `modified` takes the later value, `description` keeps both
    texts, anything else the newer side's value; each of the last two is noted in `notes`
    (the last as a `ValueLost`)."""
    base = base or {}
    out: dict[str, Any] = {}
    missing = object()
    for k in [*ours, *(k for k in theirs if k not in ours)]:
        b, o, t = base.get(k, missing), ours.get(k, missing), theirs.get(k, missing)
        if o == t:
            value = o
        elif o == b:
            value = t
        elif t == b:
            value = o
        elif isinstance(o, list) and isinstance(t, list):
            value = union(b if isinstance(b, list) else [], o, t, key=repr)
        elif isinstance(o, dict) and isinstance(t, dict):  # Claude Code's `metadata:` mapping
            value = merge_meta(b if isinstance(b, dict) else None, o, t, ours_newer, notes)
        elif k == "modified" and _timestamp(o) is not None and _timestamp(t) is not None:
            value = o if (_timestamp(o) or 0) >= (_timestamp(t) or 0) else t
        elif o is missing or t is missing:
            value = t if o is missing else o  # removed on one side, changed on the other
        elif k == "description" and isinstance(o, str) and isinstance(t, str):
            value = f"{o}; {t}" if t not in o else o
            if o not in t and t not in o:
                notes.append("the description")
            elif t not in o:
                value = t
        else:
            value = o if ours_newer else t
            notes.append(ValueLost(f"the field `{k}`"))
        if value is not missing:
            out[k] = value
    return out


def edit_time(
    meta: dict[str, Any], base_meta: dict[str, Any] | None, mtime: float | None
) -> float | None:
    """When this side's edit was made: the frontmatter `modified` if this edit set it (it
    differs from the base's), else the file's mtime on the device that edited it."""
    when = modified_of(meta)
    if when is not None and (base_meta is None or modified_of(base_meta) != when):
        # a day, not a time (`modified: 2026-11-24`): the mtime says when that day, if it is
        # that day in some time zone; two edits the same day are then told apart
        if (
            mtime is not None
            and _date_only(memory.field(meta, "modified"))
            and when - 14 * 3600 <= mtime < when + 38 * 3600
        ):
            return mtime
        return when
    return mtime


def _date_only(value: object) -> bool:
    if isinstance(value, date) and not isinstance(value, datetime):
        return True
    return isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()) is not None


def stamp(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


class Versions(NamedTuple):
    """One file's three versions as the merge reads them (text, or bytes that are not UTF-8)
    and as the two sides hold them, with when each side's file was edited."""

    path: str
    base: str | bytes | None
    ours: str | bytes
    theirs: str | bytes
    ours_raw: bytes
    theirs_raw: bytes
    ours_mtime: float | None
    theirs_mtime: float | None


def merge_fact(
    v: Versions,
    o_time: float | None,
    t_time: float | None,
    what: str = "both devices changed this file",
) -> MergeResult:
    """One version wins whole: the one edited later (`edit_time`). The other goes to local
    history."""
    path, ours, theirs = v.path, v.ours_raw, v.theirs_raw
    if o_time is not None and t_time is not None and o_time != t_time:
        ours_newer = o_time > t_time
        won: float | None
        won, lost = (o_time, t_time) if ours_newer else (t_time, o_time)
        side = "this device's version" if ours_newer else "the remote version"
        other = "the remote version" if ours_newer else "this device's version"
        why = f"kept {side}, edited later ({stamp(won)}; {other} was edited {stamp(lost)})"
        tied = False
    else:
        ours_newer = ours >= theirs
        won = o_time if ours_newer else t_time
        side = "this device's version" if ours_newer else "the remote version"
        why = f"the edit times could not be told apart; kept {side}"
        tied = True
    winner, loser = (ours, theirs) if ours_newer else (theirs, ours)
    return MergeResult(
        winner,
        conflict=f"{what}: {why}; the other version is in local history (`memsync history {path}`)",
        discarded=loser,
        ours_won=ours_newer,
        edited=won,
        tied=tied,
    )


def under_merged_meta(
    body: str,
    b_meta: dict[str, Any] | None,
    o_doc: memory.Document,
    t_doc: memory.Document,
    texts: tuple[str, str],
    ours_newer: bool,
    notes: list[str],
) -> tuple[str, bool]:
    """The merged file: the merged body under the merged frontmatter (none if neither side
    had any), and whether a field's value was lost (the losing copy then goes to history)."""
    if o_doc.meta is None and t_doc.meta is None:
        return body, False
    meta_notes: list[str] = []
    meta = merge_meta(b_meta, o_doc.meta or {}, t_doc.meta or {}, ours_newer, meta_notes)
    lost = any(isinstance(n, ValueLost) for n in meta_notes)
    notes.extend(meta_notes)
    return _render_like(meta, body, o_doc, t_doc, *texts), lost


def is_ours_newer(o_time: float | None, t_time: float | None, ours: str, theirs: str) -> bool:
    if o_time is not None and t_time is not None and o_time != t_time:
        return o_time > t_time
    return ours >= theirs


def _render_like(
    meta: dict[str, Any],
    body: str,
    o_doc: memory.Document,
    t_doc: memory.Document,
    ours: str,
    theirs: str,
) -> str:
    """The merged file, reusing a side's frontmatter text verbatim when its fields won whole
    (a merge does not reformat what nobody changed)."""
    for doc, text in ((o_doc, ours), (t_doc, theirs)):
        if doc.meta == meta:
            source, _ = memory.split(text)
            if source is not None:
                return f"---\n{source}---\n{body}"
    return memory.render(meta, body)


def describe_for_others(path: str, result: MergeResult) -> str:
    """A merge's conflict as the other devices should read it: neutral about which device is
    "this" one. A fact file's losing version is in local history on the device that made it:
    the merging device keeps its own, the other keeps its own when the winner replaces it."""
    if result.ours_won is None:
        return (result.conflict or "").split("; the other version is in local history")[0]
    if result.tied:
        return (
            "both devices changed this file and the edit times could not be told apart; one "
            "version was kept, the other is in local history on the device that made it "
            f"(`memsync history {path}`)"
        )
    when = f" ({stamp(result.edited)})" if result.edited is not None else ""
    return (
        f"both devices changed this file; the version edited later{when} was kept, and the "
        f"other is in local history on the device that made it (`memsync history {path}`)"
    )
