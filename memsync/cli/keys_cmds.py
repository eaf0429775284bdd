"""keys init, add, list, remove, export: the remote encrypted end to end (docs/encryption.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from memsync.cli.common import (
    JsonOpt,
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    app,
    emit_json,
    engine_for,
    err,
    out,
    table,
)

keys_app = typer.Typer(
    name="keys",
    help="Encrypt the remote end to end: this device's key and the devices that may read it.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(keys_app, name="keys")

KeyArg = Annotated[str, typer.Argument(help="A device's age public key (age1…).")]


def _moved(copied: int, deleted: int, left: list[str]) -> None:
    if copied or deleted:
        out.print(f"{copied} object(s) sealed anew, {deleted} old one(s) deleted.")
    for name in left:
        err.print(
            f"memsync: {name} changed on two devices during the switch; both copies are kept "
            "on the remote: check it, then run `memsync keys init` again",
            markup=False,
        )


@keys_app.command("init")
def init_cmd(
    memory_dir: MemoryDirOpt = None, remote: RemoteOpt = None, project: ProjectOpt = None
) -> None:
    """Make this device's key (if it has none) and turn encryption on for the remote."""
    from memsync.admin.keys import init

    result = init(engine_for(memory_dir, remote, project))
    if result.made_identity:
        out.print(
            f"Made this device's key in {result.identity} (keep a copy somewhere safe: "
            "without a key the remote cannot be read)."
        )
    out.print(result.public)
    if not result.access:
        err.print(f"memsync: {result.note}", markup=False)
        return
    if result.turned_on:
        out.print("Encryption is on: the remote now holds only ciphertext.")
    else:
        out.print("The remote is encrypted and this device has access.")
    _moved(result.copied, result.deleted, result.left)


@keys_app.command("add")
def add_cmd(
    key: KeyArg,
    name: Annotated[
        str | None, typer.Option("--name", help="What to call the device in `keys list`.")
    ] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Let another device read and write the encrypted remote."""
    from memsync.admin.keys import add

    result = add(engine_for(memory_dir, remote, project), key, name)
    if result.added:
        out.print(f"Added {key.strip()}: that device can sync now.")
    else:
        out.print(f"{key.strip()} already has access.")


@keys_app.command("list")
def list_cmd(
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
) -> None:
    """The devices that can read the encrypted remote."""
    from memsync.admin.keys import recipients

    found = recipients(engine_for(memory_dir, remote, project))
    if json:
        emit_json("keys list", {"recipients": [r.__dict__ for r in found]})
        return
    rows = [
        (
            r.key,
            r.name + (" (this device)" if r.this_device else ""),
            datetime.fromtimestamp(r.added).strftime("%Y-%m-%d %H:%M"),
        )
        for r in found
    ]
    table(("key", "name", "added"), rows)


@keys_app.command("remove")
def remove_cmd(
    key: KeyArg,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Revoke a device: a new data key, and everything sealed again to the others."""
    from memsync.admin.keys import remove

    result = remove(engine_for(memory_dir, remote, project), key)
    out.print(f"Removed {key.strip()}: it cannot read anything written from now on.")
    _moved(result.copied, result.deleted, result.left)
    out.print(
        "What it synced or copied before stays readable to it: its memory dir, its history, "
        "and any ciphertext it kept with the old data key. Revoke its remote credential too."
    )


@keys_app.command("export")
def export_cmd(
    memory_dir: MemoryDirOpt = None, remote: RemoteOpt = None, project: ProjectOpt = None
) -> None:
    """Print the remote's data key (an age identity): `age -d -i` reads any object with it."""
    from memsync.admin.keys import export

    out.print(export(engine_for(memory_dir, remote, project)))
