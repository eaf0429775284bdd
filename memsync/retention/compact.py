"""Retention (`memsync compact`): a pure planner and a careful executor.

`plan(files, now)` looks at the memory files' bytes and a date and returns what to write, update
and delete, each with a one-sentence reason (like restic's ApplyPolicy: a pure function of its
inputs, so the whole policy is tested from tables). `apply(engine, actions)` carries a plan out
without ever losing content: roll-ups are written and pushed before any source is deleted, and a
run interrupted at any point is completed by running plan and apply again.

The rules: session digests roll up by age (policy.py, rollup_plan.py); the rolling single files
are trimmed by type (file_plans.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.memory import frontmatter as memory
from memsync.memory import index_limit, rollups
from memsync.memory.index_links import link_targets
from memsync.memory.memtypes import type_of
from memsync.memory.merge import entry_mark
from memsync.retention.file_plans import FILE_RULES
from memsync.retention.policy import (
    DEFAULT_POLICY,
    DELETE,
    UPDATE,
    WRITE,
    Action,
    Policy,
    digest_period,
    sha256_hex,
)
from memsync.retention.rollup_plan import plan_digests
from memsync.sync.mode import Mode
from memsync.sync.walk import MemoryWalk

if TYPE_CHECKING:
    from memsync.sync.engine import Engine, SyncResult


_KIND_ORDER = {WRITE: 0, UPDATE: 0, DELETE: 1}


def plan(files: Mapping[str, bytes], now: date, policy: Policy = DEFAULT_POLICY) -> list[Action]:
    """What compaction would do to these memory files today. Pure: no I/O, no clock.

    Writes and updates come first, then deletes, so every roll-up is written before any of its
    sources goes. Files that do not parse, or are marked `sensitivity: high`, are left alone.
    """
    docs: dict[str, tuple[bytes, memory.Document]] = {}
    for name in sorted(files):
        data = files[name]
        try:
            docs[name] = (data, memory.parse(memory.decode(data)))
        except memory.FrontmatterError:
            continue
    actions = plan_digests(docs, set(files), now, policy)
    for name, (data, doc) in docs.items():
        rule = FILE_RULES.get(type_of(name, doc.meta).name)
        if rule is None or doc.meta is None:
            continue
        text = memory.decode(data)
        crlf = text.count("\r\n") * 2 > text.count("\n")  # as merges do: CRLF stays CRLF
        try:
            outcome = rule(text.replace("\r\n", "\n"), now, policy)
        except memory.FrontmatterError:
            continue
        if outcome is not None and crlf:
            outcome = (outcome[0].decode("utf-8").replace("\n", "\r\n").encode(), outcome[1])
        if outcome is not None and outcome[0] != data:
            content, reason = outcome
            actions.append(Action(UPDATE, name, reason, content, [name], [], sha256_hex(data)))
    index = _plan_index(files, actions)
    if index is not None:
        actions.append(index)
    actions.sort(key=lambda a: (_KIND_ORDER[a.kind], a.name))
    return actions


_INDEX = "MEMORY.md"


def _plan_index(files: Mapping[str, bytes], actions: list[Action]) -> Action | None:
    """MEMORY.md without the lines that link only to digests being compacted away, each
    replaced by a line for the roll-up that now holds it (unless the index links it already).
    An index that never listed the digests is left alone."""
    deleted = {a.name: a.into for a in actions if a.kind == DELETE}
    data = files.get(_INDEX)
    if data is None or not deleted:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    contents = dict(files) | {a.name: a.content for a in actions if a.content is not None}
    lines = text.splitlines(keepends=True)
    linked = {target for line in lines for target in link_targets(line)}
    out: list[str] = []
    dropped = 0
    for line in lines:
        targets = sorted(link_targets(line))
        if not targets or not all(t in deleted for t in targets):
            out.append(line)
            continue
        dropped += 1
        for home in (h for t in targets for h in deleted[t]):
            if home not in linked:
                linked.add(home)
                out.append(_index_line(home, contents.get(home)))
    if not dropped:
        return None
    noun = "digest" if dropped == 1 else "digests"
    reason = f"points the index lines of {dropped} compacted {noun} at their roll-ups."
    new = "".join(out).encode("utf-8")
    return Action(UPDATE, _INDEX, reason, new, [_INDEX], [], sha256_hex(data))


def plan_index_limit(files: Mapping[str, bytes]) -> list[Action]:
    """MEMORY.md brought within what Claude Code loads (index_limit.split): the sub-indexes
    to write or update, then MEMORY.md. Pure, like `plan`."""
    new = index_limit.split(files)
    actions = []
    for name in sorted(new, key=lambda n: (n == _INDEX, n)):
        old = files.get(name)
        if name == _INDEX:
            reason = (
                "keeps the lines Claude Code loads and links the sub-indexes holding the rest "
                f"(it loads {index_limit.MAX_LINES} lines, {index_limit.MAX_CHARS:,} characters)."
            )
        else:
            reason = "holds the MEMORY.md lines past what Claude Code loads, linked from it."
        kind = WRITE if old is None else UPDATE
        expected = None if old is None else sha256_hex(old)
        actions.append(Action(kind, name, reason, new[name], [_INDEX], [], expected))
    return actions


def apply_index_limit(engine: Engine, actions: list[Action]) -> CompactResult:
    """Write the sub-indexes and push them, then MEMORY.md and push it: no other device
    gets an index linking a sub-index the remote does not hold yet. A file changed since the
    plan is left for the next run (and MEMORY.md with it, so no line is lost)."""
    result = CompactResult(False, list(actions))
    subs = [a for a in actions if a.name != _INDEX]
    index = [a for a in actions if a.name == _INDEX]
    with engine.locked():
        if _write_rollups(engine, subs, result, _no_step):
            result.skipped.update({a.name: "a sub-index it needs changed meanwhile" for a in index})
            return result
    if subs:
        result.pushes.append(engine.run(Mode.PUSH, [str(engine.local_path(a.name)) for a in subs]))
    with engine.locked():
        if _write_rollups(engine, index, result, _no_step):
            return result
    if index:
        result.pushes.append(engine.run(Mode.PUSH, [str(engine.local_path(_INDEX))]))
    return result


def _no_step(kind: str, name: str) -> None:
    return None


def _index_line(name: str, content: bytes | None) -> str:
    meta: Mapping[str, Any] = {}
    if content is not None:
        try:
            meta = memory.parse(memory.decode(content)).meta or {}
        except memory.FrontmatterError:
            meta = {}
    title = str(meta.get("name") or name.removesuffix(".md"))
    description = meta.get("description")
    return f"- [{title}]({name})" + (f" — {description}" if description else "") + "\n"


def plan_to_dict(actions: Iterable[Action]) -> dict[str, Any]:
    """The plan as JSON-ready data (for `--json` and `--dry-run`): content by size and hash."""
    items = []
    counts = {WRITE: 0, UPDATE: 0, DELETE: 0}
    for a in actions:
        counts[a.kind] = counts.get(a.kind, 0) + 1
        item: dict[str, Any] = {"kind": a.kind, "name": a.name, "reason": a.reason}
        if a.content is not None:
            item["bytes"] = len(a.content)
            item["sha256"] = sha256_hex(a.content)
        if a.sources:
            item["sources"] = list(a.sources)
        if a.into:
            item["into"] = list(a.into)
        items.append(item)
    return {"actions": items, "counts": counts}


@dataclass
class CompactResult:
    dry_run: bool
    planned: list[Action] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # name → why it was left for later
    notes: list[str] = field(default_factory=list)
    pushes: list[SyncResult] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.skipped and not self.dry_run


Step = Callable[[str, str], None]


_MANAGED = {"session_digest", *FILE_RULES}


def _unpushed(engine: Engine) -> set[str]:
    """Files compaction rewrites whose local content is not what was last synced (an earlier
    run may have been interrupted between writing and pushing them)."""
    out: set[str] = set()
    records = engine.state.records
    for name, path, _ in MemoryWalk(engine.ctx.memory_dir):
        if not name.endswith(".md") or type_of(name).name not in _MANAGED:
            continue
        period = digest_period(name)
        if period is not None and period.tier == "day":
            continue
        rec = records.get(name)
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        if rec is None or rec.sha != sha256_hex(data):
            out.add(name)
    return out


def read_memory(root: Path) -> dict[str, bytes]:
    """The memory dir's Markdown files by name: what `plan` works on."""
    return {
        name: Path(path).read_bytes() for name, path, _ in MemoryWalk(root) if name.endswith(".md")
    }


def _rollup_sources(engine: Engine) -> set[str]:
    """Every name a local roll-up lists in `sources`."""
    listed: set[str] = set()
    for name, path, _ in MemoryWalk(engine.ctx.memory_dir):
        period = digest_period(name)
        if period is None or period.tier == "day":
            continue
        try:
            listed.update(rollups.sources(Path(path).read_bytes()))
        except OSError:
            continue
    return listed


def _write_rollups(
    engine: Engine, writes: list[Action], result: CompactResult, step: Step
) -> set[str]:
    """Write the roll-ups and updates whose files are as the plan saw them (the old content
    to local history first); returns the names that changed meanwhile and were left alone."""
    failed: set[str] = set()
    for a in writes:
        assert a.content is not None
        current = engine.read_local(a.name)
        if current == a.content:
            continue  # already done by an earlier, interrupted run
        if (current is None) != (a.expected is None) or (
            current is not None and sha256_hex(current) != a.expected
        ):
            failed.add(a.name)
            result.skipped[a.name] = "it changed since the plan was made; run compact again"
            continue
        step(a.kind, a.name)
        if current is not None:
            engine.state.keep(a.name, current, "before compaction rewrote it")
        engine.write_local(a.name, a.content)
        if a.reworded:
            engine.share_conflict(a.name, _reworded_conflict(a), _reworded_conflict(a, here=False))
            engine.state.save_meta()
        (result.written if a.kind == WRITE else result.updated).append(a.name)
    return failed


def _reworded_conflict(action: Action, here: bool = True) -> str:
    """The conflict of a roll-up whose entries (or a session's title) took the wording of a
    digest that came back (edited on another device after it was rolled up): a rewording,
    or, in a copy from before the entry was written, a new entry of most of the same words.
    `here`: as the compacting device says it; else as the other devices read it."""
    where = (
        f"`memsync history {action.name}` (before compaction rewrote it)"
        if here
        else f"local history on the device that compacted it (`memsync history {action.name}`)"
    )
    return (
        f"compaction gave {action.reworded} entr(ies) of it the wording of a session digest "
        "that came back (edited on another device after it was rolled up): if one was a new "
        f"entry rather than a rewording, the roll-up as it was is in {where}: copy the entry "
        f"back, then `memsync resolve {action.name}`"
    )


def _delete_sources(
    engine: Engine,
    deletes: list[Action],
    failed: set[str],
    disabled: bool,
    result: CompactResult,
    step: Step,
) -> None:
    """Delete each source whose roll-ups are all on the remote (or, with sync off, written
    here) and which is as the plan saw it; a copy goes to local history first."""
    records = engine.state.records

    def on_remote(name: str) -> bool:
        local = engine.read_local(name)
        if local is None or name in failed:
            return False
        if disabled:
            return True
        rec = records.get(name)
        return rec is not None and rec.sha == sha256_hex(local)

    for a in deletes:
        missing = [n for n in a.into if not on_remote(n)]
        if missing:
            result.skipped[a.name] = (
                f"kept until {', '.join(missing)} is on the remote; run compact again"
            )
            continue
        current = engine.read_local(a.name)
        if current is None:
            continue
        if sha256_hex(current) != a.expected:
            result.skipped[a.name] = (
                "it changed since the plan was made; the next compaction folds the change in"
            )
            continue
        step(DELETE, a.name)
        engine.state.keep(a.name, current, f"compacted into {', '.join(a.into)}")
        _carry_conflicts(engine, a)
        engine.local_path(a.name).unlink()
        result.deleted.append(a.name)


_HEADING_LINE = re.compile(r"^\s*#{1,6}\s+(\S.*?)\s*$")


def heading_forms(line: str) -> list[str]:
    """A heading at every level: a roll-up moves a digest's `## Session …` down a level."""
    m = _HEADING_LINE.match(line)
    return [f"{'#' * n} {m.group(1)}" for n in range(1, 7)] if m else []


def _carry_conflicts(engine: Engine, source: Action) -> None:
    """A conflict on a digest this compaction deletes whose versions kept side by side are in
    its roll-up now (both titles of a session, `## A / B`, a heading a level down there) goes
    with them, on every device, so the user is still asked to pick; the digest's own record
    clears with the file."""
    for conflict in list(engine.state.conflicts):
        marks = set(conflict.marks)
        if conflict.file != source.name or not marks:
            continue
        for target in source.into:
            data = engine.read_local(target)
            lines = data.decode("utf-8", "replace").splitlines() if data else []
            held = [
                entry_mark(line)
                for line in lines
                if line.strip() and {entry_mark(x) for x in (line, *heading_forms(line))} & marks
            ]
            if held:
                detail = conflict.detail.replace(source.name, target)
                told = re.sub(r" \(merged on [^)]*\)$", "", detail)  # the receiver says where
                engine.share_conflict(target, detail, told, held)
                engine.state.conflicts.drop(conflict.__eq__)
                engine.state.save_meta()


def _index_after(
    engine: Engine, planned: Action, deleted: list[Action], result: CompactResult, step: Step
) -> list[str]:
    """The plan's MEMORY.md update, made again for the digests actually deleted: ([MEMORY.md])
    when it was written, for the push that sends the deletions."""
    current = engine.read_local(_INDEX)
    if current is None or sha256_hex(current) != planned.expected or not deleted:
        return []  # changed since the plan (the next compaction sees it), or nothing went
    homes = {n for a in deleted for n in a.into}
    files = {_INDEX: current} | {n: d for n in homes if (d := engine.read_local(n)) is not None}
    action = _plan_index(files, deleted)
    if action is None or _write_rollups(engine, [action], result, step):
        return []
    return [_INDEX]


def apply(
    engine: Engine,
    actions: list[Action],
    dry_run: bool = False,
    *,
    on_step: Step | None = None,
) -> CompactResult:
    """Carry out a plan. Roll-ups and updates are written, then pushed; only a source whose
    roll-ups are all on the remote (the synced record matches the local file) is deleted, after
    a copy goes to local history; then the deletions are pushed. `on_step(step, name)` is called
    before every write, push and delete (tests use it to interrupt the run)."""
    result = CompactResult(dry_run, list(actions))
    if dry_run:
        return result

    def step(kind: str, name: str = "") -> None:
        if on_step is not None:
            on_step(kind, name)

    # the index update waits for the deletions: a digest kept (its roll-up not on the remote
    # yet, the remote away) keeps its MEMORY.md line, so the index never misses a file
    writes = [a for a in actions if a.kind in (WRITE, UPDATE) and a.name != _INDEX]
    deletes = [a for a in actions if a.kind == DELETE]
    index = next((a for a in actions if a.kind == UPDATE and a.name == _INDEX), None)
    with engine.locked():
        failed = _write_rollups(engine, writes, result, step)

    homes = sorted(
        ({n for a in deletes for n in a.into} | {a.name for a in writes} | _unpushed(engine))
        - failed
    )
    if homes:
        step("push", "")
        pushed = engine.run(Mode.PUSH, [str(engine.local_path(n)) for n in homes])
        result.pushes.append(pushed)
        if pushed.disabled:
            result.notes.append("sync is off: the roll-ups are kept on this device only")
        elif pushed.offline:
            result.notes.append(f"the remote is unreachable ({pushed.offline}); nothing deleted")

    gone: list[str] = []
    with engine.locked():
        records = engine.state.records
        disabled = bool(result.pushes and result.pushes[-1].disabled)
        _delete_sources(engine, deletes, failed, disabled, result, step)
        # deletions an interrupted earlier run made locally but never pushed
        listed = _rollup_sources(engine)
        gone = sorted(
            {*result.deleted} | {n for n in records if n in listed and engine.read_local(n) is None}
        )
        if index is not None:
            done = [a for a in deletes if a.name in gone]
            gone += _index_after(engine, index, done, result, step)
    if gone and not disabled:
        step("push", "")
        result.pushes.append(
            engine.run(Mode.PUSH, [str(engine.local_path(n)) for n in gone], force=True)
        )
    return result
