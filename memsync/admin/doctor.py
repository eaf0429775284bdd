"""`memsync doctor`: one line per check, and what to do when one fails. Nothing secret is
shown: the remote URL loses its query (SAS), keys are never read back out."""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memsync.context.config import SETTINGS_FILE, Context, strip_query
from memsync.util.errors import (
    AuthError,
    ConfigError,
    MemsyncError,
    NotFound,
    StoreError,
    Unreachable,
    UserError,
)

MAX_SKEW = 300.0  # seconds; Azure rejects shared-key requests beyond 15 minutes


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "settings": self.settings,
            "checks": [asdict(c) for c in self.checks],
        }


def _settings(ctx: Context) -> dict[str, Any]:
    shown = {k: v for k, v in ctx.settings.items() if k != "remote"}
    shown.update(
        remote=strip_query(ctx.remote),
        memory_dir=str(ctx.memory_dir),
        memory_dir_reason=ctx.memory_dir_reason,
        project=ctx.project,
        device=ctx.device,
        home=str(ctx.home),
        settings_file=str(ctx.home / SETTINGS_FILE),
    )
    return dict(sorted(shown.items()))


def run(ctx: Context, store: Any = None) -> Report:
    """Every check, in the order a user fixes things: this machine, then the remote. A check
    that fails stops the ones that depend on it."""
    report = Report(settings=_settings(ctx))
    report.checks += [_settings_check(ctx), _memory_dir(ctx), hooks_check(), _state(ctx)]
    index = _index(ctx)
    if index is not None:
        report.checks.append(index)
    report.checks.append(_builtin_sync(ctx))
    if not ctx.sync_enabled:
        report.checks.append(
            Check(
                "sync",
                False,
                "sync is off (MEMSYNC_SYNC=off or settings)",
                'unset MEMSYNC_SYNC or set "sync": true',
            )
        )
        return report
    try:
        store = store if store is not None else _open(ctx)
    except MemsyncError as exc:
        fix = "do what the message says"
        report.checks.append(Check("remote", False, str(exc), fix))
        return report
    report.checks += _remote_checks(ctx, store)
    return report


def _settings_check(ctx: Context) -> Check:
    settings_file = ctx.home / SETTINGS_FILE
    if settings_file.is_file():  # it was read and checked by config.resolve
        return Check("settings", True, f"{settings_file} (flag > environment > file)")
    return Check("settings", True, f"no {settings_file}: defaults (flag > environment > default)")


def _memory_dir(ctx: Context) -> Check:
    mem = ctx.memory_dir
    if not mem.is_dir():
        return Check(
            "memory dir",
            False,
            f"{mem} does not exist ({ctx.memory_dir_reason or 'resolved as Claude Code does'})",
            "start Claude Code in the project once, or pass --memory-dir",
        )
    from memsync.sync.walk import MemoryWalk

    count = sum(1 for name, _, _ in MemoryWalk(mem) if name.endswith(".md"))
    why = f"; {ctx.memory_dir_reason}" if ctx.memory_dir_reason else ""
    return Check("memory dir", True, f"{mem} ({count} Markdown file(s){why})")


def _index(ctx: Context) -> Check | None:
    """MEMORY.md against what Claude Code loads of it (None: there is no index yet)."""
    from memsync.memory import index_limit

    path = ctx.memory_dir / index_limit.INDEX
    if not path.is_file():
        return None
    said = index_limit.warning_for(ctx.memory_dir)
    if said:
        return Check("index", False, said, "memsync compact --index")
    return Check(
        "index",
        True,
        f"MEMORY.md loads whole (Claude Code {index_limit.CLAUDE_CODE_VERSION} loads "
        f"{index_limit.MAX_LINES} lines, {index_limit.MAX_CHARS:,} characters)",
    )


def _builtin_sync(ctx: Context) -> Check:
    """Claude Code's own memory sync against this memory dir: one syncer a folder."""
    from memsync.context import builtin_sync

    said = builtin_sync.stand_aside(ctx)
    if said:
        return Check("Claude Code sync", False, said, "turn one of the two syncers off")
    why = builtin_sync.detect(ctx.memory_dir, ctx.git_root)
    if why:
        return Check(
            "Claude Code sync",
            True,
            f"on ({why}); memsync syncs too, as {builtin_sync.OVERRIDE} is set",
        )
    return Check("Claude Code sync", True, "off for this memory dir (memsync syncs it)")


def _open(ctx: Context) -> Any:
    from memsync.stores import open_store

    if ctx.embedded_remote:
        from memsync.util.fsutil import private_dir

        private_dir(ctx.home / "remote")
    return open_store(ctx.remote, ctx.project)


def _remote_checks(ctx: Context, store: Any) -> list[Check]:
    """Reachable, credential, container, then what is in it: each needs the one before.
    The getattr calls ask which kind of remote this is (a folder's root, a container's URL and
    credential, a server's clock): backend details only doctor shows, kept out of the Store
    protocol the sync uses."""
    folder = getattr(store, "root", None)  # a folder remote: its folder must be there already
    if isinstance(folder, Path) and not folder.is_dir():
        fix = "mount the drive, or create the folder if this is the first device"
        return [Check("remote reachable", False, f"the folder remote {folder} is not there", fix)]
    checks = [Check("credential", True, getattr(store, "credential_kind", _NO_CREDENTIAL))]
    try:
        present = store.exists()
    except AuthError as exc:
        fix = getattr(
            store,
            "credential_fix",
            "check AZURE_STORAGE_CONNECTION_STRING / AZURE_STORAGE_KEY / the SAS token",
        )
        return [*checks, Check("remote reachable", False, str(exc), fix)]
    except Unreachable as exc:
        fix = "check the network or the mount; changes are queued until it is back"
        return [*checks, Check("remote reachable", False, str(exc), fix)]
    except ConfigError as exc:  # the address answers, but not as this kind of remote
        return [*checks, Check("remote reachable", False, str(exc), "fix the setting it names")]
    except StoreError as exc:  # any other refusal: said as it is, the other checks still run
        return [*checks, Check("remote reachable", False, str(exc), "check the remote setting")]
    checks.append(Check("remote reachable", True, strip_query(ctx.remote)))
    synced = _synced_here(ctx)
    if not present and synced:  # an unmounted share, a deleted container: never "new"
        fix = (
            "check the remote setting (a drive or share not mounted, a bucket or container "
            "renamed); if it was emptied on purpose, `memsync push --republish`"
        )
        detail = f"{_container(store)} is missing, though this device synced {synced} file(s) there"
        return [*checks, Check("container", False, detail, fix)]
    if not present:  # a fresh remote: the first push makes it, where the credential may
        creatable = store.can_create()
        detail = f"{_container(store)} does not exist yet"
        if creatable:
            detail += "; the first `memsync push` or `memsync sync` creates it"
        return [*checks, Check("container", creatable, detail, store.create_advice())]
    checks.append(Check("container", True, f"{_container(store)} present"))
    project = _project(ctx, store, synced)
    if not project.ok:  # nothing is written under another project's name, not even a probe
        return [*checks, project]
    files = _remote_files(ctx, store)
    said = _encryption(store) if files.ok else []
    return [*checks, project, files, *said, *_service(store), _probe(store), _skew(store)]


def _service(store: Any) -> list[Check]:
    """An S3 service's conditional writes, checked again (what a sync keeps from its first
    check may be of a service since replaced at the same address)."""
    check = getattr(store, "check_service", None)
    if check is None:
        return []
    try:
        return [Check("conditional writes", True, check())]
    except ConfigError as exc:
        return [Check("conditional writes", False, str(exc), "use a service that honours them")]


def _encryption(store: Any) -> list[Check]:
    """Whether the remote is encrypted, as the listing `_remote_files` made settled it; and,
    if it is, whether this device still holds its identity (without it, it syncs with the
    data key it kept until that key changes, then is locked out)."""
    say = getattr(store, "encryption", None)
    if say is None:
        return []
    checks = [Check("encryption", True, say())]
    if getattr(store, "encrypted", False):
        checks += _identity(store)
    return checks


def _identity(store: Any) -> list[Check]:
    """This device's identity on an encrypted remote: missing, or not among the recipients it
    last read (it lost its key and made a new one), it syncs with the data key it kept until
    that key changes, then is locked out."""
    from memsync.stores.crypt_keys import identity_path, load_identity, load_trust, public_key

    path = identity_path()
    identity = load_identity()
    trust = load_trust(*store.remote)
    if identity is not None and (trust is None or not trust.devices):
        return []
    me = None if identity is None else public_key(identity)
    if me is not None and trust is not None and any(d.key == me for d in trust.devices):
        return []
    if me is None:
        said = f"{path} is missing"
        fix = "restore it from your backup, or run `memsync keys init` for a new key and "
        fix += "`memsync keys add` it on a device with access"
    else:
        said = f"this device's key {me} is not among the recipients"
        fix = "restore the identity it had from your backup, or run `memsync keys add "
        fix += f"{me}` on a device with access"
    kept = ": this device syncs with the data key it kept, until that key changes"
    return [Check("identity", False, said + kept, fix)]


def _project(ctx: Context, store: Any, synced: int) -> Check:
    """Whether the prefix holds this project's memory: the check every sync makes against
    the project's manifest (read only: nothing is written)."""
    from memsync.sync.project import confirm_project
    from memsync.sync.state import Meta

    try:
        confirm_project(ctx, store, Meta(), synced > 0)
    except UserError as exc:
        return Check("project", False, str(exc), "see the message")
    return Check("project", True, f"{ctx.project} ({ctx.project_source})")


_NO_CREDENTIAL = "none needed (folder remote)"


def _state(ctx: Context) -> Check:
    """The project's state folder: readable records, or nothing yet (the first sync makes
    it); a file in its place, or records of the wrong shape, fail as every sync would."""
    from memsync.sync.state import State

    folder = ctx.state_dir
    blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        return Check(
            "state",
            False,
            f"{blocking} is a file where memsync keeps its state folder",
            f"move {blocking} aside, then run the command again",
        )
    if not folder.is_dir():
        return Check("state", True, f"{folder} (made by the first sync)")
    try:
        State(folder)
    except MemsyncError as exc:
        return Check("state", False, str(exc), "see the message")
    return Check("state", True, str(folder))


def _synced_here(ctx: Context) -> int:
    """How many files this device's records say it synced with the remote (0 if unreadable:
    the state check reports that)."""
    import json

    try:
        records = json.loads((ctx.state_dir / "records.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    return len(records) if isinstance(records, dict) else 0


def _refused_before(ctx: Context) -> dict[str, list]:
    """The remote copies a download refused ({name: [etag, reason]}, as State.refused_remote),
    read without making the state folder ({} if unreadable: the state check reports that)."""
    import json

    try:
        meta = json.loads((ctx.state_dir / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    refused = meta.get("refused_remote") if isinstance(meta, dict) else None
    return refused if isinstance(refused, dict) else {}


def _container(store: Any) -> str:
    """The container (or folder) a remote names, as the user wrote it."""
    blob_url = getattr(store, "blob_url", None)
    if blob_url is not None:
        return f"the container {blob_url.container!r}"
    s3_url = getattr(store, "s3_url", None)
    if s3_url is not None:
        return f"the bucket {s3_url.bucket!r}"
    if getattr(store, "container", None) is not None:  # a remote that names its own
        return str(store.container)
    return f"the folder {getattr(store, 'base', 'of the remote')}"


def hooks_check(settings_files: list[Path] | None = None) -> Check:
    """The memsync hooks `install` wrote. User scope writes the executable by absolute path
    (runnable whatever the Claude process's PATH); project scope writes the bare name `memsync`
    (the file is shared by a team), which must then resolve on PATH."""
    from memsync.claude.install import hook_settings_files, installed_hooks
    from memsync.context.config import claude_config_dir

    user = claude_config_dir() / "settings.json"
    if settings_files is None:
        settings_files = hook_settings_files(user)
    commands, plugin = installed_hooks(settings_files)
    if not commands:
        if plugin:
            return Check("hooks", True, "the memsync plugin is enabled (its own hooks)")
        # not a failure: memsync also serves the API memory tool, without Claude Code
        where = ", ".join(str(p) for p in settings_files)
        return Check(
            "hooks",
            True,
            f"not installed in Claude Code (no memsync hooks in {where}); to use memsync with "
            "Claude Code run `memsync install` (or `memsync install --scope project` for one "
            "repository), or load memsync as a plugin",
        )
    runnable = []
    for command, path in commands.items():
        found = _hook_runs(command, path, user)
        if isinstance(found, Check):
            return found
        runnable.append(found)
    from memsync.claude.warm import warm_state

    return Check("hooks", True, f"{', '.join(sorted(runnable))}; {warm_state()}")


def _hook_runs(command: str, path: Path, user: Path) -> str | Check:
    """How the hook command `path` names runs (for the passing check), or the failing Check:
    a bare name must be on PATH and is only right in a project's settings; an absolute path
    must be an executable file."""
    import os
    import shutil

    if os.path.isabs(command):
        if not (os.path.isfile(command) and os.access(command, os.X_OK)):
            return Check(
                "hooks",
                False,
                f"{path} runs {command}, which is not there or not executable",
                "run `memsync install` again from the memsync you use now",
            )
        return f"{command} (absolute path)"
    found = shutil.which(command)
    if path != user and found:
        return f"{command} (project scope, by name: {found} on this PATH)"
    if path != user:
        return Check(
            "hooks",
            False,
            f"{path} runs `{command}` by name and it is not on this PATH",
            "install memsync so `memsync` is on the PATH Claude Code runs with "
            "(e.g. `pipx install memsync`)",
        )
    return Check(
        "hooks",
        False,
        f"{path} runs `{command}` by name"
        + (f" (found at {found} on this PATH)" if found else " and it is not on PATH"),
        "run `memsync install` again: it writes the executable's absolute path",
    )


def _remote_files(ctx: Context, store: Any) -> Check:
    """What is under the project's prefix, and which of it memsync never fetches (refused as
    unsafe, or ignored), sorted as a sync sorts it."""
    from memsync.privacy.gate import shown_name
    from memsync.sync.remote_files import classify

    try:
        listing = store.list()
    except MemsyncError as exc:
        return Check("remote files", False, str(exc), "see the message")
    files = classify(listing, _refused_before(ctx))
    held = {name: f"refused before ({why})" for name, why in files.held.items()}
    ignored = {**files.unsafe, **held, **files.ignored}
    detail = f"{len(files.memory)} memory file(s) under the prefix"
    if ignored:
        shown = "; ".join(
            f"{shown_name(k.encode('utf-8', 'backslashreplace').decode())} ({why})"
            for k, why in sorted(ignored.items())[:5]
        )
        more = f" and {len(ignored) - 5} more" if len(ignored) > 5 else ""
        detail += f"; ignored, never fetched: {shown}{more}"
    return Check("remote files", True, detail)


def _probe(store: Any) -> Check:
    key = f"_memsync/doctor-{uuid.uuid4().hex[:12]}.md"
    data = b"memsync doctor probe\n"
    try:
        etag = store.create(key, data)
        back, etag2 = store.get(key)
        store.delete(key, etag2)
    except (AuthError, Unreachable, NotFound, MemsyncError) as exc:
        return Check(
            "write/read/delete probe",
            False,
            str(exc),
            "the credential needs write and delete rights on the container",
        )
    if back != data or not etag:
        return Check(
            "write/read/delete probe",
            False,
            "read back different bytes",
            "the remote is not storing files faithfully",
        )
    return Check("write/read/delete probe", True, f"ok under {key}")


def _skew(store: Any) -> Check:
    server_time = getattr(store, "server_time", None)
    if server_time is None:
        return Check("clock skew", True, "not applicable (the remote gives no clock)")
    try:
        server = server_time()
    except MemsyncError as exc:
        return Check("clock skew", False, str(exc), "")
    if server is None:
        return Check("clock skew", True, "the server sent no Date header")
    skew = time.time() - server
    ok = abs(skew) < MAX_SKEW
    return Check(
        "clock skew",
        ok,
        f"{skew:+.1f} s against the server",
        "" if ok else "sync this machine's clock (NTP): signed requests fail past 15 min",
    )
