"""keys init, add, list, remove, export: the remote encrypted end to end (docs/encryption.md)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from memsync.cli.common import (
    JsonOpt,
    MemoryDirOpt,
    ProjectOpt,
    RemoteOpt,
    YesOpt,
    app,
    confirm,
    emit_json,
    engine_for,
    err,
    out,
    table,
)

if TYPE_CHECKING:
    from memsync.admin.keys import KeysOutcome

keys_app = typer.Typer(
    name="keys",
    help="Encrypt the remote end to end: this device's key and the devices that may read it.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(keys_app, name="keys")

KeyArg = Annotated[str, typer.Argument(help="A device's age public key (age1…).")]


def _moved(result: KeysOutcome) -> None:
    if result.copied or result.deleted:
        out.print(f"{result.copied} object(s) sealed anew, {result.deleted} old one(s) deleted.")
    if result.swept:
        out.print(f"{result.swept} object(s) left under a key never published were deleted.")
    for name in result.left:
        err.print(
            f"memsync: {name} changed on two devices during the switch; both copies are kept "
            "on the remote: check it, then run `memsync keys init` again",
            markup=False,
        )
    for name in result.damaged:
        err.print(
            f"memsync: {name} on the remote is damaged (it does not decrypt or its "
            "authentication fails), so it was left as it is, not sealed anew: on a device with "
            f"a good copy, save the file again and run `memsync push --force {name}` to "
            "replace it",
            markup=False,
        )


@keys_app.command("init")
def init_cmd(
    adopt: Annotated[
        list[str] | None,
        typer.Option(
            "--adopt",
            metavar="NAME",
            help="Seal under the data key a file left in plaintext (or under an earlier key) "
            "on the encrypted remote, once you checked it; repeatable.",
        ),
    ] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Make this device's key (if it has none) and turn encryption on for the remote."""
    from memsync.admin.keys import init

    result = init(engine_for(memory_dir, remote, project), adopt or [])
    made = "Made this device's key" if result.made_identity else "This device's key is"
    out.print(
        f"{made} in {result.identity}: keep a copy somewhere safe (without a key the remote "
        "cannot be read). Its public key:"
    )
    out.print(result.public)
    if result.made_remote:
        out.print(f"Created the remote {result.made_remote}.")
    if result.failure is not None:  # the key first, then what stopped it
        raise result.failure
    if result.note:
        err.print(f"memsync: {result.note}", markup=False)
        return
    if result.turned_on:
        out.print("Encryption is on: the remote now holds only ciphertext.")
    else:
        out.print("The remote is encrypted and this device has access.")
    _moved(result)
    if result.strays:
        err.print(
            f"memsync: {len(result.strays)} file(s) on the remote are not sealed under its "
            f"data key, so not trusted and not synced: {', '.join(result.strays)}; check each "
            "and run `memsync keys init --adopt NAME` to fold it in",
            markup=False,
        )


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
    from memsync.stores.crypt_migrate import check_public

    key = check_public(key)  # as age writes it: one recipient however it was typed
    result = add(engine_for(memory_dir, remote, project), key, name)
    if result.added:
        out.print(f"Added {key}: that device can sync now.")
    else:
        out.print(f"{key} already has access.")


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
    yes: YesOpt = False,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Revoke a device: a new data key, and everything sealed again to the others."""
    from memsync.admin.keys import is_this_device, remove
    from memsync.stores.crypt_migrate import check_public

    key = check_public(key)
    engine = engine_for(memory_dir, remote, project)
    if is_this_device(key):
        confirm(
            f"{key} is this device's own key: removing it locks this device out (it "
            "reads nothing on the remote until another device runs `memsync keys add` for "
            "it). Remove it?",
            yes,
        )
    result = remove(engine, key)
    if not result.listed:
        out.print(f"{key} was not among the recipients; the data key is new all the same.")
    out.print(f"Removed {key}: it cannot read anything written from now on.")
    _moved(result)
    out.print(
        "What it synced or copied before stays readable to it: its memory dir, its history, "
        "and any ciphertext it kept with the old data key. Revoke its remote credential too."
    )
    if not result.access:
        out.print(
            "This device has no access now: another device with access can let it in again "
            f"with `memsync keys add {key}`."
        )


@keys_app.command("export")
def export_cmd(
    memory_dir: MemoryDirOpt = None, remote: RemoteOpt = None, project: ProjectOpt = None
) -> None:
    """Print the remote's data key (an age identity): `age -d -i` reads any object with it."""
    from memsync.admin.keys import export

    out.print(export(engine_for(memory_dir, remote, project)))
