"""memsync's own per-project state under MEMSYNC_HOME: last-synced records, pending queue,
conflicts, refused files and local history. Every file is 0600, every folder 0700, and every
write is atomic, so a kill at any point leaves a readable state."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memsync.sync.bases import Bases
from memsync.sync.conflict_list import Conflicts
from memsync.util.errors import StateError
from memsync.util.fsutil import atomic_write, private_dir, sha256

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def applied_forgets_file(home: Path, project: str, memory_dir: Path) -> Path:
    """The ids of the forgets applied to one project's memory dir, whichever remote each came
    from: beside the state folders (which are per remote), so a device that syncs the project
    with another remote (a migration, a changed setting) does not apply a forget again to what
    it wrote after it learned of it."""
    digest = hashlib.sha256(f"{project}\n{memory_dir}".encode()).hexdigest()[:10]
    return home / "forgetting" / f"{project}-{digest}.applied.json"


def pending_forgets_file(home: Path, project: str, memory_dir: Path) -> Path:
    """The forgets started here whose remote part is not finished, for one project's memory
    dir: kept beside the state folders, not in one, so a sync naming the remote another way,
    or run after meta.json was moved aside, still finishes them (sync/tombstones.py)."""
    digest = hashlib.sha256(f"{project}\n{memory_dir}".encode()).hexdigest()[:10]
    return home / "forgetting" / f"{project}-{digest}.json"


class Record(NamedTuple):
    """What a file looked like when it was last in sync on both sides."""

    etag: str  # the remote ETag at that moment
    sha: str  # sha256 of the content; the content itself is kept in bases.sqlite
    synced_at: float


class Version(NamedTuple):
    """One copy of a file kept in local history."""

    name: str
    version: int  # 1 = newest
    saved_at: float
    reason: str
    path: Path


_FIX = "check its permissions, then run the command again"
# kept apart from meta.json, in a file written without a flush (see State.save_meta)
_TIMES = "times.json"
_TIME_KEYS = ("last_sync", "last_attempt", "last_interrupted")
_TIME = (int, float)
# each meta.json field: its JSON types (checked when read) and its empty value, which is
# left out of the file
_FIELDS: dict[str, tuple[type | tuple[type, ...], Any]] = {
    "pending": (list, list),  # files to push, queued while offline or interrupted
    "conflicts": (list, Conflicts),  # see sync/conflicts.py
    "refused": (dict, dict),  # local files refused: name -> reason
    "refused_remote": (dict, dict),  # remote copies refused: name -> [etag, reason]
    "landing": (dict, type(None)),  # new files a run writes without fsync (durability.py)
    "last_sync": (_TIME, type(None)),  # these three in times.json
    "last_attempt": (_TIME, type(None)),
    "last_interrupted": (_TIME, type(None)),
    "tombstones_etag": (str, type(None)),  # the tombstone list last applied
    "manifest_etag": (str, type(None)),  # the project manifest last checked (project.py)
    "manifest_unstamped": (bool, bool),  # that manifest has no fingerprint yet
    "deleted_singly": (list, list),  # files `push FILE` deleted from the remote since a full sync
    "index_comebacks": (dict, dict),  # files an edit brought back -> their MEMORY.md line
    "pruned": (dict, dict),  # files `memsync prune` deleted here -> when (their return is said)
    "purged": (dict, type(None)),  # the purge marker that keeps this device out
    "lifted_by": (str, type(None)),  # the device that published a purged project again
    "purge_seen": (str, type(None)),  # the purge marker's id and ETag last read
    "purge_seen_etag": (str, type(None)),
    "forgets_applied": (list, list),  # ids of the forgets applied here (sync/tombstones.py)
    "quarantined": (list, list),  # edits of forgotten files set aside here
    "conflicts_etag": (str, type(None)),  # the remote conflict record last read
    "conflicts_seen": (list, list),  # ids of the remote record's entries taken in
    "pending_resolutions": (list, list),  # resolutions not published yet
    "unpublished_conflicts": (list, list),  # conflicts found outside a merge, to publish
    "landing_conflicts": (dict, dict),  # conflicts of merges whose answer may be lost
}
_JSON_KINDS = {
    dict: "object",
    list: "list",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class Meta:
    """The project's state besides the records (meta.json and times.json), one typed
    attribute per field. A field at its empty value (None, [], {}, False) is left out of the
    file. Plain attributes, not a dataclass: this is read on every sync (see engine._Run)."""

    pending: list[str]
    conflicts: Conflicts
    refused: dict[str, str]
    refused_remote: dict[str, list]
    landing: dict[str, Any] | None
    last_sync: float | None
    last_attempt: float | None
    last_interrupted: float | None
    tombstones_etag: str | None
    manifest_etag: str | None
    manifest_unstamped: bool
    deleted_singly: list[str]
    index_comebacks: dict[str, str]
    pruned: dict[str, float]
    purged: dict[str, Any] | None
    lifted_by: str | None
    purge_seen: str | None
    purge_seen_etag: str | None
    forgets_applied: list[str]
    quarantined: list[dict[str, Any]]
    conflicts_etag: str | None
    conflicts_seen: list[str]
    pending_resolutions: list[dict[str, Any]]
    unpublished_conflicts: list[dict[str, Any]]
    landing_conflicts: dict[str, dict[str, Any]]

    def __init__(self) -> None:
        for key, (_, empty) in _FIELDS.items():
            setattr(self, key, empty())

    @classmethod
    def read(cls, path: Path, raw: dict[str, Any], times: object) -> Meta:
        """From meta.json's object and times.json's (a cache: a wrong value is dropped)."""
        meta = cls()
        for key, value in raw.items():
            if key not in _FIELDS or key in _TIME_KEYS:
                continue
            if not isinstance(value, _FIELDS[key][0]):
                raise StateError(
                    f"{path} holds a {key!r} memsync did not write; {_move_aside(path)}"
                )
            if key == "conflicts" and isinstance(value, list):
                value = Conflicts.from_json(value)
            setattr(meta, key, value)
        if isinstance(times, dict):
            for key in _TIME_KEYS:
                if _is_time(times.get(key)):
                    setattr(meta, key, times[key])
        return meta

    def fields(self) -> dict[str, Any]:
        """meta.json's object: the fields not at their empty value, times left out."""
        out = {}
        for key in _FIELDS:
            value = getattr(self, key)
            if isinstance(value, Conflicts):
                value = value.as_json()
            if key not in _TIME_KEYS and value not in (None, [], {}, False):
                out[key] = value
        return out

    def times(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in _TIME_KEYS if getattr(self, k) is not None}


def _is_time(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _move_aside(path: Path) -> str:
    return (
        f"move it aside (`mv {path} {path}.bad`) and run the command again: memsync then "
        "compares every file with the remote, which loses nothing"
    )


def _expect(path: Path, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        found = _JSON_KINDS.get(type(value), type(value).__name__)
        raise StateError(
            f"{path} holds a JSON {found} where memsync keeps an object; {_move_aside(path)}"
        )
    return value


def _make_state_dir(folder: Path) -> None:
    """Create the project's state folder (0700), or say which path is in the way."""
    try:
        private_dir(folder)
        if folder.is_dir():
            return
    except OSError:
        pass
    for path in (folder, *folder.parents):
        if path.exists() and not path.is_dir():
            raise StateError(
                f"{path} is a file where memsync keeps its state folder; move it aside "
                f"(`mv {path} {path}.bad`) and run the command again"
            )
    raise StateError(f"memsync cannot create its state folder {folder}; {_FIX}")


class State:
    def __init__(self, directory: Path, history_versions: int = 20) -> None:
        self.dir = directory
        self.history_versions = history_versions
        self.records: dict[str, Record] = {}
        self.meta = Meta()
        self.bases = Bases(directory)
        self._new_bases: dict[str, bytes] = {}  # written by save(), before the records
        _make_state_dir(self.dir)
        self._load()

    # --- persistence --------------------------------------------------------------------

    def _json(self, name: str, default: Any, *, cache: bool = False) -> Any:
        """A state file's JSON, or `default` if there is none. A file that cannot be read or
        parsed is reported (StateError), never taken for an empty one: an empty meta.json
        would drop the offline queue and the tombstone ETag without a word."""
        path = self.dir / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return default
        except (OSError, ValueError) as exc:
            if cache:  # written without fsync and rebuilt by reading the files: may be torn
                return default
            if isinstance(exc, OSError):
                raise StateError(f"{path} cannot be read ({exc.strerror}); {_FIX}") from None
            raise StateError(f"{path} is damaged (not valid JSON); {_move_aside(path)}") from None

    def _load(self) -> None:
        path = self.dir / "records.json"
        raw = _expect(path, self._json("records.json", {}), dict)
        try:
            self.records = {name: Record(**_expect(path, rec, dict)) for name, rec in raw.items()}
        except TypeError:
            reason = f"{path} holds a record memsync did not write"
            raise StateError(f"{reason}; {_move_aside(path)}") from None
        self._saved = dict(self.records)
        records_missing = not path.exists()
        path = self.dir / "meta.json"
        raw = _expect(path, self._json("meta.json", {}), dict)
        self.meta = Meta.read(path, raw, self._json(_TIMES, {}, cache=True))
        self._meta_saved = json.dumps(self.meta.fields(), sort_keys=True)
        # synced before, yet no records.json (moved aside, as a damaged one's message advises):
        # merges this run have no base to tell a removal from an addition
        self.records_lost = records_missing and bool(self.meta.last_sync)
        self._seen: dict[str, list] | None = None  # read on first use: only a scan needs it
        self._seen_saved: dict[str, list] = {}

    def _write_json(self, name: str, data: Any) -> None:
        payload = json.dumps(data, indent=1, sort_keys=True).encode()
        atomic_write(self.dir / name, payload)

    @property
    def seen(self) -> dict[str, list]:
        """The scan's stat cache (see localfiles.py): name -> [size, mtime_ns, ctime_ns, inode,
        sha256]."""
        if self._seen is None:
            raw = self._json("seen.json", {}, cache=True)
            self._seen = raw if isinstance(raw, dict) else {}
            self._seen_saved = dict(self._seen)
        return self._seen

    @seen.setter
    def seen(self, value: dict[str, list]) -> None:
        _ = self.seen  # the saved copy must be read before it is replaced
        self._seen = value

    def save_meta(self) -> None:
        """meta.json is fsynced, but only when more than the times of the last sync changed:
        those go to a file written without a flush (a power cut loses at most a time that
        `status` shows), so a no-op sync makes no flush at all."""
        times = self.meta.times()
        rest = self.meta.fields()
        text = json.dumps(rest, sort_keys=True)
        if text != self._meta_saved:
            self._write_json("meta.json", rest)
            self._meta_saved = text
        if times:
            atomic_write(self.dir / _TIMES, json.dumps(times).encode(), sync=False)
        else:  # a purge clears them
            (self.dir / _TIMES).unlink(missing_ok=True)

    def save(self) -> None:
        self.save_meta()
        if self._seen is not None and self._seen != self._seen_saved:
            # a cache (see localfiles.py): a lost or torn one means files are read again
            payload = json.dumps(self._seen, separators=(",", ":")).encode()
            atomic_write(self.dir / "seen.json", payload, sync=False)
            self._seen_saved = dict(self._seen)
        if self.records == self._saved:
            return  # a no-op sync: rewriting thousands of records would be most of its time
        self.bases.put(self._new_bases)
        self._new_bases = {}
        self._write_json("records.json", {n: r._asdict() for n, r in sorted(self.records.items())})
        self._saved = dict(self.records)
        self.bases.keep_only(rec.sha for rec in self.records.values())

    # --- records and bases ----------------------------------------------------------------

    def set_synced(self, name: str, etag: str, content: bytes) -> None:
        """Record `content` as the last-synced version of `name`, and keep it as the base of
        the next three-way merge (in bases.sqlite, at the next save, before the records)."""
        digest = sha256(content)
        self._new_bases[digest] = content
        self.records[name] = Record(etag, digest, time.time())

    def rebase(self, name: str, content: bytes) -> None:
        """Replace the kept synced copy of `name` by `content`, its record's ETag and time
        as they were (a forgotten line taken out of a base no sync will replace soon)."""
        digest = sha256(content)
        self._new_bases[digest] = content
        self.records[name] = self.records[name]._replace(sha=digest)

    def forget(self, name: str) -> None:
        self.records.pop(name, None)

    def base(self, name: str) -> bytes | None:
        rec = self.records.get(name)
        return None if rec is None else self.content(rec.sha)

    def content(self, sha: str) -> bytes | None:
        """A synced version kept as a base, by its sha256 (None: not kept)."""
        if sha in self._new_bases:
            return self._new_bases[sha]
        return self.bases.get(sha)

    # --- pending queue, conflicts, refused files ------------------------------------------

    @property
    def pending(self) -> list[str]:
        return list(self.meta.pending)

    def queue(self, names: list[str]) -> None:
        self.meta.pending = sorted(set(self.pending) | set(names))

    def unqueue(self, names: list[str]) -> None:
        self.meta.pending = sorted(set(self.pending) - set(names))

    @property
    def conflicts(self) -> Conflicts:
        """This device's conflicts, owned by one object (sync/conflict_list.py)."""
        return self.meta.conflicts

    @property
    def refused(self) -> dict[str, str]:
        return dict(self.meta.refused)

    def set_refused(self, refused: dict[str, str]) -> None:
        self.meta.refused = dict(sorted(refused.items()))

    @property
    def refused_remote(self) -> dict[str, list]:
        """Remote copies a download refused: name -> [etag, reason] (remote_files.classify)."""
        return dict(self.meta.refused_remote)

    def refuse_remote(self, name: str, etag: str, reason: str) -> None:
        self.meta.refused_remote = {**self.refused_remote, name: [etag, reason]}

    def keep_refused_remote(self, still: Iterable[str]) -> None:
        """Forget the refused copies a listing no longer shows unchanged."""
        kept = {n: v for n, v in self.refused_remote.items() if n in set(still)}
        if kept != self.refused_remote:
            self.meta.refused_remote = kept

    # --- local history --------------------------------------------------------------------

    def _history_dir(self, name: str) -> Path:
        return self.dir / "history" / history_folder(name)

    def _version_files(self, name: str) -> list[Path]:
        """Every kept version of `name`, oldest first."""
        folder = self._history_dir(name)
        return sorted(folder.glob("*.md"), key=lambda p: p.name) if folder.is_dir() else []

    def keep(self, name: str, content: bytes, reason: str) -> None:
        """Keep a copy of local content about to be replaced or removed (bounded per file).
        Whatever is here was scrubbed when this device learned of each forget: content still
        here holding forgotten text was written since, and is kept like any other."""
        folder = self._history_dir(name)
        if not folder.is_dir():
            private_dir(folder)
            atomic_write(folder / NAME_FILE, name.encode("utf-8"))
        existing = self._version_files(name)
        if existing and existing[-1].read_bytes() == content:
            return
        path = folder / f"{time.time_ns() // 1000:020d}-{sha256(content)[:8]}.md"
        atomic_write(path, content)
        atomic_write(path.with_suffix(".reason"), reason.encode())
        for old in self._version_files(name)[: -self.history_versions]:
            old.unlink(missing_ok=True)
            old.with_suffix(".reason").unlink(missing_ok=True)

    def history(self, name: str) -> list[Version]:
        versions = []
        for i, path in enumerate(reversed(self._version_files(name)), start=1):
            reason_path = path.with_suffix(".reason")
            reason = reason_path.read_text(encoding="utf-8") if reason_path.exists() else ""
            saved = int(path.name.split("-", 1)[0]) / 1_000_000
            versions.append(Version(name, i, saved, reason, path))
        return versions

    def history_names(self) -> list[str]:
        folder = self.dir / "history"
        if not folder.is_dir():
            return []
        names = set()
        for sub in folder.iterdir():
            if sub.is_dir():
                with contextlib.suppress(FileNotFoundError):
                    names.add((sub / NAME_FILE).read_text(encoding="utf-8"))
        return sorted(names)


NAME_FILE = ".name"  # in each history folder: the memory file's name, which the folder's may cut
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def history_folder(name: str) -> str:
    """A history folder name that fits any file system: a readable prefix of at most 40 ASCII
    characters and a hash of the whole name (`quote(name)` made a 30-character Japanese name
    a 273-byte folder, over the 255-byte limit). Names that differ only by case or by what
    the prefix drops still get different folders."""
    readable = _UNSAFE.sub("_", name)[:40].lstrip(".") or "_"
    return f"{readable}~{hashlib.sha256(name.encode('utf-8')).hexdigest()[:16]}"
