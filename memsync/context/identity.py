"""The portable project identity: the remote prefix a project's memory lives under, the same
on every device, and never shared by two unrelated projects.

In order: a name the user gave (`--project`, MEMSYNC_PROJECT, the `project` setting); the name
this memory dir synced under before on this device (pinned in `$MEMSYNC_HOME/projects.json` by
every sync); the normalised git `origin`; the folder's name plus its repository's first commit
(`app-4f72ac06b2b5`: two unrelated repositories named `app` cannot meet); else no name at all,
and a sync asks for one.

A name synced under before wins over an origin that appeared (or changed) since: a repository
pushed to GitHub for the first time keeps the memory its other devices share instead of
silently starting an empty prefix of its own. The identity then carries the origin's name
(`other_origin`) so that sync says once, and status always, how to move (`origin_note`).

The fingerprint (the origin, else the first commit) goes into a small manifest on the remote
(`_memsync/project.json`, see sync/project.py), with the origin itself (two origins can
make one name: `me-x/proj` and `me/x-proj`): a sync that finds memory of a different origin
under its prefix refuses instead of mixing the two. A first-commit name is shared by a
copy of the repository and by another project cloned from the same template: a device that
never synced it and finds memory under it is refused until `--project` says which.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

PINS = "projects.json"
MANIFEST = "_memsync/project.json"
# left under a project's earlier name when a device moves its memory under the origin's name
# (`memsync sync --project ORIGIN`): the devices still using that name are told to follow
MOVED = "_memsync/moved.json"


# --- git, read directly (no git subprocess) -----------------------------------------------


def find_git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _git_config_path(root: Path) -> Path | None:
    dotgit = root / ".git"
    if dotgit.is_dir():
        return dotgit / "config"
    try:
        pointer = dotgit.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not pointer.startswith("gitdir:"):
        return None
    gitdir = (root / pointer.removeprefix("gitdir:").strip()).resolve()
    common = gitdir / "commondir"
    if common.exists():
        gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
    return gitdir / "config"


def git_origin(root: Path) -> str | None:
    """The `origin` remote URL from .git/config, read directly (no git subprocess)."""
    path = _git_config_path(root)
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
        elif section == '[remote "origin"]' and re.match(r"url\s*=", stripped):
            return stripped.split("=", 1)[1].strip()
    return None


def _origin_parts(url: str) -> tuple[str, str, bool]:
    """(host, path without `.git`, whether the path is URL-encoded) of an origin URL."""
    url = url.strip()
    scp = re.match(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$", url)
    if scp:
        host, path, encoded = scp.group(1), scp.group(2), False
    else:
        parts = urlsplit(url)
        host, path, encoded = (parts.hostname or ""), parts.path, True
    return host, re.sub(r"\.git/?$", "", path.strip("/")), encoded


def local_origin(url: str) -> bool:
    """Whether the origin is a folder on this machine (`../template`, `/srv/git/app.git`,
    `file:///srv/git/app`, `C:\\repos\\app`), not a host's repository: any two clones of two
    folders named alike would share its name, so it names no project."""
    host, _, _ = _origin_parts(url)
    return len(host) <= 1 or host == "localhost"


def normalise_origin(url: str) -> str:
    """`git@github.com:Me/Proj.git` and `https://github.com/Me/Proj` → `github.com-me-proj`."""
    host, path, _ = _origin_parts(url)
    return safe_segment(f"{host}/{path}".strip("/").lower())


def exact_origin(url: str) -> str:
    """The origin as the manifest records it beside its name: `github.com/me/proj` for
    `git@github.com:Me/Proj.git` and `https://github.com/Me/Proj` alike, with the separators
    and characters `normalise_origin` folds into `-` kept, so two repositories whose origins
    make one name (`me-x/proj` and `me/x-proj`, `proj%20x` and `proj-20x`) are told apart."""
    host, path, encoded = _origin_parts(url)
    if encoded:
        path = unquote(path)
    path = re.sub(r"/+", "/", path)
    return f"{host}/{path}".strip("/").lower()


def safe_segment(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return cleaned or "default"


class Identity(NamedTuple):
    name: str  # the remote prefix; "" when nothing names the project
    source: str  # configured | origin | pinned | first-commit | unnamed
    fingerprint: str | None  # "origin:<normalised url>" or "commit:<sha>"; None if neither
    other_origin: str | None = None  # the origin's name, when a name synced before won over it


def first_commit(root: Path) -> str | None:
    """The repository's root commit (the smallest, if history has several), or None (no git,
    no commit yet). A subprocess: asked only when there is no origin and no pin."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-list", "--max-parents=0", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commits = sorted(c for c in proc.stdout.split() if re.fullmatch(r"[0-9a-f]{40,64}", c))
    return commits[0] if proc.returncode == 0 and commits else None


def may_have_commits(root: Path) -> bool:
    """False when the repository's HEAD names a branch that has no commit yet (read from
    `.git` directly: no subprocess on every run of a project pinned before its first
    commit); True when that cannot be told without git."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return True  # a worktree's or submodule's `.git` file: ask git
    if not head.startswith("ref: "):
        return True  # a detached HEAD names a commit
    return (git / head.removeprefix("ref: ")).exists() or (git / "packed-refs").exists()


def read_pins(home: Path) -> dict[str, dict]:
    try:
        data = json.loads((home / PINS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a cache of what resolve() can work out again (an explicit name aside)
    return data if isinstance(data, dict) else {}


def pin(home: Path, memory_dir: Path, identity: Identity) -> str | None:
    """Remember the identity a memory dir synced under, so later runs (and hooks) use it
    without asking git, a name given once on the command line stays, and an origin that
    appears later does not move the memory away from the devices that share it. Returns the
    name it synced under before, if that was another one."""
    pins = read_pins(home)
    old = pins.get(str(memory_dir))
    old = old if isinstance(old, dict) else {}
    entry: dict[str, object] = {"project": identity.name, "fingerprint": identity.fingerprint}
    if identity.source == "configured" or (
        old.get("given") and old.get("project") == identity.name
    ):
        entry["given"] = True  # a name the user gave: no origin of this device overrides it
    if old.get("project") == identity.name and old.get("noted"):
        entry["noted"] = old["noted"]
    if old != entry:
        pins[str(memory_dir)] = entry
        _save_pins(home, pins)
    previous = old.get("project")
    return previous if isinstance(previous, str) and previous != identity.name else None


def _save_pins(home: Path, pins: dict[str, dict]) -> None:
    from memsync.util.fsutil import atomic_write, private_dir

    private_dir(home)
    atomic_write(home / PINS, json.dumps(pins, indent=1, sort_keys=True).encode())


def origin_note(identity: Identity, shared: bool = False) -> str:
    """The one sentence that says a project keeps its name although its origin differs;
    `shared`: the repository here is another one (a first commit of its own), which Claude
    Code's `autoMemoryDirectory` points at the same memory dir: no move of the memory."""
    other = identity.other_origin
    if shared:
        return (
            f"this repository ({other}) shares this memory dir with another repository, "
            f"whose memory it holds, synced as {identity.name}: Claude Code's "
            "`autoMemoryDirectory` points both at it, so it is one memory; to keep this "
            "repository's memory apart, give it a directory of its own (`autoMemoryDirectory` "
            "in its `.claude/settings.local.json`)"
        )
    return (
        f"this project's git origin is now {other}, but its memory stays under "
        f"{identity.name}, the name it synced under on this device, so every device keeps "
        f"sharing it; to move it under the origin, run `memsync sync --project {other}` once "
        "on this device; the devices still using the old name are then told to follow"
    )


def to_note(home: Path, memory_dir: Path, identity: Identity, shared: bool = False) -> str | None:
    """`origin_note` if a sync has not said it yet for this origin on this device."""
    if not identity.other_origin:
        return None
    entry = read_pins(home).get(str(memory_dir))
    if isinstance(entry, dict) and entry.get("noted") == identity.other_origin:
        return None
    return origin_note(identity, shared)


def noted(home: Path, memory_dir: Path, identity: Identity) -> None:
    """Record that the user was shown `origin_note` for this origin (it is not said again)."""
    pins = read_pins(home)
    entry = pins.get(str(memory_dir))
    if isinstance(entry, dict) and entry.get("project") == identity.name:
        entry["noted"] = identity.other_origin
        _save_pins(home, pins)


def resolve_identity(
    cwd: Path,
    configured: str | None,
    memory_dir: Path,
    home: Path,
) -> Identity:
    root = find_git_root(cwd)
    origin = git_origin(root) if root is not None else None
    if origin and local_origin(origin):
        origin = None  # a folder on one machine names no project: known by its first commit
    origin_id = normalise_origin(origin) if origin else None
    pinned = read_pins(home).get(str(memory_dir))
    pinned = pinned if isinstance(pinned, dict) and pinned.get("project") else None

    def commit_print() -> str | None:
        if pinned and pinned.get("fingerprint"):
            return pinned["fingerprint"]
        # a repository whose branch has no commit yet answers without running git
        commit = first_commit(root) if root is not None and may_have_commits(root) else None
        return f"commit:{commit}" if commit else None

    if configured:
        name = safe_segment(configured)
        if origin_id:
            return Identity(name, "configured", f"origin:{origin_id}")
        same = pinned and pinned["project"] == name
        return Identity(name, "configured", commit_print() if same or root else None)
    folder = safe_segment((root or cwd).name)
    if origin_id:
        if pinned is None or pinned["project"] == origin_id:
            return Identity(origin_id, "origin", f"origin:{origin_id}")
        return Identity(str(pinned["project"]), "pinned", pinned.get("fingerprint"), origin_id)
    if pinned:
        # a name pinned before the repository's first commit takes that commit once there
        # is one, so the manifest written without a fingerprint gets this project's
        fingerprint = pinned.get("fingerprint")
        if not fingerprint and root is not None and may_have_commits(root):
            fingerprint = commit_print()
        return Identity(str(pinned["project"]), "pinned", fingerprint)
    fingerprint = commit_print()
    if fingerprint:
        name = first_commit_name(folder, fingerprint.split(":", 1)[1])
        return Identity(name, "first-commit", fingerprint)
    return Identity("", "unnamed", None)


def first_commit_name(folder: str, commit: str) -> str:
    """The name of a project known by no origin: its folder's name (safe_segment) and its
    first commit, `app-4f72ac06b2b5`, so two unrelated repositories named `app` cannot meet."""
    return f"{folder}-{commit[:12]}"


def earlier_name(identity: Identity, git_root: Path | None) -> tuple[str, str] | None:
    """(name, fingerprint its manifest would hold) of the name this project's memory may be
    under from before, if any: under an origin name, the first-commit name it synced under
    before it had an origin (asks git: a subprocess)."""
    if git_root is None or identity.source != "origin":
        return None
    commit = first_commit(git_root)
    if commit is None:
        return None
    return first_commit_name(safe_segment(git_root.name), commit), f"commit:{commit}"


def describe(fingerprint: str | None) -> str:
    if not fingerprint:
        return "no origin or commit recorded"
    kind, _, value = fingerprint.partition(":")
    return f"origin {value}" if kind == "origin" else f"first commit {value[:12]}"


def manifest_bytes(
    identity: Identity, commit: str | None = None, unborn: bool = False, origin: str | None = None
) -> bytes:
    """The manifest: the fingerprint, and the repository's first commit beside an origin, so
    a device of the same repository without that origin is still recognised, and the origin
    itself (`exact_origin`), which the fingerprint's name cannot always tell apart from
    another. `unborn`: no fingerprint yet because the repository has no commit yet (the
    device that wrote it stamps it after its first commit; see project.py)."""
    doc: dict[str, object] = {
        "version": 1,
        "project": identity.name,
        "fingerprint": identity.fingerprint,
    }
    if commit:
        doc["commit"] = commit
    if origin:
        doc["origin"] = origin
    if unborn and not identity.fingerprint:
        doc["unborn"] = True
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def manifest_commit(data: bytes) -> str | None:
    """The first commit a manifest records: its own field, else its fingerprint's."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    value = doc.get("commit")
    if isinstance(value, str) and value:
        return value
    fingerprint = doc.get("fingerprint")
    if isinstance(fingerprint, str) and fingerprint.startswith("commit:"):
        return fingerprint.removeprefix("commit:")
    return None


def moved_bytes(to: str, device: str, at: float) -> bytes:
    return json.dumps({"to": to, "device": device, "at": at}, sort_keys=True).encode()


def moved_message(name: str, doc: dict) -> str:
    """The one sentence for a device still syncing under `name` after it moved."""
    import time

    at = doc.get("at")
    when = (
        time.strftime(" on %Y-%m-%d %H:%M", time.localtime(at))
        if isinstance(at, (int, float))
        else ""
    )
    by = doc.get("device") or "another device"
    return (
        f"this project's memory moved from {name} to {doc['to']} (by {by}{when}, under its "
        f"git origin's name); no memory was read or written: run `memsync sync --project "
        f"{doc['to']}` once on this device to follow it (it is remembered)"
    )


def moved_to(data: bytes) -> dict | None:
    """A "moved" marker's content ({"to", "device", "at"}), or None if it is not one."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("to"), str) and doc["to"]:
        return doc
    return None


def manifest_unborn(data: bytes) -> bool:
    """Whether a manifest without a fingerprint was written in a repository before its first
    commit (not in a folder without git, which never has one)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("unborn") is True


def manifest_origin(data: bytes) -> str | None:
    """The origin a manifest records (`exact_origin`), or None: written by a memsync from
    before it recorded one, or by a device without an origin."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    value = doc.get("origin") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else None


def manifest_fingerprint(data: bytes) -> str | None:
    """The fingerprint a manifest records (None for an unreadable one: it is claimed again)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    value = doc.get("fingerprint") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else None


def unnamed_message(memory_dir: Path) -> str:
    return (
        f"the project of {memory_dir} has no git origin or commit that tells its memory apart "
        "from another project's; name it once with `memsync sync --project NAME` (the same "
        "name on every device; it is remembered for this memory dir)"
    )
