"""Shared CLI pieces: the app, the options every command takes, output helpers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from memsync import config
from memsync.config import Context

app = typer.Typer(
    name="memsync",
    help="Keep Claude Code's memory safe and the same on every machine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JSON_VERSION = 1

MemoryDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--memory-dir",
        help="Memory directory (env MEMSYNC_MEMORY_DIR; default: Claude Code's for this project).",
        show_default=False,
    ),
]
RemoteOpt = Annotated[
    str | None,
    typer.Option(
        "--remote",
        help="Remote URL: file:///folder or an Azure Blob container URL (env MEMSYNC_REMOTE).",
        show_default=False,
    ),
]
ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        help="Portable project identity used as the remote prefix (env MEMSYNC_PROJECT).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print a versioned JSON document.")]
StatsOpt = Annotated[
    bool, typer.Option("--stats", help="Report requests by kind, bytes up and down, seconds.")
]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Allow a sync that deletes more than half of the files.")
]


def context(memory_dir: Path | None, remote: str | None, project: str | None = None) -> Context:
    return config.resolve(memory_dir=memory_dir, remote=remote, project=project)


def engine_for(memory_dir: Path | None, remote: str | None, project: str | None = None):  # noqa: ANN201
    """The sync engine for these options; imported here so `--help` stays light."""
    from memsync.engine import Engine

    return Engine(context(memory_dir, remote, project))


def fail(message: str, code: int = 1) -> NoReturn:
    from memsync.scanner import mask

    err.print(f"memsync: {mask(message)}", markup=False)
    sys.exit(code)


def emit_json(command: str, data: dict[str, Any]) -> None:
    """The versioned envelope scripts can rely on."""
    from memsync.scanner import mask

    doc = {"version": JSON_VERSION, "command": command, "data": data}
    sys.stdout.write(mask(json.dumps(doc, indent=2, sort_keys=True, default=str)) + "\n")
