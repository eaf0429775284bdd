"""Console entry point. `memsync hook ...` skips Typer and Rich entirely: hooks run on every
tool call and must start fast. So does a plain `memsync pull|push|sync` (cli/plain.py);
everything else, and any argument the plain path does not know, goes through Typer."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from memsync.claude.hooks import main as hook_main

        sys.exit(hook_main(argv[1:]))
    # SIGTERM (a shutdown, `kill`, a service manager) is handled like Ctrl-C: the transfers
    # under way finish, the progress is saved, and the command exits 130
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if argv[:1] in (["pull"], ["push"], ["sync"]):
        from memsync.cli.plain import run_plain

        code = run_plain(argv)
        if code is not None:
            sys.exit(code)
    from memsync.cli import run

    run()
