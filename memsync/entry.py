"""Console entry point. `memsync hook ...` skips Typer and Rich entirely: hooks run on every
tool call and must start fast."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from memsync.hooks import main as hook_main

        sys.exit(hook_main(argv[1:]))
    from memsync.cli import run

    run()
