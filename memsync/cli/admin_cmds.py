"""ls, prune, export, import, migrate: backup, disaster recovery, moving and housekeeping."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from memsync.cli import checks
from memsync.cli.common import (
    DryRunOpt,
    JsonOpt,
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    YesOpt,
    app,
    confirm,
    context,
    emit_json,
    engine_for,
    err,
    fail,
    out,
    table,
)
from memsync.cli.plain import progress_bar
from memsync.util.errors import UsageError, UserError


@app.command("ls")
def ls_cmd(
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
) -> None:
    """List memory files on the remote with type, size, modified time and sync state."""
    from memsync.admin.admin import list_remote

    files = list_remote(engine_for(memory_dir, remote, project))
    if json:
        emit_json("ls", {"files": [f.__dict__ for f in files]})
        return
    columns = ("file", "type", "size", "modified", "state")
    rows = [
        (
            f.name,
            f.type,
            str(f.size),
            datetime.fromtimestamp(f.modified).strftime("%Y-%m-%d %H:%M") if f.modified else "",
            f.state.replace("_", " "),
        )
        for f in files
    ]
    table(columns, rows, right=("size",))
    if out.is_terminal:
        out.print(f"{len(files)} file(s).")


def _days(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*([dwmy]?)", text.strip().lower())
    if not m:
        raise UsageError(f"--older-than {text!r} is not an age like 90d, 12w, 6m or 1y")
    return int(m.group(1)) * {"": 1, "d": 1, "w": 7, "m": 30, "y": 365}[m.group(2)]


@app.command()
def prune(
    older_than: Annotated[str, typer.Option("--older-than", help="Age, e.g. 90d, 12w, 6m, 1y.")],
    type_name: Annotated[
        str | None, typer.Option("--type", help="Only this memory type, e.g. session_digest.")
    ] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Delete old memory files from the remote and here (local copies go to history)."""
    from memsync.admin.admin import plan_prune
    from memsync.admin.admin import prune as run_prune
    from memsync.memory.memtypes import TYPES, UNKNOWN

    days = _days(older_than)
    if type_name is not None:
        # the index is never pruned: its lines go with the files they link to
        checks.choice("--type", type_name, [*(t for t in TYPES if t != "index"), UNKNOWN.name])
    engine = engine_for(memory_dir, remote, project)
    names = plan_prune(engine, days, type_name)
    if not names:
        out.print("Nothing to prune.")
        return
    for name in names:
        out.print(("would delete: " if dry_run else "delete: ") + name, markup=False)
    if dry_run:
        return
    confirm(f"Delete {len(names)} file(s) here and on the remote?", yes)
    result = run_prune(engine, names)
    for name, why in sorted(result.skipped.items()):
        err.print(f"kept {name}: {why}", markup=False)
    if result.index_lines:
        out.print(f"removed {result.index_lines} MEMORY.md line(s) linking to them")
    out.print(f"Deleted {len(result.deleted)} file(s); logged in the audit log.")


@app.command("export")
def export_cmd(
    path: Annotated[Path, typer.Argument(help="Archive to write, e.g. memory.tar.gz.")],
    source: Annotated[str, typer.Option("--from", help="remote or local.")] = "remote",
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Write every memory file and a manifest of sha256 sums into a .tar.gz."""
    from memsync.admin.admin import export

    checks.choice("--from", source, ("remote", "local"))
    tick, bar = progress_bar("export")
    with bar:
        result = export(engine_for(memory_dir, remote, project), path, source, tick)  # type: ignore[arg-type]
    for name, why in sorted(result.refused.items()):
        err.print(f"left out {name}: {why}", markup=False)
    out.print(
        f"Exported {len(result.files)} file(s) from the {source} to {path} ({result.size} B)."
    )


@app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="An archive made by `memsync export`.")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite remote files whose content differs.")
    ] = False,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            help="KIND: import the archive's files even though they contain that kind of secret.",
        ),
    ] = None,
    from_project: Annotated[
        str | None,
        typer.Option(
            "--from-project",
            metavar="NAME",
            help=(
                "Import an archive of project NAME into this project on purpose (without it, an "
                "archive of another project is refused)."
            ),
        ),
    ] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Restore an archive into the remote (verified, conditional writes, never clobbers). Its
    files pass the same checks as a push: one with a secret or marked 'sensitivity: high'
    without consent refuses the whole import, as does an archive of another project."""
    from memsync.admin.admin import import_archive

    if allow:
        checks.secret_kinds(allow)
    tick, bar = progress_bar("import")
    with bar:
        result = import_archive(
            engine_for(memory_dir, remote, project), path, force, tick, allow or (), from_project
        )
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    for name, why in sorted(result.skipped.items()):
        err.print(f"skipped {name}: {why}", markup=False)
    for name, why in sorted(result.refused.items()):
        err.print(f"refused {name}: {why}", markup=False)
    for name in sorted(result.forgotten):
        out.print(
            f"left out {name}: it was forgotten (`memsync forget`), and an import never "
            "brings forgotten content back",
            markup=False,
        )
    for name in result.scrubbed:
        out.print(f"imported {name} without the lines that were forgotten", markup=False)
    out.print(
        f"Copied: {len(result.copied)}, Replaced: {len(result.replaced)}, "
        f"Unchanged: {len(result.unchanged)}, Skipped: {len(result.skipped)}, "
        f"Refused: {len(result.refused)}, Left out (forgotten): {len(result.forgotten)}."
        + (" Run `memsync pull` to bring them here." if result.copied or result.replaced else "")
    )
    if result.refused:
        fail(f"{len(result.refused)} file(s) the remote cannot hold were not imported (see above)")
    if result.skipped and not force:
        n = len(result.skipped)
        fail(f"{n} file(s) were skipped; run again with --force to overwrite them")


def _source(text: str) -> tuple[Path, str]:
    if "=" not in text:
        raise UsageError(f"--source {text!r} must look like DIR=PREFIX")
    directory, prefix = text.rsplit("=", 1)
    if not directory or not prefix:
        raise UsageError(f"--source {text!r} must look like DIR=PREFIX")
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise UserError(f"--source {text!r}: {path} is not a folder; give a memory dir")
    return path, prefix


@app.command()
def migrate(
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="DIR=PREFIX: a memory dir and its project prefix."),
    ] = None,
    from_remote: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="URL",
            help=(
                "Copy the project from this remote to --to (default: the configured remote), "
                "with memsync's records and edit times; forgotten content stays behind."
            ),
        ),
    ] = None,
    to_remote: Annotated[
        str | None,
        typer.Option("--to", metavar="URL", help="The remote --from copies to."),
    ] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Copy memory to a remote without overwriting anything: memory dirs (--source, else this
    one) to the remote, or a project from one remote to another (--from URL --to URL). What
    the target lacks is copied, the rest skipped; running it again copies nothing."""
    if from_remote is not None:
        if source:
            raise UsageError("--source and --from cannot be combined: give one of them")
        if to_remote is not None and remote is not None and to_remote != remote:
            raise UsageError("give the destination once: --to or --remote, not both")
        _migrate_remote(from_remote, to_remote or remote, memory_dir, project)
        return
    if to_remote is not None:
        raise UsageError("--to goes with --from URL (the remote to copy from)")
    from memsync.admin.migrate import migrate as run_migrate

    def factory(memory_dir: Path | None = memory_dir, project: str | None = project):
        return context(memory_dir, remote, project)

    sources = [_source(s) for s in source or []]
    result = run_migrate(factory, sources)
    for note in {note for src in result.sources for note in src.notes}:
        err.print(f"note: {note}", markup=False)
    for src in result.sources:
        for name, why in sorted(src.skipped.items()):
            err.print(f"{src.project}: skipped {name}: {why}", markup=False)
        for name, why in sorted(src.refused.items()):
            err.print(f"{src.project}: refused {name}: {why}", markup=False)
    out.print(f"Copied: {result.copied}, Skipped: {result.skipped}")
    if result.refused:
        fail(f"{result.refused} file(s) could not be copied as they are (see above)")


def _migrate_remote(
    source: str, destination: str | None, memory_dir: Path | None, project: str | None
) -> None:
    from memsync.admin.migrate import DIFFERS, migrate_remote

    ctx = context(memory_dir, destination, project)
    tick, bar = progress_bar("migrate")
    with bar:
        result = migrate_remote(ctx, source, ctx.remote, tick)
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    for name in result.different:
        err.print(f"left alone {name}: {DIFFERS}", markup=False)
    for name, why in sorted(result.refused.items()):
        err.print(f"refused {name}: {why}", markup=False)
    for name in result.forgotten:
        out.print(f"left out {name}: it was forgotten (`memsync forget`)", markup=False)
    for name in result.scrubbed:
        out.print(f"copied {name} without the lines that were forgotten", markup=False)
    out.print(
        f"Copied: {len(result.copied)}, Already there: {len(result.same)}, "
        f"Different there: {len(result.different)}, Refused: {len(result.refused)}, "
        f"Left out (forgotten): {len(result.forgotten)}."
        + (f" Local history of {result.history} file(s) came along." if result.history else "")
    )
    if result.left_out:
        fail(
            f"{result.left_out} object(s) of project {result.project!r} are not on "
            f"{result.destination} as on {result.source} (listed above); nothing was overwritten"
        )
