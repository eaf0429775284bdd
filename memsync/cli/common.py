"""Shared CLI pieces: the app, the options every command takes, output helpers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TextIO

import typer

from memsync import config
from memsync.config import Context

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
    name="memsync",
    help="Keep Claude Code's memory safe and the same on every machine.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class LazyConsole:
    """Rich's Console, made on first use. Plain lines go straight to the stream: importing
    Rich costs ~40 ms, as much as a no-op sync's own work."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    @property
    def file(self) -> TextIO:
        return sys.stderr if self._stderr else sys.stdout

    @property
    def rich(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, highlight=False, soft_wrap=True)
        return self._console

    @property
    def is_terminal(self) -> bool:
        return self.file.isatty() and self.rich.is_terminal

    def print(self, *objects: Any, markup: bool | None = None, end: str = "\n", **kw: Any) -> None:
        plain = all(isinstance(o, str) for o in objects)
        if plain and set(kw) <= {"highlight"} and (markup is False or "[" not in "".join(objects)):
            self.file.write(" ".join(objects) + end)
        else:
            self.rich.print(*objects, markup=markup, end=end, **kw)


out = LazyConsole()
err = LazyConsole(stderr=True)

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
