"""pull, push, sync, status, validate, history, restore, resolve."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memsync.cli.common import (
    ForceOpt,
    JsonOpt,
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    StatsOpt,
    app,
    context,
    emit_json,
    engine_for,
    err,
    fail,
    out,
)
from memsync.cli.plain import transfer
from memsync.sync.mode import Mode
from memsync.util.dates import local_time
from memsync.util.errors import KeptLocal, NotFound, RefusedFile, StoreError, UserError

if TYPE_CHECKING:
    from memsync.admin.status import Status
    from memsync.stores.base import RemoteVersion


@app.command()
def pull(
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    force: ForceOpt = False,
    stats: StatsOpt = False,
) -> None:
    """Bring remote changes here (pending pushes go out first)."""
    transfer(Mode.PULL, memory_dir, remote, project, force, stats)


@app.command()
def push(
    paths: Annotated[list[Path] | None, typer.Argument(help="Only these files.")] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help=(
                "Allow a push that deletes more than half of the files, and replace remote "
                "copies this device refused (damaged, unreadable) with its own."
            ),
        ),
    ] = False,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            help="KIND: push the given files even though they contain that kind of secret.",
        ),
    ] = None,
    stats: StatsOpt = False,
    republish: Annotated[
        bool,
        typer.Option(
            "--republish",
            help=(
                "After `memsync purge`, or to a remote emptied on purpose: publish this "
                "device's memory to the remote again."
            ),
        ),
    ] = False,
) -> None:
    """Send local changes to the remote, merging where the remote changed too."""
    if republish:
        from memsync.admin.forget import republish as lift

        if paths:
            raise UserError("--republish publishes the whole memory dir; give no files")
        engine = engine_for(memory_dir, remote, project)
        by = lift(engine)
        if by == engine.ctx.device:
            out.print("The purge mark is lifted; publishing this device's memory again.")
        elif by:
            out.print(
                f"The purge mark was lifted by {by}, which published first; publishing this "
                "device's memory again.",
                markup=False,
            )
    transfer(Mode.PUSH, memory_dir, remote, project, force, stats, paths, allow)


@app.command()
def sync(
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    force: ForceOpt = False,
    stats: StatsOpt = False,
) -> None:
    """Two-way sync: push local changes, pull remote ones, merge where both changed."""
    transfer(Mode.SYNC, memory_dir, remote, project, force, stats)


@app.command()
def status(
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
) -> None:
    """What differs between here and the remote, and what needs attention."""
    from memsync.admin.status import status as compute

    st = compute(engine_for(memory_dir, remote, project))
    if json:
        emit_json("status", st.as_dict())
        return
    out.print(f"memory dir: {st.memory_dir}", markup=False)
    if st.memory_dir_reason:
        out.print(f"  ({st.memory_dir_reason})", markup=False)
    out.print(f"remote:     {st.remote} (project {st.project})", markup=False)
    if st.project_note:
        out.print(f"  ({st.project_note})", markup=False)
    if st.encryption:
        out.print(f"encryption: {st.encryption}", markup=False)
    last = local_time(st.last_sync)
    if st.last_interrupted:  # a run cut short since (Ctrl-C, SIGTERM): what it did is synced
        queued = f", {len(st.queued)} change(s) queued" if st.queued else ""
        cut = f"interrupted at {local_time(st.last_interrupted)}{queued}; the next sync finishes it"
        last = f"{last} (a later run was {cut})" if st.last_sync else cut
    out.print(f"last sync:  {last}", markup=False)
    if not st.sync_enabled:
        out.print("sync is off (MEMSYNC_SYNC=off)")
    _say_what_is_missing(st)
    groups = (
        ("new here", st.local_only),
        ("new on the remote", st.remote_only),
        ("changed here", st.modified_local),
        ("changed on the remote", st.modified_remote),
        ("changed on both sides (will merge)", st.modified_both),
        ("deleted here", st.deleted_local),
        ("deleted on the remote", st.deleted_remote),
        ("queued, not sent yet", st.queued),
    )
    from memsync.privacy.gate import shown_name

    for label, names in groups:
        for name in names:
            out.print(f"  {label}: {shown_name(name)}", markup=False)
    for name, reason in sorted(st.refused.items()):
        out.print(f"  refused: {shown_name(name)}: {reason}", markup=False)
    for name in sorted(st.kept_local):
        out.print(f"  kept local (sensitivity: high, no consent): {shown_name(name)}", markup=False)
    for name, reason in sorted(st.ignored.items()):
        printable = name.encode("utf-8", "backslashreplace").decode()  # may not be UTF-8
        out.print(f"  ignored on the remote: {shown_name(printable)}: {reason}", markup=False)
    for c in st.conflicts:
        when = local_time(c.get("at"))
        out.print(f"  conflict ({when}): {c['file']}: {c['detail']}", markup=False)
    if st.conflicts:
        out.print("  (see `memsync history FILE`; `memsync resolve FILE` clears a conflict)")
    for notice in st.notices:
        out.print(f"  note: {notice}.", markup=False)
    if st.index_warning:
        out.print(f"  note: {st.index_warning}.", markup=False)
    out.print(f"{st.in_sync} file(s) in sync.")


def _say_what_is_missing(st: Status) -> None:
    """An unreachable or emptied remote, a lost memory dir: what `status` says first."""
    if st.remote_error:
        out.print(f"remote:     not reachable: {st.remote_error}", markup=False)
    if st.remote_lost:
        out.print(
            f"the remote is empty, but this device synced {st.remote_lost} file(s) with it: "
            "nothing will be deleted here (sync refuses until it is back); if it is a drive or "
            "a share, mount it; if it was emptied on purpose, `memsync push --republish` "
            "publishes this device's memory to it again",
            markup=False,
        )
    if st.memory_dir_lost:
        out.print(
            "the memory dir is missing or empty, or left with none of the "
            f"{len(st.deleted_local)} memory file(s) synced from it: `memsync pull` brings "
            "them back",
            markup=False,
        )


@app.command()
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Files (default: all).")] = None,
    memory_dir: MemoryDirOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Check memory files: frontmatter, size, encoding, and secrets."""
    from memsync.privacy.gate import check_outbound, shown_name

    ctx = context(memory_dir, None, project)
    from memsync.sync.engine import Engine

    engine = Engine(ctx)
    if paths:  # as `push FILE` reads them: inside the memory dir, or relative to it
        for p in paths:
            if not str(p).endswith(".md"):
                raise UserError(f"{p} is not a memory file: memory files end in .md")
        files = {name: engine.local_path(name) for name in map(engine.name_of, paths)}
    else:
        root = ctx.memory_dir
        if not root.is_dir():
            raise UserError(
                f"the memory dir {root} does not exist; Claude Code creates it with its first "
                "memory, or pass --memory-dir"
            )
        from memsync.sync.walk import MemoryWalk

        files = {name: Path(path) for name, path, _ in MemoryWalk(root)}
    from memsync.sync.scan import refuse_colliding_names

    # names macOS or Windows could not keep apart from a synced one (as far as this device knows)
    clashes = refuse_colliding_names(engine.scan_local(), engine.state.records)
    problems = kept = 0
    for name, path in files.items():
        try:
            check_outbound(name, path.read_bytes(), engine.max_bytes)
            if name in clashes:
                raise RefusedFile(name, clashes[name])
        except KeptLocal:  # the user's choice, as sync reports it: not a problem
            kept += 1
            shown = shown_name(name)
            out.print(f"kept local (sensitivity: high, no consent): {shown}", markup=False)
        except RefusedFile as exc:
            problems += 1
            out.print(f"{shown_name(name)}: {exc.reason}", markup=False)
        except OSError as exc:
            problems += 1
            out.print(f"{name}: it cannot be read ({exc.strerror})", markup=False)
    if not paths:  # an index Claude Code cuts short is valid, but Claude misses memories
        from memsync.memory.index_limit import warning_for

        said = warning_for(ctx.memory_dir)
        if said:
            err.print(f"note: {said}.", markup=False)
    if problems:
        fail(f"{problems} of {len(files)} file(s) have problems", 1)
    if kept:
        out.print(f"{len(files) - kept} file(s) OK; {kept} kept local by choice.")
        return
    out.print(f"{len(files)} file(s) OK.")


@app.command()
def history(
    file: Annotated[Path, typer.Argument(help="A memory file.")],
    show: Annotated[
        int | None,
        typer.Option(
            "--show",
            metavar="VERSION",
            help="Print that local version (a number `memsync history` lists) instead.",
        ),
    ] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """List the local versions kept of a file (newest first), then the versions the remote
    keeps itself, where it keeps them (a memory store); `--show N` prints version N."""
    if show is not None:
        from memsync.cli import checks

        checks.number("--show", show, 1)
    engine = engine_for(memory_dir, remote, project)
    name = engine.name_of(file)
    versions = engine.state.history(name)
    if show is not None:
        found = {v.version: v for v in versions}.get(show)
        if found is None:
            raise UserError(f"{name} has no version {show}; see `memsync history {name}`")
        sys.stdout.buffer.write(found.path.read_bytes())
        return
    try:
        kept = engine.store.versions(name)  # a deleted file's too, where the remote keeps them
    except NotFound:
        kept = []
    except StoreError as exc:
        err.print(f"note: the remote's own versions of {name} cannot be read now ({exc})")
        kept = None
    known = versions or engine.local_path(name).exists() or name in engine.state.records
    if not (known or kept):
        raise UserError(
            f"{file}: no such memory file in {engine.ctx.memory_dir}; check the name "
            "(`memsync status` lists the files)"
        )
    if not versions:
        out.print(f"No history kept for {name}.", markup=False)
    for v in versions:
        size = v.path.stat().st_size
        when = local_time(v.saved_at)
        out.print(f"{v.version:>3}  {when}  {size:>7} B  {v.reason}", markup=False)
    _remote_versions(kept)
    engine.close()


def _remote_versions(kept: list[RemoteVersion] | None) -> None:
    """The remote's own versions of a file, where it keeps them."""
    if kept is None:
        return
    out.print(f"Kept by the remote itself ({len(kept)}, newest first):", markup=False)
    for v in kept:
        what = f"{v.size} B  sha256 {v.sha256[:12]}" if v.sha256 else "no content"
        if v.erased:
            what = "content erased"
        out.print(f"  {local_time(v.created)}  {v.operation:<8}  {what}", markup=False)


@app.command()
def restore(
    file: Annotated[Path, typer.Argument(help="A memory file.")],
    version: Annotated[int, typer.Argument(help="Version number from `memsync history`.")] = 1,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Bring back a version from local history (the current content goes to history)."""
    from memsync.cli import checks

    checks.number("VERSION", version, 1)
    engine = engine_for(memory_dir, remote, project)
    name = engine.name_of(file)
    versions = {v.version: v for v in engine.state.history(name)}
    if not versions:
        raise UserError(
            f"{name} has no version {version}: no earlier version of it is kept on this device "
            "(history keeps what a pull, merge or restore replaced; a forget erases it)"
        )
    if version not in versions:
        raise UserError(f"{name} has no version {version}; see `memsync history {name}`")
    data = versions[version].path.read_bytes()
    with engine.locked():  # a sync may be replacing the file right now
        current = engine.read_local(name)
        if current is not None and current != data:
            reason = f"replaced by `memsync restore` of version {version}"
            engine.state.keep(name, current, reason)
        engine.write_local(name, data)
    out.print(f"Restored {name} from version {version}; `memsync push` sends it.", markup=False)


@app.command()
def resolve(
    file: Annotated[Path | None, typer.Argument(help="Clear conflicts for this file only.")] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Mark reported conflicts as dealt with."""
    engine = engine_for(memory_dir, remote, project)
    name = engine.name_of(file) if file else None
    from memsync.sync.conflicts import share_resolution

    with engine.locked():  # re-reads the state: a push queued meanwhile is kept
        cleared, note = share_resolution(
            engine.state, lambda: engine.store, engine.ctx.device, name
        )
    if name is not None and not cleared:  # a typo must not look like a resolution
        raise UserError(f"no conflict is recorded for {name}; `memsync status` lists them")
    out.print(f"Cleared {cleared} conflict(s).{note}")
