"""The command line: Typer and Rich live here and nowhere else. Commands call the core and
render what it returns; every MemsyncError becomes one sentence and its exit code."""

from __future__ import annotations

import sys

from memsync.cli.common import app, fail
from memsync.errors import MemsyncError


def _register() -> None:
    # Each module adds its commands to `app` on import.
    from memsync.cli import sync_cmds  # noqa: F401


def run() -> None:
    _register()
    try:
        app(standalone_mode=False)
    except MemsyncError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except SystemExit:
        raise
    except Exception as exc:  # click's own usage errors are handled below
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            fail("aborted", 1)
        raise
