"""Shared CLI pieces: the Typer app and the options every command takes; the output helpers
live in plain.py (no Typer) and are re-exported here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from memsync.cli.plain import context, emit_json, engine_for, err, fail, out

__all__ = [
    "app",
    "confirm",
    "context",
    "emit_json",
    "engine_for",
    "err",
    "fail",
    "out",
    "table",
]

app = typer.Typer(
    name="memsync",
    help=(
        "Keep Claude Code's memory safe and the same on every machine "
        "(`memsync --version`: which one)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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
        help=(
            "Remote URL: file:///folder, an Azure Blob container URL, s3://BUCKET/PREFIX or "
            "memstore://memstore_ID (env MEMSYNC_REMOTE)."
        ),
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
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking.")]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show what would happen; change nothing.")
]


def table(
    columns: tuple[str, ...], rows: Sequence[tuple[str, ...]], right: tuple[str, ...] = ()
) -> None:
    """Rows for a person on a terminal (a Rich table whose cells fold, never cut with "…"), or
    for a script (a pipe, a file): a header line and one tab-separated line a row, whole."""
    if not out.is_terminal:
        out.file.write("".join("\t".join(row) + "\n" for row in [columns, *rows]))
        return
    from rich.table import Table

    shown = Table(show_edge=False, header_style="bold")
    for column in columns:
        shown.add_column(column, justify="right" if column in right else "left", overflow="fold")
    for row in rows:
        shown.add_row(*row)
    out.print(shown)


def confirm(question: str, yes: bool) -> None:
    """Go on only with --yes/-y or a "y" typed at a terminal; a script without --yes gets a
    UserError saying to add it, never a prompt it cannot answer."""
    import sys

    from memsync.util.errors import UserError

    if yes:
        return
    if not sys.stdin.isatty():
        raise UserError(f"{question} needs confirmation: run it again with --yes (or -y)")
    if not typer.confirm(question, default=False):
        raise UserError("nothing was changed")


ForceOpt = Annotated[
    bool, typer.Option("--force", help="Allow a sync that deletes more than half of the files.")
]
