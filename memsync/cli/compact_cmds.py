"""compact and schedule."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memsync.cli import checks
from memsync.cli.common import (
    JsonOpt,
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    app,
    context,
    emit_json,
    err,
    fail,
    out,
    table,
)

if TYPE_CHECKING:
    from memsync.retention.compact import CompactResult
    from memsync.retention.policy import Action
    from memsync.sync.engine import Engine


def _plan(
    memory_dir: Path, given: date | None, index: bool, dry_run: bool
) -> tuple[date, str | None, list[Action], list[Action]]:
    """The day compaction counts from (said when it is not the clock's), the rules' plan (none
    with --index) and the index split: after the rules, whose MEMORY.md update comes first, so
    planned here on today's files only for a dry run or when no rule acts (else `_apply` plans
    it again on the files the rules left)."""
    from memsync.retention import compact as core
    from memsync.retention.clock import compaction_day

    files = core.read_memory(memory_dir)
    if index:
        return given or date.today(), None, [], core.plan_index_limit(files)
    today, held_back = compaction_day(files, date.today(), given)
    if held_back:
        err.print(f"note: {held_back}", markup=False)
    rules = core.plan(files, today)
    split = core.plan_index_limit(files) if dry_run or not rules else []
    return today, held_back, rules, split


@app.command()
def compact(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; change nothing.")
    ] = False,
    now: Annotated[
        str | None, typer.Option("--now", help="Pretend today is YYYY-MM-DD (for tests).")
    ] = None,
    json: JsonOpt = False,
    index: Annotated[
        bool,
        typer.Option(
            "--index",
            help="Only bring MEMORY.md within what Claude Code loads (sub-indexes for the rest).",
        ),
    ] = False,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            hidden=True,  # written by `schedule install`; users set MEMSYNC_HOME
            help="memsync's state folder (as MEMSYNC_HOME); what the schedule runs passes it.",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            hidden=True,  # written by `schedule install`; users set MEMSYNC_DEVICE
            help="this device's name (as MEMSYNC_DEVICE); what the schedule runs passes it.",
        ),
    ] = None,
) -> None:
    """Apply the retention rules: roll old digests up, fold old calibration into rules, trim;
    and move the MEMORY.md lines Claude Code would not load into linked sub-indexes."""
    import os

    from memsync.cli.plain import DONE, done_lines
    from memsync.retention import compact as core
    from memsync.sync.engine import Engine
    from memsync.sync.mode import Mode
    from memsync.util.errors import GuardError

    given = checks.day("--now", now)
    if home is not None:  # a scheduler's environment has no MEMSYNC_HOME (Task Scheduler none)
        os.environ["MEMSYNC_HOME"] = str(home)
    if device:  # nor the device's name: its merges and conflicts would name the host instead
        os.environ["MEMSYNC_DEVICE"] = device

    engine = Engine(context(memory_dir, remote, project))
    offline = None
    synced = None
    if not dry_run:  # compact the latest: what other devices wrote merges in first
        from memsync.context.builtin_sync import refuse

        refuse(engine.ctx)  # nor write a folder Claude Code's own memory sync syncs
        try:
            synced = engine.run(Mode.SYNC)
        except GuardError as exc:  # compact has no --force: say which command takes it
            raise exc.within("compaction", "sync") from None
        if not json:  # what that sync sent, took in and deleted, as `sync` says it
            done_lines(synced)
        for note in synced.notes:
            err.print(f"note: {note}", markup=False)
        for conflict in synced.conflicts:
            err.print(f"conflict: {conflict}", markup=False)
        offline = synced.offline
        if synced.offline:
            err.print(f"note: remote unreachable ({synced.offline}); compacting local files")
    today, held_back, rules, split = _plan(engine.ctx.memory_dir, given, index, dry_run)
    actions = rules + split
    if json:
        doc = {"dry_run": dry_run, "today": today.isoformat(), **core.plan_to_dict(actions)}
        doc["held_back"] = held_back  # why `today` is not the clock's day (None: it is)
        if synced is not None:  # what the sync before it did, as `sync` says it
            doc["sync"] = {attr: getattr(synced, attr) for attr, _ in DONE}
            doc["sync"]["conflicts"] = list(synced.conflicts)
        emit_json("compact", doc)
        if dry_run:
            return
    elif actions:
        table(("action", "file", "reason"), [(a.kind, a.name, a.reason) for a in actions])
    if not actions:
        if not json:
            # a dry run does not sync: it sees this device's files only
            out.print(
                "Nothing to compact here (--dry-run reads this device's files; it does not sync)."
                if dry_run
                else "Nothing to compact."
            )
        _unreachable(offline)
        return
    if dry_run:
        out.print(f"{len(actions)} action(s) planned; nothing changed (--dry-run).")
        return
    result = _apply(engine, rules, split, json)
    _report(result, json)
    _unreachable(offline or next((p.offline for p in result.pushes if p.offline), None))


def _apply(engine: Engine, rules: list[Action], split: list[Action], json: bool) -> CompactResult:
    """The retention rules, then the index split planned on the files they left: one result."""
    from memsync.retention import compact as core

    result = core.apply(engine, rules) if rules else None
    if rules:
        split = core.plan_index_limit(core.read_memory(engine.ctx.memory_dir))
        if split and not json:
            table(("action", "file", "reason"), [(a.kind, a.name, a.reason) for a in split])
    done = core.apply_index_limit(engine, split) if split else None
    if result is None or done is None:
        result = result or done
    else:
        for attr in ("written", "updated", "deleted", "notes", "pushes"):
            getattr(result, attr).extend(getattr(done, attr))
        result.skipped.update(done.skipped)
    assert result is not None
    return result


def _report(result: CompactResult, json: bool) -> None:
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    for name, why in sorted(result.skipped.items()):
        err.print(f"left for later: {name}: {why}", markup=False)
    if not json:
        out.print(
            f"Wrote {len(result.written)}, updated {len(result.updated)}, "
            f"deleted {len(result.deleted)} (copies in local history)."
        )


def _unreachable(reason: str | None) -> None:
    """Compaction works offline, on the local files; the exit code still says the remote
    was not reached (3), as for a sync, so a scheduled run's log shows it."""
    if reason:
        fail(f"the remote is unreachable ({reason}); the changes go out with the next sync", 3)


@app.command()
def schedule(
    action: Annotated[str, typer.Argument(help="install, show or remove.")],
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Run `memsync compact` daily for this project, against this memory dir, remote and
    project (launchd on macOS, Task Scheduler on Windows, cron or a systemd timer on Linux)."""
    from memsync.retention import schedule as core

    checks.choice("ACTION", action, ("install", "show", "remove"))
    ctx = context(memory_dir, remote, project)
    if action == "install":
        changed, where = core.install(ctx)
        out.print(
            ("Scheduled" if changed else "Already scheduled") + f" daily compaction ({where})."
        )
        warning = core.credential_warning(ctx)
        if warning:
            err.print(f"note: {warning}", markup=False)
    elif action == "show":
        entries = core.show(ctx)
        if not entries:
            out.print("No compaction is scheduled.")
        for e in entries:
            out.print(f"{e.backend}: {e.project}: {core.describe(e)}", markup=False)
    elif action == "remove":
        removed = core.remove(ctx)
        out.print(f"Removed: {', '.join(removed)}." if removed else "Nothing was scheduled.")
