"""Console entry point. `memsync hook ...` skips Typer and Rich entirely: hooks run on every
tool call and must start fast. So does a plain `memsync pull|push|sync` (cli/plain.py);
everything else, and any argument the plain path does not know, goes through Typer."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from memsync.claude.warm import run_hook

        code = run_hook(argv[1:])
        # Claude Code waits for the hook's process to end: once its answer is out, it ends at
        # once, without the interpreter's teardown of every module (which, after the
        # PostToolUse hook forked its push, also copies the memory the child shares). Every
        # file a hook writes is written whole before this (atomic writes, its own log lines).
        from memsync.util.background import exit_now

        exit_now(code)
    # SIGTERM (a shutdown, `kill`, a service manager) is handled like Ctrl-C: the transfers
    # under way finish, the progress is saved, and the command exits 130
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    empty = _empty_option(argv)
    if empty:  # `--memory-dir "$DIR"` with DIR unset would mean the current folder
        sys.stderr.write(
            f"memsync: {empty} is empty (an unset variable in a script?); give it a value, or "
            f"leave {empty} out to use the default\n"
        )
        sys.exit(2)
    if argv in (["--version"], ["-V"]):  # answered without Typer, as a script asks it
        from importlib.metadata import version

        print(f"memsync {version('memsync')}")  # pyproject.toml's, as installed
        return
    if argv[:1] in (["pull"], ["push"], ["sync"]):
        from memsync.cli.plain import run_plain

        plain = run_plain(argv)
        if plain is not None:
            sys.exit(plain)
    from memsync.cli import run

    run()


_PATH_OPTIONS = ("--memory-dir", "--remote", "--project", "--from", "--source")


def _empty_option(argv: list[str]) -> str | None:
    """The option given an empty value (`--memory-dir ""`, `--remote=`), if any: an empty
    path is the current folder to Python, which would be synced as the memory dir."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if name in _PATH_OPTIONS:
            given = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if given is not None and not given.strip():
                return name
    return None
