"""The command line: Typer and Rich live here and nowhere else. Commands call the core and
render what it returns; every failure becomes one sentence on stderr and the README's exit
code (0 ok, 1 user error, 2 usage, 3 unreachable, 130 interrupted): `outcome` below is the
one place that mapping lives.

Nothing is imported here at package level: `memsync.cli.plain` (a plain pull/push/sync) must
load without Typer."""

from __future__ import annotations


def _register() -> None:
    # Each module adds its commands to `app` on import.
    from memsync.cli import sync_cmds  # noqa: F401, I001 - order is the help order
    from memsync.cli import admin_cmds, claude_cmds, compact_cmds, digest_cmds, privacy_cmds  # noqa: F401
    from memsync.cli import keys_cmds  # noqa: F401


def _usage_sentence(exc: Exception) -> str:
    """Click's usage error as one line: which command, what is wrong, where help is."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "memsync"
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    sub = command.partition(" ")[2]  # fail() prefixes "memsync: "
    return f"{sub + ': ' if sub else ''}{message} (see `{command} --help`)"


def run(argv: list[str] | None = None) -> None:
    import sys

    from memsync.cli.common import app
    from memsync.cli.plain import outcome

    _register()
    import typer

    # click's exceptions, vendored by newer Typer, imported from click by older ones
    clicks = sys.modules[typer.BadParameter.__module__]
    no_args = getattr(clicks, "NoArgsIsHelpError", ())
    with outcome():
        try:
            code = app(args=argv, standalone_mode=False)
        except no_args as exc:  # bare `memsync`: the help, exit 2 as before
            sys.stdout.write(exc.ctx.get_help() + "\n")
            code = 2
        except clicks.UsageError as exc:
            from memsync.util.errors import UsageError

            raise UsageError(_usage_sentence(exc)) from None
        except clicks.ClickException as exc:
            from memsync.util.errors import UserError

            raise UserError(" ".join(exc.format_message().split())) from None
        except typer.Abort:  # Ctrl-C at a prompt
            raise KeyboardInterrupt from None
    from memsync.util.errors import Interrupted

    if code == Interrupted.exit_code:  # Typer turns a KeyboardInterrupt in a command into it
        from memsync.cli.plain import INTERRUPTED, fail

        fail(INTERRUPTED, Interrupted.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
