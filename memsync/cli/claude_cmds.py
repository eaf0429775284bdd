"""Claude Code integration: context, install, uninstall, new, watch."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from memsync.cli import checks
from memsync.cli.common import (
    DryRunOpt,
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    app,
    context,
    emit_json,
    err,
    fail,
    out,
)

ScopeOpt = Annotated[
    str, typer.Option("--scope", help="user (~/.claude) or project (.claude/ in the repo).")
]


@app.command("context")
def context_cmd(
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh", help="Pull first, and include MEMORY.md (pins it into this turn)."
        ),
    ] = False,
    max_chars: Annotated[
        int | None, typer.Option("--max-chars", help="Budget (default: setting, at most 10000).")
    ] = None,
    source: Annotated[str, typer.Option("--source", help="startup, resume, clear or compact.")] = (
        "startup"
    ),
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Print the session-start primer: what needs attention, what is pending, recent digests."""
    from memsync.claude.hooks import primer_input, pull_within
    from memsync.claude.primer import build
    from memsync.sync.engine import Engine

    checks.choice("--source", source, ("startup", "resume", "clear", "compact"))
    checks.number("--max-chars", max_chars, 1, 10000)
    ctx = context(memory_dir, remote, project)
    engine = Engine(ctx)
    offline = None
    if refresh:
        _, offline = pull_within(engine, float(ctx.setting("pull_timeout")))
        from memsync.sync.state import State

        engine.state = State(ctx.state_dir, engine.state.history_versions)
    data = primer_input(ctx, engine, source, offline)
    data.include_index = refresh
    budget = max_chars if max_chars is not None else int(ctx.setting("primer_max_chars"))
    out.print(build(data, budget), markup=False, highlight=False)


def _show(plan, dry_run: bool, nothing: str) -> None:
    from memsync.claude.install import apply

    if not plan.changes:
        out.print(nothing)
        return
    for change in plan.changes:
        out.print(("would change: " if dry_run else "") + change, markup=False)
    if dry_run:
        return
    for backup in apply(plan):
        out.print(f"backup: {backup}", markup=False)


@app.command()
def install(scope: ScopeOpt = "user", dry_run: DryRunOpt = False) -> None:
    """Add memsync's hooks, skills and memory-types block to Claude Code (idempotent)."""
    from pathlib import Path

    from memsync.claude.install import plan_install
    from memsync.context.builtin_sync import refuse_install

    checks.choice("--scope", scope, ("user", "project"))
    refuse_install(Path.cwd())  # Claude Code syncs this memory itself: one syncer a folder
    _show(plan_install(scope), dry_run, "Already installed; nothing changed.")
    if not dry_run:
        from memsync.claude.warm import start

        start()  # the first session's hooks are answered warm too


@app.command()
def uninstall(scope: ScopeOpt = "user", dry_run: DryRunOpt = False) -> None:
    """Remove exactly what `memsync install` added."""
    from memsync.claude.install import plan_uninstall
    from memsync.claude.warm import stop

    checks.choice("--scope", scope, ("user", "project"))
    _show(plan_uninstall(scope), dry_run, "Nothing of memsync's is installed; nothing changed.")
    if not dry_run:
        stop()


@app.command()
def new(
    type_name: Annotated[
        str, typer.Argument(metavar="TYPE", help="A memory type, e.g. relationship.")
    ],
    name: Annotated[str | None, typer.Argument(help="Name or topic (for per-topic types).")] = None,
    memory_dir: MemoryDirOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Create a memory file from its template and list it in MEMORY.md."""
    from memsync.memory.newfile import create

    checks.memory_type("TYPE", type_name)
    ctx = context(memory_dir, None, project)
    path = create(ctx.memory_dir, type_name, name)
    out.print(f"Created {path}", markup=False)


@app.command()
def watch(
    debounce: Annotated[
        float, typer.Option("--debounce", help="Seconds of quiet before a push.")
    ] = 2.0,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Push edits made outside Claude (an editor, a script) as they happen. Ctrl-C stops."""
    from memsync.claude.watch import watch as run_watch
    from memsync.context.builtin_sync import refuse
    from memsync.sync.engine import Engine

    checks.number("--debounce", debounce, 0, 3600)
    ctx = context(memory_dir, remote, project)
    refuse(ctx)
    engine = Engine(ctx)

    def report(_: str, detail) -> None:
        names, result = detail
        stamp = time.strftime("%H:%M:%S")
        if isinstance(result, Exception):  # e.g. the mass-delete guard: said, and watch goes on
            from memsync.util.errors import describe_os_error

            why = describe_os_error(result) if isinstance(result, OSError) else str(result)
            err.print(f"{stamp} not pushed: {why}", markup=False)
            return
        if result.offline:
            err.print(f"{stamp} remote unreachable; queued: {', '.join(names)}", markup=False)
        for pushed in result.uploaded:
            out.print(f"{stamp} pushed {pushed}", markup=False)
        for merged in result.merged:
            out.print(f"{stamp} merged and pushed {merged}", markup=False)
        for deleted in result.deleted_remote:
            out.print(f"{stamp} deleted on the remote {deleted}", markup=False)
        from memsync.privacy.gate import shown_name

        for refused, reason in {**result.refused, **result.errors}.items():
            err.print(f"{stamp} not pushed {shown_name(refused)}: {reason}", markup=False)

    err.print(f"Watching {ctx.memory_dir} (Ctrl-C to stop).", markup=False)
    run_watch(engine, debounce=debounce, report=report)
    err.print("Stopped.")


@app.command()
def doctor(
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    json: Annotated[bool, typer.Option("--json", help="Print a versioned JSON document.")] = False,
) -> None:
    """Check settings, memory dir, credential, remote, container, a probe write, clock skew."""
    from memsync.admin.doctor import run

    report = run(context(memory_dir, remote, project))
    if json:
        emit_json("doctor", report.as_dict())
    else:
        from memsync.privacy.scanner import mask

        for check in report.checks:
            mark = "ok  " if check.ok else "FAIL"
            out.print(mask(f"{mark} {check.name}: {check.detail}"), markup=False)
            if not check.ok and check.fix:
                out.print(f"     → {check.fix}", markup=False)
    if not report.ok:
        fail("some checks failed; see above", 1)
