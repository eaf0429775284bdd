"""Forgetting for real: `memsync forget`, `memsync purge`, and what other devices do about them.

`forget FILE`: the file, its MEMORY.md index lines, its local history and its records go, here
and on the remote, and a tombstone on the remote (`_memsync/forgotten.json`) tells the other
devices to do the same on their next sync. `forget --match TEXT`: matching entries leave their
files (pushed through the normal merge, where a removal wins over an untouched entry), whole
files go where only that will do, and the tombstone carries a hash of every removed line (never
the text), so other devices drop those lines from their history copies and never keep them in
a new one.

The order makes an outage or a kill harmless: (1) the job is saved in meta.json (`forgetting`)
and the audit line written, (2) the tombstone, (3) the remote deletions, (4) the local erase
(always, even when the remote cannot be reached). A job whose remote part did not finish stays
listed, and the next sync, push or pull finishes it before it plans anything.

Tombstones carry an id, when they were made and the ETags of the copies they forgot. A device
applies each one once (ids in `tombstones_applied`) and only to content from before it: a file
created again later syncs like any other, and forgetting another file does not touch it. An
edit another device never uploaded is neither uploaded nor destroyed: it is moved to
$MEMSYNC_HOME/quarantine/ and every sync and status there says so until the user deletes it.

`purge` erases the remote prefix and this device's state, then leaves a marker on the remote
(`_memsync/purged.json`) and here (meta.json `purged`): while one is there no sync, push, pull
or hook on any device uploads anything, until `memsync push --republish` says to publish again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.memory.index_links import INDEX
from memsync.stores import MAX_ATTEMPTS
from memsync.sync.forgotten import (
    body_hashes,
    body_line_hashes,
    earlier_forms,
    folded,
    line_hash,
    line_hashes,
    text_mark,
    title_parts,
)
from memsync.sync.state import Meta
from memsync.sync.tombstones import (
    PURGED,
    REPUBLISH,
    TOMBSTONES,
    audit,
    drop_job,
    erase_here,
    finish_remote,
    linking_lines,
    purged_here,
    quarantine_notices,
    read_tombstones,
    retitled,
    scrub_history,
    share_job,
)
from memsync.util.errors import (
    GuardError,
    MemsyncError,
    NotFound,
    PreconditionFailed,
    Unreachable,
    UserError,
)

if TYPE_CHECKING:
    from memsync.memory.sections import Section
    from memsync.sync.engine import Engine


# --- forgotten lines, by hash --------------------------------------------------------------


def _earlier_forms(lines: Iterable[str]) -> list[str]:
    """The form a compacted voice rule (`- 2026-10-01: text`, retention/compact.py) had before
    compaction (`- text` under its dated section): another device may still hold that form in
    a history copy saved before the compaction, which only its hash can reach."""
    return [form for line in lines for form in earlier_forms(line)]


def _removed_lines(old: bytes | None, new: bytes | None) -> list[str]:
    """The lines of `old` that `new` no longer has (as many times as they went)."""
    if old is None:
        return []
    gone = Counter(old.decode("utf-8", "replace").splitlines())
    gone.subtract((new or b"").decode("utf-8", "replace").splitlines())
    return [line for line, n in gone.items() if n > 0]


# --- the remote tombstone list ---------------------------------------------------------------


# --- one forget job ------------------------------------------------------------------------


@dataclass
class ForgetReport:
    files: list[str] = field(default_factory=list)
    remote_deleted: list[str] = field(default_factory=list)
    index_lines: int = 0  # MEMORY.md lines removed with the files
    offline: str | None = None  # the remote part waits for the next sync
    purged: bool = False  # the project is purged: only the forget records went to the remote
    searched_offline: bool = False  # --match searched this device only: the remote was away


def _start(
    engine: Engine,
    action: str,
    files: list[str],
    lines: set[str],
    rewritten: Iterable[str] = (),
    conflicts: Iterable[str] = (),
    **details: Any,
):
    """Save the job and write its audit line, before anything is deleted anywhere."""
    job = {
        "id": os.urandom(8).hex(),
        "at": time.time(),
        "device": engine.ctx.device,
        "files": sorted(set(files)),
        "lines": sorted(lines),
        "scrub": sorted(set(rewritten)),  # files whose remote copies lose the forgotten lines
        "conflicts": sorted(set(conflicts)),  # ids of conflict records that describe them
        # the copies this device knew when the user asked: a different one on the remote when
        # the job finishes (after an outage) is another device's later edit
        "known": {n: r.etag for n in files if (r := engine.state.records.get(n)) is not None},
        "bodies": _bodies(engine, files),
        "body_lines": _body_lines(engine, files),
    }
    meta = engine.state.meta
    meta.forgetting = [*meta.forgetting, job]
    meta.tombstones_applied = sorted({*meta.tombstones_applied, str(job["id"])})
    share_job(engine, job)  # beside the state folder too: it survives a new URL or meta.json
    engine.state.save_meta()
    audit(engine, action, id=job["id"], files=job["files"], **details)
    return job


def _bodies(engine: Engine, files: Iterable[str]) -> dict[str, list[str]]:
    """The body hashes (never the text) of every version of each file this device holds:
    the file, its synced copy, its history. A device that has not heard of the forget sets
    aside a new file with one of them (the file renamed there) instead of uploading it."""
    state = engine.state
    out = {}
    for name in sorted(set(files)):
        versions = [engine.read_local(name), state.base(name)]
        versions += [v.path.read_bytes() for v in state.history(name)]
        hashes = body_hashes(versions)
        if hashes:
            out[name] = sorted(hashes)
    return out


def _body_lines(engine: Engine, files: Iterable[str]) -> dict[str, list[str]]:
    """The line hashes (never the text) of the body lines of every version of each file this
    device holds (`forgotten.body_line_hashes`), but those also in another memory file here:
    forgetting a file does not forget a sentence that stays elsewhere. A device that held
    the file takes these lines out of what it wrote since without having heard of the forget
    (a sentence merged into another file, the file renamed and edited) instead of uploading
    them."""
    from memsync.sync.walk import MemoryWalk

    state = engine.state
    names = sorted(set(files))
    out = {}
    for name in names:
        versions = [engine.read_local(name), state.base(name)]
        versions += [v.path.read_bytes() for v in state.history(name)]
        hashes = body_line_hashes(versions)
        if hashes:
            out[name] = hashes
    if not out:
        return {}
    elsewhere: set[str] = set()
    for other, path, _ in MemoryWalk(engine.ctx.memory_dir):
        if other in out or other in names:
            continue
        with contextlib.suppress(OSError):
            text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
            elsewhere |= line_hashes(text.splitlines())
    return {n: sorted(h - elsewhere) for n, h in out.items() if h - elsewhere}


def _run_job(engine: Engine, job: dict[str, Any], report: ForgetReport) -> None:
    """The remote part, then the local part, which happens even when the remote part fails
    (the job then stays listed for the next run)."""
    finished = False
    try:
        finish_remote(engine, job, None, report.remote_deleted, first=True)
        finished = True
    except Unreachable as exc:
        report.offline = str(exc)
    finally:
        erase_here(engine, job, first=True)
        if finished:
            drop_job(engine, job)
        engine.state.save()


def _sync_index(engine: Engine) -> None:
    """Bring MEMORY.md up to date first, so the index lines removed are the remote's too."""
    with contextlib.suppress(MemsyncError, OSError):
        engine.run("sync", [str(engine.local_path(INDEX))])


def _push(engine: Engine, names: Iterable[str], report: ForgetReport) -> None:
    paths = [  # an index the forget left empty too: it syncs (fresh-eyes s31a, finding 1)
        str(engine.local_path(n)) for n in sorted(set(names)) if engine.read_local(n) is not None
    ]
    if not paths:
        return
    from memsync.sync.tombstones import Purged

    try:
        result = engine.run("push", paths)
    except Purged:  # nothing is uploaded until the user republishes; the forget stands
        report.purged = True
        return
    if result.offline and report.offline is None:
        report.offline = result.offline


def _index_lines(engine: Engine, names: Iterable[str]) -> list[str]:
    return linking_lines(engine.read_local(INDEX), names)


def _indexes_before(engine: Engine) -> list[bytes]:
    """MEMORY.md here and on the remote before a forget syncs it: a merge may drop another
    device's line for the same file, whose hash must still go into the tombstone."""
    found = [engine.read_local(INDEX)]
    with contextlib.suppress(MemsyncError):
        found.append(engine.store.get(INDEX)[0])
    return [data for data in found if data is not None]


def _known_index_lines(engine: Engine, names: Iterable[str], before: list[bytes]) -> list[str]:
    """Every index line linking to `names` this device knows of: before and after the sync,
    and in its history copies of MEMORY.md."""
    copies = [v.path.read_bytes() for v in engine.state.history(INDEX)]
    return [line for data in [*before, *copies] for line in linking_lines(data, names)]


def forget_files(engine: Engine, names: list[str]) -> ForgetReport:
    """Forget whole files, and their index lines, everywhere this device can reach."""
    engine.confirm_project()  # another project's memory under this name is not this one's
    before = _indexes_before(engine)
    _sync_index(engine)
    report = ForgetReport(files=sorted(set(names)))
    with engine.locked():
        index_lines = _index_lines(engine, names)
        report.index_lines = len(index_lines)
        known = index_lines + _known_index_lines(engine, names, before)
        job = _start(engine, "forget", names, line_hashes(known))
        _run_job(engine, job, report)
    if index_lines:
        _push(engine, [INDEX], report)
    return report


# --- other devices' tombstones ---------------------------------------------------------------


# --- quarantine ------------------------------------------------------------------------------


def incoming(engine: Engine, names: Iterable[str]) -> list[str]:
    """For `status`: the files here that another device forgot and the next sync will remove
    (or, edited here, set aside). One GET of the tombstone list."""
    try:
        data, _ = engine.store.get(TOMBSTONES)
    except MemsyncError:
        return []
    files = read_tombstones(data)["files"]
    applied = set(engine.state.meta.tombstones_applied)
    return [
        f"{name} was forgotten on another device; the next sync removes it here (an edit "
        "not yet uploaded is set aside, not uploaded)"
        for name in sorted(names)
        if name in files and files[name]["id"] not in applied
    ]


def notices(engine: Engine, remote_purged: dict[str, Any] | None = None) -> list[str]:
    """What `status` says about forgetting and purging that needs the user."""
    out = []
    if remote_purged is not None and not engine.state.meta.purged:
        engine.state.meta.purged = remote_purged or {"at": time.time()}
    if engine.state.meta.purged:
        out.append(str(purged_here(engine)))
    for job in engine.state.meta.forgetting:
        out.append(
            f"forgetting {', '.join(job['files']) or 'the matched entries'} is not finished on "
            "the remote; the next `memsync sync` finishes it"
        )
    return out + quarantine_notices(engine)


# --- forget --match: entries inside append-type files, whole files elsewhere ---------------

_ENTRY_STRATEGIES = ("sections", "commitments", "carry_forward", "digest")


@dataclass
class MatchPlan:
    text: str
    files: list[str] = field(default_factory=list)  # forgotten whole
    entries: dict[str, int] = field(default_factory=dict)  # name -> entries removed
    rewrites: dict[str, bytes] = field(default_factory=dict)  # name -> content without them
    # name -> sections taken whole (their heading holds the text), and whether the body went
    sections: dict[str, tuple[int, bool]] = field(default_factory=dict)
    indexes_before: list[bytes] = field(default_factory=list)  # MEMORY.md before the pull
    # files that stay whose index line held the text: the line keeps its link, with the file's
    # own description (True) or none (False) in place of its words
    relined: dict[str, bool] = field(default_factory=dict)
    # earlier versions kept here (history, synced copies) holding it: forgotten with the rest,
    # and reason enough to run when no memory file holds it any more
    held: int = 0
    # the lines holding it in this device's synced copies before the pull (_synced_wordings)
    synced: list[str] = field(default_factory=list)
    # why the pull could not reach the remote (its copies were not searched), or None
    offline: str | None = None
    # the hashes of the lines that stay in a memory file here, the forget done (_taken_out)
    staying: set[str] = field(default_factory=set)


def _contains(data: bytes | str, needle: str) -> bool:
    """Case-insensitive, and blind to Unicode normalisation: text typed decomposed (NFD, as
    macOS input can give) finds the same text stored composed (fresh-eyes s32b, N3)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return folded(needle) in folded(text)


def _versions_holding(engine: Engine, needle: str) -> dict[str, list[str]]:
    """The versions here before the pull (the file, its synced copy) of each file that holds
    the text, by name."""
    out: dict[str, list[str]] = {}
    for name, rec in engine.state.records.items():
        for data in (engine.read_local(name), engine.state.content(rec.sha)):
            if data is not None and _contains(data, needle):
                out.setdefault(name, []).append(data.decode("utf-8", "replace"))
    return out


def _renamed_since(versions: list[str], text: str, needle: str) -> frozenset[str]:
    """The titles (normalised) of the sections of `text` that are a section whose heading
    held the text in an earlier version here, renamed since by another device (in other
    words, keeping its entries): the section the user means (fresh-eyes s34a, H7: online,
    the pull brought the rename and the thread stayed, under its new title; offline, the
    forget took it)."""
    from memsync.memory.sections import Section

    lines = text.splitlines()
    found = set()
    for version in versions:
        for old, new in retitled(lines, version.splitlines()).items():
            if _contains(old, needle) and not _contains(new, needle):
                found.add(Section(new, 0).key)
    return frozenset(found)


def _without_entries(
    name: str, text: str, needle: str, renamed: frozenset[str] = frozenset()
) -> tuple[str, int, int] | None:
    """The file with every matching entry (and section whose heading matches, or that is one
    whose heading did, renamed since: `renamed`) removed, the entries removed and the
    sections among them, or None if only forgetting it whole will do (the match is in
    frontmatter, or the type has no entries)."""
    from memsync.memory import frontmatter as memory
    from memsync.memory import sections
    from memsync.memory.memtypes import type_of

    try:
        doc = memory.parse(text)
    except memory.FrontmatterError:
        return None
    mtype = type_of(name, doc.meta)
    if mtype.name == "index":
        return None  # see _index_without
    if mtype.merge not in _ENTRY_STRATEGIES or (doc.meta and _contains(repr(doc.meta), needle)):
        return None
    tree = sections.parse(doc.body)
    dropped: list[str] = []
    removed = _drop_sections(tree, needle, dropped, renamed)
    for section in tree.walk():
        kept = []
        for entry in section.entries:
            if not _contains(entry, needle):
                kept.append(entry)
                continue
            removed += 1
            # the last entry of a section carries the blank line before the next heading:
            # only the matched lines go, the file's layout stays (report 27, finding 5)
            if tail := _blank_tail(entry):
                kept.append(tail)
        section.entries = kept
    body = tree.render()
    if _contains(body, needle):
        return None
    text = memory.render(doc.meta, body) if doc.meta is not None else body
    return text, removed, len(dropped)


def _body_of(text: str) -> str:
    from memsync.memory import frontmatter as memory

    return memory.parse(text).body


def _drop_sections(
    node: Section, needle: str, dropped: list[str], renamed: frozenset[str] = frozenset()
) -> int:
    """In place: take out the sections whose heading holds the text (a thread's title, a
    digest session's heading), with what they hold: that section is what the text is about,
    not the whole file (fresh-eyes s32b, N2: the whole file went). Returns the entries
    taken out (a heading is none: fresh-eyes s33c, G7); `dropped` gets each section's title."""
    removed = 0
    kept = []
    for child in node.children:
        if child.heading and (_contains(child.heading, needle) or child.key in renamed):
            removed += sum(sum(bool(e.strip()) for e in s.entries) for s in child.walk())
            dropped.append(child.title)
            continue
        removed += _drop_sections(child, needle, dropped, renamed)
        kept.append(child)
    node.children = kept
    return removed


def _blank_tail(entry: str) -> str:
    """The blank lines an entry ends with (none if it is blank throughout)."""
    lines = entry.splitlines(keepends=True)
    tail: list[str] = []
    while lines and not lines[-1].strip():
        tail.insert(0, lines.pop())
    return "".join(tail) if lines else ""


_LINKED = re.compile(r"^(\s*(?:[-*+]\s+)?)\[([^\]]*)\]\(<?([^)<>\s]+)>?\)")


def _index_without(
    text: str, needle: str, staying: dict[str, str], plan: MatchPlan
) -> tuple[str, int]:
    """An index without the text: a line holding it goes, unless it links to a file that stays
    (`staying`: name -> its content after the forget). Claude Code finds memory files through
    the index, so that line keeps its link (and its title, if the title does not hold the
    text) with the file's own frontmatter description in place of its words, or none."""
    from memsync.memory import frontmatter
    from memsync.memory.index_links import link_targets

    out: list[str] = []
    removed = 0
    for line in text.splitlines(keepends=True):
        if not _contains(line, needle):
            out.append(line)
            continue
        targets = sorted(t for t in link_targets(line) if t in staying)
        if not targets:
            removed += 1
            continue
        body = line.rstrip("\r\n")
        end = line[len(body) :] or "\n"
        head = _LINKED.match(body)
        for target in targets:
            prefix = head.group(1) if head and head.group(1).strip() else "- "
            title = head.group(2) if head and head.group(3).endswith(target) else ""
            if not title or _contains(title, needle):
                title = target.rsplit("/", 1)[-1].removesuffix(".md")
            try:
                meta = frontmatter.parse(staying[target]).meta
            except frontmatter.FrontmatterError:
                meta = None
            about = " ".join(str(frontmatter.field(meta, "description") or "").split())
            about = "" if _contains(about, needle) else about
            out.append(f"{prefix}[{title}]({target})" + (f" — {about}" if about else "") + end)
            plan.relined[target] = bool(about)
    return "".join(out), removed


def plan_match(engine: Engine, needle: str) -> MatchPlan:
    """What `forget --match` will remove. Pulls first, so remote-only files are seen too."""
    from memsync.sync.walk import MemoryWalk

    if len(needle.strip()) < 3:
        raise UserError("--match needs at least 3 characters, so it cannot match everything")
    engine.confirm_project()
    before = _indexes_before(engine)
    synced = _synced_wordings(engine, needle)  # before the pull merges a rewording over them
    earlier = _versions_holding(engine, needle)
    from memsync.sync.tombstones import Purged

    offline = None
    try:
        offline = engine.run("pull").offline
    except Purged:
        pass  # nothing to pull: what this device holds is what there is to forget
    except GuardError as exc:  # forget has no --force: say which command takes it
        raise exc.within("forget", "pull") from None
    plan = MatchPlan(needle, indexes_before=before, synced=synced, offline=offline)
    contents: dict[str, str] = {}
    indexes: list[str] = []
    for name, path, _ in sorted(MemoryWalk(engine.ctx.memory_dir)):
        if os.path.islink(path):  # its target is walked under its own name
            continue
        data = Path(path).read_bytes()
        contents[name] = data.decode("utf-8", "replace")
        renamed = _renamed_since(earlier.get(name, []), contents[name], needle)
        if not _contains(data, needle) and not renamed:
            continue
        if _is_index(name, contents[name]):
            indexes.append(name)  # after the others: which files stay decides its lines
            continue
        rewritten = _without_entries(name, contents[name], needle, renamed)
        if rewritten is None:
            plan.files.append(name)
        else:
            text, plan.entries[name], taken = rewritten
            plan.rewrites[name] = text.encode()
            if taken:
                plan.sections[name] = (taken, not _body_of(text).strip())
    staying = {
        name: plan.rewrites[name].decode() if name in plan.rewrites else text
        for name, text in contents.items()
        if name not in plan.files
    }
    for name in indexes:
        text, removed = _index_without(contents[name], needle, staying, plan)
        plan.rewrites[name] = text.encode()
        plan.entries[name] = removed
        staying[name] = text
    plan.staying = {h for text in staying.values() for h in line_hashes(text.splitlines())}
    state = engine.state
    versions = [v.path for n in state.history_names() for v in state.history(n)]
    plan.held = sum(_contains(p.read_bytes(), needle) for p in versions) + sum(
        _contains(base, needle)
        for rec in state.records.values()
        if (base := state.content(rec.sha)) is not None
    )
    return plan


def _is_index(name: str, text: str) -> bool:
    from memsync.memory import frontmatter
    from memsync.memory.memtypes import type_of

    try:
        meta = frontmatter.parse(text).meta
    except frontmatter.FrontmatterError:
        meta = None
    return type_of(name, meta).name == "index"


def _matching_conflicts(engine: Engine, plan: MatchPlan) -> set[str]:
    """The ids of the conflict records, here and on the remote, whose description holds the
    text (a heading or a commitment id it names), or, in a file the forget rewrites, whose
    versions kept side by side are none of them in it any more (a section's title changed on
    two devices, `## A / B`, then forgotten: the record names the title it had before, which
    need not hold the text; fresh-eyes s33c, G6); those here are cleared now. The remote's
    are taken off it with the job's remote part, and the other devices clear theirs by id."""
    from memsync.memory.merge import marks_of
    from memsync.sync.conflicts import recorded
    from memsync.sync.remote_keys import CONFLICTS

    left = {name: marks_of(data) for name, data in plan.rewrites.items()}

    def about(c: dict[str, Any]) -> bool:  # the description: a name holding it is no reason
        marks = c.get("marks") if isinstance(c.get("marks"), list) else None
        name = str(c.get("file"))
        over = bool(marks) and name in left and not set(marks or ()) & left[name]
        return over or _contains(str(c.get("detail")), plan.text)

    state = engine.state
    hit = state.conflicts.drop(lambda c: about(c.as_json()))
    ids = {c.id for c in hit if c.id is not None}
    with contextlib.suppress(MemsyncError):
        data, _ = engine.store.get(CONFLICTS)
        ids |= {c["id"] for c in recorded(data) if about(c)}
    return ids


def apply_match(engine: Engine, plan: MatchPlan) -> ForgetReport:
    """Remove the entries (pushed through the normal merge, where a removal made since the
    base stays removed), forget the whole files everywhere, and take the text out of every
    local history version. The tombstone and the audit log get hashes, never the text."""
    report = ForgetReport(files=sorted(plan.files), searched_offline=plan.offline is not None)
    with engine.locked():
        forgotten = _index_lines(engine, plan.files)
        forgotten += _known_index_lines(engine, plan.files, plan.indexes_before)
        taken = [
            line
            for name, data in plan.rewrites.items()
            for line in _removed_lines(engine.read_local(name), data)
        ]
        for name in engine.state.history_names():
            for version in engine.state.history(name):
                taken += _forgotten_in(name, version.path.read_bytes(), plan.text)
        taken += plan.synced + _synced_wordings(engine, plan.text)
        forgotten += _taken_out(plan, taken)
        forgotten += _earlier_forms(forgotten)
        forgotten += [x for line in forgotten for x in title_parts(line) if _contains(x, plan.text)]
        report.index_lines = len(_index_lines(engine, plan.files))
        job = _start(
            engine,
            "forget-match",
            plan.files,
            line_hashes(forgotten) | {text_mark(plan.text)},
            plan.rewrites,
            _matching_conflicts(engine, plan),
            match_sha256=hashlib.sha256(plan.text.encode()).hexdigest()[:16],
            entries=plan.entries,
        )
        for name, data in plan.rewrites.items():
            engine.write_local(name, data)  # no history copy: that copy is what we forget
        _scrub_held(engine, plan.text, set(job["lines"]))
        _run_job(engine, job, report)
    _push(engine, [*plan.rewrites, *([INDEX] if report.index_lines else [])], report)
    return report


def _scrub_held(engine: Engine, needle: str, hashes: set[str]) -> None:
    """Each local history version without the lines the forget takes, as the other devices
    scrub theirs (a copy left empty goes), and gone if the text is still in it: the rest of
    it (a rewording a merge set aside there, another entry) is what history keeps it for
    (the devices machine: a forget of one new commitment took the rewording of another, kept
    only in that version, with it)."""
    scrub_history(engine.state, hashes)
    for name in engine.state.history_names():
        for version in engine.state.history(name):
            if _contains(version.path.read_bytes(), needle):
                version.path.unlink()
                version.path.with_suffix(".reason").unlink(missing_ok=True)


def _taken_out(plan: MatchPlan, lines: list[str]) -> list[str]:
    """Of the lines the forget takes out of the files and earlier versions here, those the
    tombstone forgets: those holding the text, and the rest of a section whose heading holds
    it, but not a line that stays in a memory file here or a template's line (`### Arcs`
    under a forgotten session): those are in files that never held what was forgotten, and
    the other devices would take them out of every file whose synced copy has them
    (fresh-eyes s32c, W1: another day's digest lost its `### Arcs` and `### Open threads`
    headings, everywhere)."""
    from memsync.util.resources import template_lines

    templates = template_lines()
    return [
        line
        for line in lines
        if _contains(line, plan.text)
        or (line_hash(line) not in plan.staying and " ".join(line.split()) not in templates)
    ]


def _forgotten_in(name: str, data: bytes, needle: str) -> list[str]:
    """The lines of an earlier version of `name` (history, a synced copy) the forget takes:
    those holding the text, and the rest of a section whose heading holds it, in the wording
    that version had (fresh-eyes s33a, N1: an entry under a forgotten heading stayed, in
    the wording before another device reworded it, in a third device's history)."""
    text = data.decode("utf-8", "replace")
    out = [line for line in text.splitlines() if _contains(line, needle)]
    rewritten = _without_entries(name, text, needle)
    if rewritten is not None and rewritten[2]:
        out += _removed_lines(data, rewritten[0].encode())
    return out


def _synced_wordings(engine: Engine, needle: str) -> list[str]:
    """The lines the forget takes (`_forgotten_in`) in this device's synced copies: a line
    reworded here and not synced yet is, on the remote and the other devices, still in the
    words it was synced in (fresh-eyes s32a, finding 2: their pulls kept that wording in
    history)."""
    out = []
    for name, rec in engine.state.records.items():
        base = engine.state.content(rec.sha)
        if base is not None and _contains(base, needle):
            out += _forgotten_in(name, base, needle)
    return out


# --- purge -----------------------------------------------------------------------------------


@dataclass
class PurgeReport:
    remote_deleted: int
    unreachable: list[str]


def _delete_remote(engine: Engine, name: str) -> bool:
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            _, etag = store.get(name)
        except NotFound:
            return False
        try:
            store.delete(name, etag)
            return True
        except NotFound:
            return False
        except PreconditionFailed:
            continue  # changed meanwhile: purging wins, try again with the new ETag
    raise UserError(f"{name} kept changing on the remote; run `memsync purge --all` again")


def _put_purge_mark(engine: Engine, payload: bytes) -> None:
    """The purge mark, written before anything is deleted: a purge the remote stops answering
    halfway through still keeps every device from publishing what is left."""
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            store.create(PURGED, payload)
            return
        except NotFound:  # no container (an Azure remote never pushed to)
            store.ensure()
        except PreconditionFailed:  # an earlier purge's mark (perhaps lifted): this one's now
            try:
                _, etag = store.get(PURGED)
                store.replace(PURGED, payload, etag)
                return
            except (NotFound, PreconditionFailed):
                continue
    raise UserError(f"{PURGED} kept changing on the remote; run `memsync purge --all` again")


def purge(engine: Engine) -> PurgeReport:
    """Hard-erase the remote prefix and all of memsync's local state for this project, then
    mark both so that no device uploads this project's memory again without being told to.
    An unreachable remote stops it before anything here is deleted (Unreachable, exit 3):
    nothing is queued, since erasing later could take what other devices wrote meanwhile."""
    store = engine.store
    deleted = 0
    marker = {"id": os.urandom(8).hex(), "at": time.time(), "device": engine.ctx.device}
    with engine.locked():
        try:
            listing = store.list()
        except NotFound:
            listing = {}
        except Unreachable as exc:
            raise Unreachable(
                f"{exc}; nothing was deleted; run `memsync purge --all` again when the remote "
                "is reachable"
            ) from exc
        engine.confirm_project(listing)  # never erase another project's memory
        try:
            _put_purge_mark(engine, json.dumps(marker, sort_keys=True).encode())
            for key, entry in sorted(listing.items()):
                if key in (PURGED, TOMBSTONES):
                    # the forget records stay (hashes and names, never content): a device
                    # that publishes again before it heard of a forget still takes it in
                    continue
                try:
                    store.delete(key, entry.etag)
                    deleted += 1
                except NotFound:
                    continue
                except PreconditionFailed:
                    deleted += _delete_remote(engine, key)
        except Unreachable as exc:
            raise Unreachable(
                f"{exc}; the remote became unreachable after {deleted} of its object(s) were "
                "deleted (its purge mark keeps every device from publishing the rest), nothing "
                "here was deleted; run `memsync purge --all` again when the remote is reachable"
            ) from exc
        # the content hashes (never the content) of what was synced: `push --republish` onto
        # a remote another device has republished meanwhile tells the files this device left
        # untouched from its edits, with no merge base left to tell them by
        synced = {name: rec.sha for name, rec in engine.state.records.items()}
        state_dir = engine.ctx.state_dir
        for path in state_dir.iterdir():
            if path.name == "lock":
                continue
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        shutil.rmtree(engine.ctx.home / "quarantine" / state_dir.name, ignore_errors=True)
        engine.state.meta = Meta()
        engine.state.meta.purged = {**marker, "synced": synced}
        engine.state.save_meta()
    audit(engine, "purge", remote_objects_deleted=deleted)
    remote_kind = "azure" if engine.ctx.remote.startswith("http") else "folder"
    unreachable = [
        "other devices keep their local copies; their next sync sees the purge, uploads "
        "nothing and says so (to erase memsync's state there too, run `memsync purge --all "
        "--yes` on each)",
        f"the memory files themselves in {engine.ctx.memory_dir} were left in place; "
        f"no device publishes them again until someone runs `{REPUBLISH}`",
    ]
    if remote_kind == "azure":
        unreachable.append(
            "if soft delete or blob versioning is enabled on the storage account, Azure keeps "
            "deleted blobs for its retention period; purge them there"
        )
    else:
        unreachable.append("backups or snapshots of the remote folder are out of memsync's reach")
    return PurgeReport(deleted, unreachable)


def republish(engine: Engine) -> str | None:
    """Lift the purge marks (here and on the remote); before an empty remote (emptied on
    purpose, made anew), forget what was synced with it, so that everything here goes up as
    new. The device that lifted the remote mark (this one, or one that published again
    first), or None if there was nothing to lift.

    The remote mark is not removed but notes who lifted it (see `blocking_purge`). Before a
    remote another device has published again: a file synced before the purge and gone from
    it goes up as new (this device's memory is what it publishes), and a file this device
    left untouched since the purge takes the other device's version, not a conflict: the
    purging device has no merge base left, so the content hash it kept (`purge`) says which
    side changed."""
    with engine.locked():
        marker, engine.state.meta.purged = engine.state.meta.purged, None
        engine.store.project_known = False  # a folder remote: its project folder may be made
        try:
            listing = engine.store.list()
        except NotFound:
            listing = {}
        had = _records_for_republish(engine, listing, marker)
        engine.state.save()
        had = _lift_remote_mark(engine, had) or had
        by, engine.state.meta.lifted_by = engine.state.meta.lifted_by, None
        engine.state.save_meta()
    if had:
        audit(engine, "republish")
    return (by or engine.ctx.device) if had else None


def _records_for_republish(engine: Engine, listing: dict, marker: Any) -> bool:
    """What this device's records should say before it publishes again: nothing, before an
    empty remote; before one another device filled, no record of the files the purge erased,
    and for a file still synced here as it was, the content hash the purge kept. True if
    there was a purge to lift here."""
    from memsync.sync.state import Record
    from memsync.sync.walk import is_ignored

    records = engine.state.records
    # memsync's own records (the purge mark itself) are not memory
    if all(is_ignored(key) for key in listing):
        had = marker is not None or bool(records)
        for name in list(records):
            engine.state.forget(name)
        return had
    if marker is None:
        return False
    for name in [n for n in records if n not in listing]:
        engine.state.forget(name)  # erased by the purge, not deleted by anyone
    synced = marker.get("synced") if isinstance(marker, dict) else None
    for name, sha in (synced if isinstance(synced, dict) else {}).items():
        if name in listing and name not in records and isinstance(sha, str):
            records[name] = Record("", sha, 0.0)  # etag unknown: the remote changed
    return True


def _lift_remote_mark(engine: Engine, had: bool) -> bool:
    """Note on the remote purge mark that this device published again (a mark memsync did
    not write is replaced by one of its own). True if a mark was lifted now."""
    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = store.get(PURGED)
        except NotFound:
            return False
        try:
            mark = json.loads(data)
        except ValueError:
            mark = {"id": os.urandom(8).hex(), "at": time.time()}
        if not isinstance(mark, dict):
            mark = {}
        lifted = isinstance(mark.get("republished"), dict)
        if lifted and not had and mark.get("id") == engine.state.meta.purge_seen:
            return False  # lifted long ago, with this device's knowledge: nothing to lift
        if lifted:  # another device published again first: the mark keeps saying so
            engine.state.meta.purge_seen = mark.get("id")
            engine.state.meta.purge_seen_etag = etag
            engine.state.meta.lifted_by = mark["republished"].get("device")
            return False
        mark["republished"] = {"device": engine.ctx.device, "at": time.time()}
        try:
            new = store.replace(PURGED, json.dumps(mark, sort_keys=True).encode(), etag)
        except NotFound:
            return False
        except PreconditionFailed:
            continue
        engine.state.meta.purge_seen = mark.get("id")
        engine.state.meta.purge_seen_etag = new
        return True
    return False
