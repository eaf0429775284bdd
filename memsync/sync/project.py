"""Whose memory is under this remote prefix: the checks a sync makes against the project's
manifest (`_memsync/project.json`: the fingerprint, origin or first commit, of the project
that owns the prefix) and its "moved" marker, so one project's memory never mixes with
another's and a device still using an earlier name is told where the memory went. The
identity itself (names, fingerprints, the manifest's bytes) is context/identity.py's."""

from __future__ import annotations

import time
from collections.abc import Callable

from memsync.context import identity
from memsync.context.config import Context, strip_query
from memsync.stores import open_store
from memsync.stores.base import Entry, Store, nested_projects
from memsync.sync.mode import Mode
from memsync.sync.state import Meta
from memsync.sync.walk import is_ignored
from memsync.util.errors import (
    AlreadyExists,
    NotFound,
    PreconditionFailed,
    StoreError,
    Unreachable,
    UserError,
)

# a manifest read beside the listing: (bytes, ETag), or None if that read failed
ReadAhead = Callable[[], "tuple[bytes, str] | None"]


def display_remote(ctx: Context) -> str:
    """The remote and project, as a sentence names them."""
    return f"{strip_query(ctx.remote)} (project {ctx.project})"


def check_project(
    ctx: Context,
    store: Store,
    meta: Meta,
    listing: dict[str, Entry],
    mode: Mode,
    ahead: ReadAhead | None = None,
    known: bool = False,
) -> None:
    """Refuse to mix this project's memory with another's under the same prefix: the
    remote keeps the project's fingerprint (origin or first commit) in a small manifest,
    read only when its ETag moved (a no-op sync still sends one request). A remote that
    stops answering here is checked again by the next run (the transfers will find it
    unreachable themselves). `meta` is the state's meta (its "manifest_etag", and
    "manifest_unstamped" while the manifest holds no fingerprint); `known`: this device
    synced under this prefix before (it has records)."""
    refuse_nested(ctx, listing)
    try:
        _check_manifest(ctx, store, meta, listing, mode, ahead, known)
    except Unreachable:
        return


def refuse_nested(ctx: Context, listing: dict[str, Entry]) -> None:
    """One project's folder holds one project: another's records (`_memsync/`) in a folder of
    it stop every command here, before anything is read, written or deleted there."""
    nested = nested_projects(listing)
    if nested:
        raise UserError(
            f"another project's memory is inside this project's folder on the remote "
            f"{display_remote(ctx)}: {', '.join(nested)}; nothing was synced: give one of the "
            "two projects a remote of its own (a different --remote prefix) and move its files"
        )


def confirm_project(ctx: Context, store: Store, meta: Meta, known: bool, listing=None) -> None:
    """The refusal a sync gives when this prefix holds another project's memory (or a
    template clone's not yet named), for the commands that read or change the remote outside
    a sync: ls, export, import, prune, forget, purge. Nothing is written; a remote that cannot
    be reached is left to the command, which queues or says so."""
    if listing is None:
        try:
            listing = store.list()
        except (NotFound, Unreachable):
            return
    check_project(ctx, store, meta, listing, Mode.PULL, None, known)


def _check_manifest(
    ctx: Context,
    store: Store,
    meta: Meta,
    listing: dict[str, Entry],
    mode: Mode,
    ahead: ReadAhead | None,
    known: bool,
) -> None:
    entry = listing.get(identity.MANIFEST)
    ours = ctx.fingerprint
    unstamped = meta.manifest_unstamped and ours  # ours to stamp, though no ETag moved
    if entry is not None and entry.etag == meta.manifest_etag and not unstamped:
        return
    if entry is None:
        if not [k for k in listing if not is_ignored(k)]:
            check_old_name(ctx, store)
        if mode is Mode.PULL:
            return  # a pull writes nothing to the remote; the next push or sync does
        mine = identity.Identity(ctx.project, ctx.project_source, ours)
        unborn = ours is None and ctx.git_root is not None  # a repository before its first commit
        try:
            etag = store.create(
                identity.MANIFEST,
                identity.manifest_bytes(mine, first_commit(ctx), unborn, exact_origin(ctx)),
            )
        except AlreadyExists:
            pass  # another device wrote it first: read and check it below
        else:
            meta.manifest_etag = etag
            _unstamped(meta, ours is None)
            return
    try:
        data, etag = _read_manifest(store, entry, ahead)
    except NotFound:
        return  # removed meanwhile: written again by the next push or sync
    theirs = identity.manifest_fingerprint(data)
    if theirs and ours and theirs != ours and not same_repository(ctx, theirs, data):
        raise another_project(ctx, identity.describe(theirs), identity.describe(ours))
    if theirs and theirs == ours:
        checked = _check_origin(ctx, store, data, etag, mode, known)
        if checked is None:
            return  # changed meanwhile: checked again next time
        etag = checked
    if theirs and ctx.project_source == "first-commit" and not known:
        # a name made of the folder and its first commit is shared by a copy of this
        # repository and by another project cloned from the same template: a device that
        # never synced it joins only when the user says which (the pin then remembers),
        # even before any memory is there (both would write theirs under one name)
        raise UserError(template_message(ctx))
    if theirs is None and ours:
        strange = not known and identity.manifest_unborn(data)
        if strange and [k for k in listing if not is_ignored(k)]:
            # memory synced in a repository before its first commit, and this device never
            # synced it: only a device that did may say whose it is (it stamps below). A
            # manifest written in a folder without git is claimed by the first fingerprint.
            raise UserError(
                f"the remote {display_remote(ctx)} holds memory synced before its project "
                f"had a first commit, and this one has {identity.describe(ours)}; "
                "no memory was read or written: sync once on a device that synced it (it "
                "records its first commit), then here again; if it is another project, give this "
                "one its own name with --project NAME (or MEMSYNC_PROJECT)"
            )
        if mode is Mode.PULL:
            return  # stamped by the next push or sync
        mine = identity.Identity(ctx.project, ctx.project_source, ours)
        manifest = identity.manifest_bytes(mine, first_commit(ctx), origin=exact_origin(ctx))
        try:
            etag = store.replace(identity.MANIFEST, manifest, etag)
        except PreconditionFailed:
            return  # changed meanwhile: checked again next time
        theirs = ours
    meta.manifest_etag = etag
    _unstamped(meta, theirs is None)


def _unstamped(meta: Meta, unstamped: bool) -> None:
    """Remember a manifest without a fingerprint, so the first run here that has one stamps
    it even though the manifest's ETag has not moved."""
    meta.manifest_unstamped = unstamped


def _read_manifest(store: Store, entry: Entry | None, ahead: ReadAhead | None) -> tuple[bytes, str]:
    """The manifest: the copy read alongside the listing if it is the one listed, else
    read now."""
    if ahead is not None and entry is not None:
        got = ahead()
        if got is not None and got[1] == entry.etag:
            return got
    return store.get(identity.MANIFEST)


def another_project(ctx: Context, theirs: str, ours: str) -> UserError:
    """The one sentence for a prefix that holds another project's memory."""
    return UserError(
        f"the remote {display_remote(ctx)} holds the memory of another project "
        f"({theirs}; this one has {ours}); "
        "no memory was read or written: give this project its own name with --project NAME "
        "(or MEMSYNC_PROJECT), the same on every device"
    )


def exact_origin(ctx: Context) -> str | None:
    """This repository's origin as the manifest records it (identity.exact_origin), if the
    fingerprint is that origin's (read from .git/config: no subprocess, no request)."""
    ours = ctx.fingerprint or ""
    if not ours.startswith("origin:") or ctx.git_root is None:
        return None
    url = identity.git_origin(ctx.git_root)
    if not url or f"origin:{identity.normalise_origin(url)}" != ours:
        return None  # a fingerprint pinned under an earlier origin
    return identity.exact_origin(url)


def _check_origin(
    ctx: Context, store: Store, data: bytes, etag: str, mode: Mode, known: bool
) -> str | None:
    """A manifest of this project's fingerprint, an origin's name: refuse it if it records
    another origin of that name (`me-x/proj` and `me/x-proj` are both
    `github.com-me-x-proj`); record this one in it if it has none and this is the
    repository that wrote it. Returns the manifest's ETag (None: it changed meanwhile)."""
    origin = exact_origin(ctx)
    if origin is None:
        return etag
    recorded = identity.manifest_origin(data)
    if recorded is not None:
        if recorded != origin:
            raise another_project(ctx, f"origin {recorded}", f"origin {origin}")
        return etag
    if mode is Mode.PULL or not _stamps_origin(ctx, data, known):
        return etag  # written by an earlier memsync: let in as before
    mine = identity.Identity(ctx.project, ctx.project_source, ctx.fingerprint)
    manifest = identity.manifest_bytes(mine, first_commit(ctx), origin=origin)
    try:
        return store.replace(identity.MANIFEST, manifest, etag)
    except PreconditionFailed:
        return None


def _stamps_origin(ctx: Context, data: bytes, known: bool) -> bool:
    """Whether this device may record its origin in a manifest that has none: the manifest
    names this repository's first commit, or none and this device synced here before. A
    device of another repository with an origin of the same name adds nothing (it would
    lock out the project that wrote it) and is let in as before."""
    commit = identity.manifest_commit(data)
    if commit is None:
        return known
    return commit == first_commit(ctx)


def first_commit(ctx: Context) -> str | None:
    """This repository's first commit: the fingerprint's, else asked of git (a subprocess,
    only when a manifest is written or differs)."""
    ours = ctx.fingerprint or ""
    if ours.startswith("commit:"):
        return ours.removeprefix("commit:")
    if ctx.git_root is None:
        return None
    return identity.first_commit(ctx.git_root)


def shares_dir(ctx: Context, store: Store) -> bool:
    """Whether the repository here is another one than the one whose memory this dir syncs
    (its first commit is not the one the project's manifest records): Claude Code's
    `autoMemoryDirectory` points both at one dir, and its origin differs because it is
    another repository, not because the origin moved. Asked only when the origins differ."""
    if ctx.git_root is None:
        return False
    try:
        data, _ = store.get(identity.MANIFEST)
    except StoreError:
        return False
    theirs = identity.manifest_commit(data)
    return theirs is not None and theirs != identity.first_commit(ctx.git_root)


def same_repository(ctx: Context, theirs: str, data: bytes) -> bool:
    """A manifest of another fingerprint is this project's if it names the same first
    commit and the two do not name different origins (a fork, with an origin of its own,
    is another project): written before the repository had an origin, or by a device
    with the origin while this one has none (see `memsync sync --project ORIGIN`)."""
    ours = ctx.fingerprint or ""
    if theirs.startswith("origin:") and ours.startswith("origin:"):
        return False
    commit = identity.manifest_commit(data)
    return commit is not None and commit == first_commit(ctx)


def check_moved(ctx: Context, store: Store) -> None:
    """A device moved this project's memory under its origin's name and left a marker
    here: say where it went; upload nothing here, where the others no longer look."""
    moved = moved_notice(ctx, store)
    if moved:
        raise UserError(moved)


def moved_notice(ctx: Context, store: Store) -> str | None:
    """The sentence for a marker saying this project's memory moved elsewhere, if any."""
    try:
        data, _ = store.get(identity.MOVED)
    except NotFound:
        return None
    doc = identity.moved_to(data)
    if doc is None or doc["to"] == ctx.project:
        return None
    return identity.moved_message(ctx.project, doc)


def mark_moved(ctx: Context, before: str) -> str | None:
    """This device synced under `before` and now under its origin's name (it followed
    the origin note): leave a marker under `before`, if that holds this repository's
    memory, so the devices still using it are told where it went. Other renames leave
    none: only an origin and a first commit show the two names are one project."""
    project = ctx.project
    commit = first_commit(ctx) if ctx.fingerprint == f"origin:{project}" else None
    if commit is None:
        return None
    old = open_store(ctx.remote, before)
    payload = identity.moved_bytes(project, ctx.device, time.time())
    try:
        data, _ = old.get(identity.MANIFEST)
        if identity.manifest_commit(data) != commit:
            return None  # another project's memory: not this device's to redirect
        try:
            old.create(identity.MOVED, payload)
        except AlreadyExists:
            data, etag = old.get(identity.MOVED)
            if (identity.moved_to(data) or {}).get("to") != project:
                old.replace(identity.MOVED, payload, etag)
    except StoreError:
        return None  # unreachable or changed meanwhile: the note is not given either
    return (
        f"the memory under {before} is marked as moved to {project}: devices still "
        f"syncing under {before} are told to run `memsync sync --project {project}`"
    )


def check_old_name(ctx: Context, store: Store | None = None) -> None:
    """A first sync under a name whose prefix is empty while the remote holds this same
    repository's memory under another name: its earlier name (identity.earlier_name), or,
    for a project known by its first commit, a name with the same first commit made in a
    folder named differently (a copy, a renamed folder: `my-app-4f72ac06b2b5` beside
    `app-4f72ac06b2b5`). Say which and how to use it, upload nothing: one project's memory
    stays under one name unless the user chooses otherwise (`--project`)."""
    earlier = identity.earlier_name(ctx.identity, ctx.git_root)
    if earlier is not None and _manifest_says(ctx, *earlier):
        raise UserError(
            f"this project's memory is on the remote under its earlier name {earlier[0]!r}; "
            f"no memory was read or written: run `memsync sync --project {earlier[0]}` once on "
            "this device to keep using it (it is remembered)"
        )
    expected = ctx.identity.fingerprint
    if ctx.project_source == "first-commit" and expected:
        found = same_first_commit(ctx, store, expected)
        if found:
            raise UserError(elsewhere_message(ctx, found))


def _manifest_says(ctx: Context, name: str, expected: str) -> bool:
    """Whether the manifest under `name` holds fingerprint `expected` (False if it cannot
    be read)."""
    try:
        data, _ = open_store(ctx.remote, name).get(identity.MANIFEST)
    except (NotFound, StoreError):
        return False
    return identity.manifest_fingerprint(data) == expected


def same_first_commit(ctx: Context, store: Store | None, expected: str) -> list[str]:
    """The other names on the remote that hold this repository's memory: those ending in
    this first commit's twelve characters whose manifest records the same first commit.
    One listing of the remote's projects, then one read per such name (none on most
    remotes); a store that cannot list its projects finds none."""
    commit = expected.removeprefix("commit:")
    lister = getattr(store, "projects", None)
    if lister is None or not commit:
        return []
    try:
        names = lister()
    except StoreError:
        return []
    suffix = "-" + commit[:12]
    found = []
    for name in names or []:
        if name == ctx.project or not name.endswith(suffix):
            continue
        try:
            data, _ = open_store(ctx.remote, name).get(identity.MANIFEST)
        except (NotFound, StoreError):
            continue
        if identity.manifest_commit(data) == commit:
            found.append(name)
    return found


def elsewhere_message(ctx: Context, names: list[str]) -> str:
    """The one sentence for a first sync whose repository's memory is under other names."""
    commit = (ctx.fingerprint or "").removeprefix("commit:")[:12]
    if len(names) == 1:
        where = f"under {names[0]!r}"
        use = f"run `memsync sync --project {names[0]}` once on this device to use it"
    else:
        listed = ", ".join(repr(n) for n in names[:-1]) + f" and {names[-1]!r}"
        where = f"under {len(names)} names, {listed}"
        use = "run `memsync sync --project NAME` once on this device with the one to use"
    return (
        f"this repository's memory (first commit {commit}) is on the remote {where}, synced "
        f"from a folder with another name; no memory was read or written: {use} (it is "
        "remembered), or "
        f"`memsync sync --project {ctx.project}` to keep this folder's memory apart"
    )


def template_message(ctx: Context) -> str:
    """The one sentence for a device that never synced this project, known only by its
    folder and first commit, finding that name synced by another device."""
    commit = (ctx.fingerprint or "").removeprefix("commit:")[:12]
    return (
        f"the remote {display_remote(ctx)} already holds the project {ctx.project!r}, synced "
        f"from another folder named like this one with the same first commit {commit}, "
        "which a copy of this repository and another project made from the same template both "
        "have; "
        "no memory was read or written: if this folder is a copy of that repository, run "
        f"`memsync sync --project {ctx.project}` once to join it (it is remembered); if it is "
        "another project, run `memsync sync --project NEW-NAME` with a name of its own"
    )
