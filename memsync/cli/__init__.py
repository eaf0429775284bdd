"""The command line: Typer and Rich live here and nowhere else. Commands call the core and
render what it returns; every MemsyncError becomes one sentence and its exit code."""

from __future__ import annotations

from memsync.cli.common import app, fail
from memsync.errors import MemsyncError


def _register() -> None:
    # Each module adds its commands to `app` on import.
    from memsync.cli import sync_cmds  # noqa: F401, I001 - order is the help order
    from memsync.cli import admin_cmds, claude_cmds, compact_cmds, digest_cmds, privacy_cmds  # noqa: F401, E501


def run() -> None:
    _register()
    try:
        app()  # standalone: usage errors print Typer's message and exit 2
    except MemsyncError as exc:
        fail(str(exc), exc.exit_code)
