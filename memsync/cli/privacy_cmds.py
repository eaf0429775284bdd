"""forget and purge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memsync.cli.common import (
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    YesOpt,
    app,
    confirm,
    engine_for,
    err,
    fail,
    out,
)
from memsync.memory.frontmatter import INDEX_NAME
from memsync.util.errors import NotFound, UsageError, UserError

if TYPE_CHECKING:
    from memsync.admin.forget import ForgetReport


def _known(engine, path: Path) -> str:
    """The name of a memory file to forget; a typo is an error, not a tombstone for nothing."""
    if not str(path).endswith(".md"):
        raise UserError(f"{path} is not a memory file: memory files end in .md")
    name = engine.name_of(path)
    if name == INDEX_NAME:  # the index Claude Code reads first; its lines go with their files
        raise UserError(
            f"{INDEX_NAME} is the index of every memory and is not forgotten whole; forget "
            "the files it links to (their lines go with them), or `--match TEXT` for a line"
        )
    if engine.local_path(name).exists() or name in engine.state.records:
        return name
    if name not in engine.store.list() and not _kept_by_remote(engine, name):
        # neither here, nor on the remote, nor among the versions a remote keeps of a file
        # deleted before (a memory store's); an unreachable remote is exit 3, as for a sync
        raise UserError(
            f"{path}: no such memory file here or on the remote; check the name "
            "(`memsync ls` lists the remote's files)"
        )
    return name


def _kept_by_remote(engine, name: str) -> bool:
    try:
        return bool(engine.store.versions(name))
    except NotFound:
        return False


@app.command()
def forget(
    paths: Annotated[list[Path] | None, typer.Argument(help="Memory files to forget.")] = None,
    match: Annotated[
        str | None,
        typer.Option("--match", help="Forget every line holding this text, on every device."),
    ] = None,
    yes: YesOpt = False,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Remove memory for real: here, on the remote, in local history, and on other devices."""
    from memsync.admin import forget as core
    from memsync.sync.result import SYNC_OFF

    if bool(paths) == bool(match):
        raise UsageError("name the files to forget, or give --match TEXT (not both)")
    engine = engine_for(memory_dir, remote, project)
    if paths:
        names = [_known(engine, p) for p in paths]
        confirm(f"Forget {len(names)} file(s) everywhere?", yes)
        report = core.forget_files(engine, names)
        for name in report.files:
            out.print(f"forgotten: {name}", markup=False)
        if report.index_lines:
            them = "it" if len(report.files) == 1 else "them"
            out.print(f"removed {report.index_lines} MEMORY.md line(s) linking to {them}")
        _finish(report)
        return
    assert match is not None
    plan = core.plan_match(engine, match)
    if not plan.files and not plan.lines and not plan.held and plan.offline == SYNC_OFF:
        out.print(f"Nothing matches on this device ({SYNC_OFF}: the remote was not searched).")
        return
    if not plan.files and not plan.lines and not plan.held and plan.offline:
        fail(
            f"Nothing matches on this device, and the remote is unreachable ({plan.offline}), "
            "so its copies were not searched: run the same `memsync forget --match` again "
            "once it is back",
            3,
        )
    if not plan.files and not plan.lines and not plan.held:
        out.print(
            "Nothing matches on this device; the other devices take out every line holding "
            "it when they learn of this forget."
        )
    if plan.held:
        out.print(
            f"will remove the text from {plan.held} earlier cop(ies) this device keeps "
            "(local history and the last-synced copies merges start from)"
        )
    for name in plan.files:
        out.print(f"will forget file: {name}", markup=False)
    for name, count in plan.lines.items():
        out.print(f"will remove {count} line(s) from {name}", markup=False)
    confirm("Go ahead?", yes)
    report = core.apply_match(engine, plan)
    _finish(report)
    out.print("Done. The audit log has the record (not the content).")


def _finish(report: ForgetReport) -> None:
    from memsync.sync.result import SYNC_OFF

    if report.offline == SYNC_OFF:
        out.print(
            f"Forgotten here; {SYNC_OFF}, so the remote and the other devices follow with the "
            "first sync once it is on again."
        )
        return
    if report.offline:
        fail(
            f"forgotten here, but the remote is unreachable ({report.offline}); the next "
            "`memsync sync` finishes it there, and other devices follow when they sync",
            3,
        )
    if report.purged:
        out.print(
            "Forgotten here; the project is purged, so the remote got only the forget record "
            "(no content): other devices apply it when they sync or publish again."
        )
        return
    out.print("Forgotten here and on the remote; other devices apply it on their next sync.")
    if report.out_of_reach:
        out.print(f"Out of memsync's reach: {report.out_of_reach}.", markup=False)
    if report.history_erased:
        out.print(
            f"The remote's own history: the content of {report.history_erased} earlier "
            "version(s) that held it was erased (their records, when and by whom, stay)."
        )


@app.command()
def purge(
    all_: Annotated[bool, typer.Option("--all", help="Required: erase everything.")] = False,
    yes: YesOpt = False,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Hard-erase this project's remote prefix and all of memsync's local state for it."""
    from memsync.admin import forget as core

    if not all_:
        raise UsageError("purge erases everything for this project; say so with --all")
    engine = engine_for(memory_dir, remote, project)
    confirm(f"Erase the remote prefix {engine.ctx.project} and all local memsync state?", yes)
    report = core.purge(engine)
    out.print(f"Deleted {report.remote_deleted} remote object(s) and the local state.")
    err.print("What memsync cannot reach:")
    for line in report.unreachable:
        err.print(f"  - {line}", markup=False)
