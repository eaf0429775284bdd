"""The command line: Typer and Rich live here and nowhere else. Commands call the core and
render what it returns; every MemsyncError becomes one sentence and its exit code.

Nothing is imported here at package level: `memsync.cli.plain` (a plain pull/push/sync) must
load without Typer."""

from __future__ import annotations


def _register() -> None:
    # Each module adds its commands to `app` on import.
    from memsync.cli import sync_cmds  # noqa: F401, I001 - order is the help order
    from memsync.cli import admin_cmds, claude_cmds, compact_cmds, digest_cmds, privacy_cmds  # noqa: F401, E501


def run() -> None:
    from memsync.cli.common import app
    from memsync.cli.plain import fail
    from memsync.errors import MemsyncError

    _register()
    try:
        app()  # standalone: usage errors print Typer's message and exit 2
    except MemsyncError as exc:
        fail(str(exc), exc.exit_code)
