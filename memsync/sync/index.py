"""MEMORY.md kept true to the files after a run: a file an edit brought back gets its line
back, a line linking to a file the run deleted goes, and a pruned file that came back is
said."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from memsync.memory import index_links
from memsync.memory.index_links import INDEX
from memsync.sync import execute
from memsync.sync.scan import Run, mtime_of
from memsync.util.errors import StoreError, Unreachable, UnsafeKey

if TYPE_CHECKING:
    from pathlib import Path

    from memsync.sync.engine import Engine
    from memsync.sync.result import SyncResult

_PRUNE_WATCH = 30 * 86400  # seconds a prune is watched for a file coming back


def comebacks(engine: Engine, result: SyncResult, before: str | None, settle: bool) -> None:
    """A file an edit brought back after a deletion (a prune or a delete on one device,
    an edit on another) gets its MEMORY.md line back, or Claude Code, which finds memory
    files through the index, would not see a file that exists. The line is the one this
    index had before the run (else one made from the file's frontmatter), remembered until
    a full sync or pull has taken in the other device's index; then it is added if that
    index lacks it, pushed, and said in a note."""
    waiting = dict(engine.state.meta.index_comebacks or {})
    for name in sorted(engine.came_back):
        lines = index_links.linking_lines(before, name)
        made = index_links.made_line(name, text_of(engine, name))
        waiting[name] = lines[0] if lines else made
    engine.state.meta.index_comebacks = waiting
    failed = result.errors.keys() | result.refused.keys() | set(result.skipped)
    if not settle or INDEX in failed:
        return  # the other device's index is not taken in yet: kept for the next sync
    current = engine.index_text()
    missing = [
        (name, line)
        for name, line in sorted(waiting.items())
        if current is not None
        and text_of(engine, name) is not None
        and not index_links.links_to(current, name)
    ]
    engine.state.meta.index_comebacks = {}
    if not missing or current is None:
        return
    new = index_links.with_lines(current, [line for _, line in missing])
    data = new.encode("utf-8", "surrogateescape")
    path = engine.local_path(INDEX)
    if engine.replace_local(path, data, current.encode("utf-8", "surrogateescape")) is not None:
        engine.state.meta.index_comebacks = waiting  # written here meanwhile: the next sync
        return
    upload_index(engine, result, data, path)
    for name, _ in missing:
        result.notes.append(
            f"{name} is back (deleted on one device while edited on another: the edit "
            f"wins), so MEMORY.md lists it again"
        )


def upload_index(engine: Engine, result: SyncResult, data: bytes, path: Path) -> None:
    """Send MEMORY.md as this run rewrote it after the plan; queued if that fails."""
    rec = engine.state.records.get(INDEX)
    try:
        execute.upload(engine, result, INDEX, data, rec.etag if rec else None, mtime_of(path))
    except Unreachable as exc:
        result.offline = str(exc)
        engine.state.queue([INDEX])
    except StoreError as exc:
        result.errors[INDEX] = str(exc)
        engine.state.queue([INDEX])


def departures(engine: Engine, result: SyncResult, run: Run) -> None:
    """MEMORY.md lines linking to a file this run deleted (here, as another device deleted,
    pruned, compacted it; or on the remote) go too: a line edited on one device while
    the file was deleted on another is an edit to the merge, which keeps it, and it
    would link to nothing on every device. The index as it was is kept in history and
    the change said in a note (`forget FILE` does the same through its tombstone)."""
    failed = result.errors.keys() | result.refused.keys() | set(result.skipped)
    if result.offline or INDEX in failed:
        return
    gone = {
        n
        for n in (*result.deleted_local, *result.deleted_remote)
        if n != INDEX and n not in engine.state.records and text_of(engine, n) is None
    }
    current = engine.index_text()
    if not gone or current is None:
        return
    text, removed = index_links.without_links(current, gone)
    if not removed:
        return
    before = current.encode("utf-8", "surrogateescape")
    data = text.encode("utf-8", "surrogateescape")
    path = engine.local_path(INDEX)
    engine.keep(INDEX, before, "lines linking to deleted files taken out")
    if engine.replace_local(path, data, before) is not None:
        return  # written here meanwhile: left for the next sync to find
    upload_index(engine, result, data, path)
    names = sorted({t for line in removed for t in index_links.link_targets(line)} & gone)
    result.notes.append(
        f"MEMORY.md no longer lists {', '.join(names)}: the file was deleted (on this or "
        "another device) and a line for it, kept by a merge, linked to nothing (the index "
        "as it was is in `memsync history MEMORY.md`)"
    )
    elsewhere = sorted(set(names) & set(result.deleted_local))
    if elsewhere:
        # deleted (or renamed) on another device, whose index let its line go: the line
        # here outlived that only as an edit made to it, which is set aside: a conflict,
        # so status, --json and the next primer say it, not only this run's note
        detail = (
            f"the line for {', '.join(elsewhere)}, edited here, was taken out: the file "
            "was deleted or renamed on another device; the line as it was is in "
            "`memsync history MEMORY.md`"
        )
        from memsync.sync.conflicts import entry

        theirs = (  # as the other devices read it, on the remote record
            f"the line for {', '.join(elsewhere)}, edited on {engine.ctx.device}, was taken "
            "out: the file was deleted or renamed on another device; the line as it was is "
            f"in `memsync history MEMORY.md` on {engine.ctx.device}"
        )
        engine.report_conflict(result, INDEX, detail, entry(INDEX, theirs, engine.ctx.device))
        engine.publish_conflicts(result)


def text_of(engine: Engine, name: str) -> str | None:
    try:
        data = engine.read_local(name)
    except (OSError, UnsafeKey):
        return None
    return None if data is None else data.decode("utf-8", "surrogateescape")


def pruned_back(engine: Engine, result: SyncResult) -> None:
    """A file `memsync prune` deleted here that this run brought back: another device
    edited it after the prune, and an edit beats a deletion. Said once, on this device too;
    a prune a month old is no longer watched."""
    pruned = engine.state.meta.pruned
    back = {*result.downloaded, *result.merged}
    for name, at in list(pruned.items()):
        if name in back:
            result.notes.append(
                f"{name}, which `memsync prune` deleted here, came back: another device "
                "edited it after the prune (an edit beats a deletion); prune it again if "
                "it is no longer needed"
            )
        if name in back or not isinstance(at, (int, float)) or time.time() - at > _PRUNE_WATCH:
            del pruned[name]
    if not pruned:
        engine.state.meta.pruned = {}
