"""Forgetting for real: `memsync forget` and `memsync purge`.

A forgotten file is deleted locally, remotely, from local history and from the last-synced
records, and its name goes into a remote tombstone list so that other devices delete their
copies (history included) on their next sync instead of uploading them again. Every forget is
appended to an audit log that records what and when and where — never the content.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memsync.config import strip_query
from memsync.errors import NotFound, PreconditionFailed, UserError
from memsync.fsutil import private_dir

if TYPE_CHECKING:
    from memsync.engine import Engine

MAX_ATTEMPTS = 8


def audit(engine: Engine, action: str, **details: Any) -> None:
    """Append one JSON line to $MEMSYNC_HOME/audit.log (0600)."""
    ctx = engine.ctx
    private_dir(ctx.home)
    record = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "action": action,
        "device": ctx.device,
        "project": ctx.project,
        "remote": strip_query(ctx.remote),
        **details,
    }
    path = ctx.home / "audit.log"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


def _load_tombstones(data: bytes | None) -> dict[str, Any]:
    try:
        doc = json.loads(data) if data else {}
    except ValueError:
        doc = {}
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        doc = {"version": 1, "files": {}}
    return doc


def _add_tombstones(engine: Engine, names: list[str]) -> None:
    """Add names to the remote tombstone list (conditional read-modify-write)."""
    from memsync.engine import TOMBSTONES

    store = engine.store
    for _ in range(MAX_ATTEMPTS):
        try:
            data, etag = store.get(TOMBSTONES)
        except NotFound:
            data, etag = None, None
        doc = _load_tombstones(data)
        for name in names:
            doc["files"][name] = {"at": time.time(), "device": engine.ctx.device}
        payload = json.dumps(doc, indent=1, sort_keys=True).encode()
        try:
            new = (
                store.create(TOMBSTONES, payload)
                if etag is None
                else store.replace(TOMBSTONES, payload, etag)
            )
        except PreconditionFailed:
            continue
        engine.state.meta["tombstones_etag"] = new
        return
    raise UserError("the remote tombstone list kept changing; run `memsync forget` again")


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
            continue  # changed meanwhile: forgetting wins, try again with the new ETag
    raise UserError(f"{name} kept changing on the remote; run `memsync forget` again")


def _erase_local(engine: Engine, name: str) -> bool:
    """Delete the file, its history and its record. True if a local file was removed."""
    existed = False
    try:
        engine.local_path(name).unlink()
        existed = True
    except FileNotFoundError:
        pass
    engine.state.drop_history(name)
    engine.state.forget(name)
    engine.state.unqueue([name])
    return existed


def apply_tombstones(engine: Engine, data: bytes) -> list[str]:
    """Erase every file another device forgot. Returns the names handled."""
    names = sorted(_load_tombstones(data)["files"])
    for name in names:
        try:
            _erase_local(engine, name)
        except (OSError, UserError):
            continue
    return names


@dataclass
class ForgetReport:
    files: list[str] = field(default_factory=list)
    remote_deleted: list[str] = field(default_factory=list)


def forget_files(engine: Engine, names: list[str]) -> ForgetReport:
    """Forget whole files everywhere this device can reach."""
    report = ForgetReport()
    with engine.locked():
        for name in names:
            if _delete_remote(engine, name):
                report.remote_deleted.append(name)
            _erase_local(engine, name)
            report.files.append(name)
        _add_tombstones(engine, names)
        engine.state.save()
    audit(engine, "forget", files=report.files, remote_deleted=report.remote_deleted)
    return report


@dataclass
class PurgeReport:
    remote_deleted: int
    state_removed: bool
    unreachable: list[str]


def purge(engine: Engine) -> PurgeReport:
    """Hard-erase the remote prefix and all of memsync's local state for this project."""
    store = engine.store
    deleted = 0
    with engine.locked():
        for key, entry in sorted(store.list().items()):
            try:
                store.delete(key, entry.etag)
                deleted += 1
            except NotFound:
                continue
            except PreconditionFailed:
                deleted += _delete_remote(engine, key)
        state_dir = engine.ctx.state_dir
        for path in state_dir.iterdir():
            if path.name == "lock":
                continue
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    audit(engine, "purge", remote_objects_deleted=deleted)
    remote_kind = "azure" if engine.ctx.remote.startswith("http") else "folder"
    unreachable = [
        "other devices keep their local copies until they sync (their next sync sees the "
        "remote empty and refuses the mass deletion without --force, so tell them to run "
        "`memsync purge --all --yes` too)",
        f"the memory files themselves in {engine.ctx.memory_dir} were left in place",
    ]
    if remote_kind == "azure":
        unreachable.append(
            "if soft delete or blob versioning is enabled on the storage account, Azure keeps "
            "deleted blobs for its retention period; purge them there"
        )
    else:
        unreachable.append("backups or snapshots of the remote folder are out of memsync's reach")
    return PurgeReport(deleted, True, unreachable)


# --- forget --match: entries inside append-type files, whole files elsewhere ---------------

_ENTRY_STRATEGIES = ("sections", "commitments", "carry_forward", "digest")


@dataclass
class MatchPlan:
    text: str
    files: list[str] = field(default_factory=list)  # forgotten whole
    entries: dict[str, int] = field(default_factory=dict)  # name -> entries removed
    rewrites: dict[str, bytes] = field(default_factory=dict)  # name -> content without them


def _contains(data: bytes | str, needle: str) -> bool:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return needle.casefold() in text.casefold()


def _without_entries(name: str, text: str, needle: str) -> tuple[str, int] | None:
    """The file with every matching entry removed, or None if only forgetting it whole will do
    (the match is in frontmatter or a heading, or the type has no entries)."""
    from memsync import memory, sections
    from memsync.memtypes import type_of

    try:
        doc = memory.parse(text)
    except memory.FrontmatterError:
        return None
    mtype = type_of(name, doc.meta)
    if mtype.name == "index":
        lines = text.splitlines(keepends=True)
        kept = [line for line in lines if not _contains(line, needle)]
        return "".join(kept), len(lines) - len(kept)
    if mtype.merge not in _ENTRY_STRATEGIES or (doc.meta and _contains(repr(doc.meta), needle)):
        return None
    tree = sections.parse(doc.body)
    removed = 0
    for section in tree.walk():
        if section.heading and _contains(section.heading, needle):
            return None
        kept = [e for e in section.entries if not _contains(e, needle)]
        removed += len(section.entries) - len(kept)
        section.entries = kept
    body = tree.render()
    if _contains(body, needle):
        return None
    return memory.render(doc.meta, body) if doc.meta is not None else body, removed


def plan_match(engine: Engine, needle: str) -> MatchPlan:
    """What `forget --match` will remove. Pulls first, so remote-only files are seen too."""
    from memsync.engine import is_ignored

    if len(needle.strip()) < 3:
        raise UserError("--match needs at least 3 characters, so it cannot match everything")
    engine.run("pull")
    plan = MatchPlan(needle)
    root = engine.ctx.memory_dir
    if not root.is_dir():
        return plan
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if not path.is_file() or path.is_symlink() or is_ignored(name):
            continue
        data = path.read_bytes()
        if not _contains(data, needle):
            continue
        rewritten = _without_entries(name, data.decode("utf-8", "replace"), needle)
        if rewritten is None:
            plan.files.append(name)
        else:
            plan.rewrites[name] = rewritten[0].encode()
            plan.entries[name] = rewritten[1]
    return plan


def apply_match(engine: Engine, plan: MatchPlan) -> ForgetReport:
    """Remove the entries (pushed through the normal merge, where a removal made since the
    base stays removed), forget the whole files everywhere, and drop every local history
    version holding the text. The audit log gets a hash of the text, never the text."""
    import hashlib

    report = forget_files(engine, plan.files) if plan.files else ForgetReport()
    with engine.locked():
        for name, data in plan.rewrites.items():
            engine.write_local(name, data)  # no history copy: that copy is what we forget
        for name in engine.state.history_names():
            for version in engine.state.history(name):
                if _contains(version.path.read_bytes(), plan.text):
                    version.path.unlink()
                    version.path.with_suffix(".reason").unlink(missing_ok=True)
    if plan.rewrites:
        result = engine.run("push", [str(engine.local_path(n)) for n in plan.rewrites])
        if result.offline:
            report.remote_deleted.append("(entries queued: the remote is unreachable)")
    audit(
        engine,
        "forget-match",
        match_sha256=hashlib.sha256(plan.text.encode()).hexdigest()[:16],
        files=plan.files,
        entries=plan.entries,
    )
    return report
