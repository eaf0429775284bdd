"""An Anthropic memory store as a remote (`memstore://memstore_ID[/PREFIX]`).

A memory store holds UTF-8 text memories by path (`/a/b.md`); each project's files live under
`/PREFIX/<project>/`. The ETag is the memory's `content_sha256` (the service hashes the bytes
as sent, so it is also the content's own hash): a create is create-only (409 when the path is
taken), a replace carries a `content_sha256` precondition (409 when the content moved; content
already as sent is a 200), a delete carries `expected_content_sha256`. The API addresses a
memory by its id, so the store keeps the ids its listing saw and finds a missing one by
listing the key's folder (`depth=1`).

What the service cannot hold is refused here, by name and with the service's own rule, before
any request (`Unholdable`): content over 102,400 bytes or not UTF-8, a path of more than 20
segments or 1,024 bytes, a name not in Unicode NFC or holding a format character, a file where
the store has a folder of that name.

A memory has no field of its own for memsync's `edited` time. A write made within PROMPT
seconds of its edit is dated by the service (`updated_at`, the time of the write that made the
content, also for an agent's write through the mounted store); the edit time of a later write
(a sync of files edited earlier, a merge) goes into the project's edit-time record first
(`memstore_times.py`, one conditional write for the writes in flight together), and `fetch`
takes it from there when it speaks for the content read.

The `anthropic` SDK is imported when the first request is made, never by `open_store` alone,
so other remotes' hooks pay nothing for it. Every request goes through the SDK's client
(`client.beta.memory_stores`), which sends the beta header; the base URL and the key are the
SDK's own settings (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
"""

from __future__ import annotations

import builtins
import hashlib
import itertools
import posixpath
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memsync.stores.base import (
    MAX_ATTEMPTS,
    Entry,
    RemoteVersion,
    Stats,
    Store,
    check_key,
)
from memsync.stores.memstore_times import KEY as TIMES_KEY
from memsync.stores.memstore_times import Times, changed, dump, edited_at, parse
from memsync.util.errors import (
    AlreadyExists,
    AuthError,
    ConfigError,
    NotFound,
    PreconditionFailed,
    StoreError,
    Unholdable,
    Unreachable,
)

if TYPE_CHECKING:
    from anthropic import Anthropic

MAX_CONTENT = 102_400  # bytes of UTF-8 a memory holds
MAX_SEGMENTS = 20
MAX_PATH_BYTES = 1024
PAGE = 100  # the largest page a basic listing gives
TIMEOUT = 30.0  # seconds a request may take, unless the command's deadline is nearer
READ_RETRIES = 2  # the SDK's retries of a read; a write is sent once (see `_call`)
PROMPT = 15.0  # seconds after its edit within which a write's own time stands for the edit's
OWN = "_memsync/"  # memsync's own records: no edit time kept for them


def path_problem(path: str) -> str | None:
    """Why a memory store refuses the path `path`, or None (the service's published rules)."""
    segments = path.strip("/").split("/")
    if len(segments) > MAX_SEGMENTS:
        return f"its path has {len(segments)} segments; a memory store allows {MAX_SEGMENTS}"
    if len(path.encode()) > MAX_PATH_BYTES:
        return f"its path is {len(path.encode())} bytes; a memory store allows {MAX_PATH_BYTES}"
    if unicodedata.normalize("NFC", path) != path:
        return "its name is not in Unicode NFC, which a memory store requires; rename it"
    bad = next(
        (c for c in path if unicodedata.category(c) in ("Cc", "Cf") or c in "\u2028\u2029"),
        None,
    )
    if bad is not None:
        return f"its name holds U+{ord(bad):04X}, a character a memory store refuses; rename it"
    return None


def parse_url(url: str) -> tuple[str, str]:
    """(store id, prefix) of `memstore://memstore_ID[/PREFIX]`; ConfigError if malformed."""
    rest = url[len("memstore://") :] if url.startswith("memstore://") else ""
    store_id, _, prefix = rest.partition("/")
    prefix = prefix.strip("/")
    if not store_id.startswith("memstore_") or "?" in rest or "#" in rest:
        raise ConfigError(
            f"the remote {url!r} is not a memory store URL (memstore://memstore_ID[/PREFIX], "
            "the store's id as the Console or the API gives it); fix --remote, MEMSYNC_REMOTE "
            "or the remote setting"
        )
    if prefix:
        try:
            check_key(prefix)
        except StoreError as exc:
            raise ConfigError(f"the remote {url!r} has a prefix memsync refuses: {exc}") from None
    return store_id, prefix


class MemoryStoreStore(Store):
    content_etags = True  # the ETag is the content's SHA-256

    def __init__(self, url: str, project: str) -> None:
        self.store_id, prefix = parse_url(url)
        self.parent = f"/{prefix}/" if prefix else "/"  # where the projects sit
        self.root = self.parent + (f"{project}/" if project else "")
        problem = path_problem(self.root)
        if problem is not None:
            raise ConfigError(f"the remote {url!r} with project {project!r}: {problem}")
        self.url = f"memstore://{self.store_id}{self.root.rstrip('/')}"
        self.stats = Stats()
        self._client_made: Anthropic | None = None
        self._lock = threading.Lock()
        self._ids: dict[str, str] = {}  # key -> memory id, as a listing or a write saw it
        self._gone: dict[str, str] = {}  # key -> id of the memory this store deleted there
        # the edit-time record (memstore_times.py), as last read or written here; `_seq` orders
        # listings, reads and that record's reads in this process (see `_edit_time`)
        self._seq = itertools.count(1)
        self._seen: dict[str, tuple[str, int]] = {}  # key -> (hash, seq) as a listing showed it
        self._listed = False  # a full listing was made: `_seen` holds every live key
        self._times: Times | None = None
        self._times_etag: str | None = None
        self._times_seq = 0
        self._times_lock = threading.Lock()  # one read or write of the record at a time
        self._pending: list[tuple[str, str, float | None]] = []  # entries not yet written
        # what `memsync doctor` shows of this remote
        self.credential_kind = "the anthropic SDK's API key (ANTHROPIC_API_KEY or its settings)"
        self.credential_fix = "check ANTHROPIC_API_KEY and that the key's workspace holds the store"
        self.container = f"the memory store {self.store_id}"

    # --- the SDK ------------------------------------------------------------------------

    def _client(self) -> Anthropic:
        with self._lock:
            if self._client_made is None:
                try:
                    import anthropic
                except ImportError:
                    raise ConfigError(
                        "a memstore:// remote needs the anthropic SDK: pip install "
                        "'memsync[memstore]'"
                    ) from None
                try:
                    client = anthropic.Anthropic(max_retries=READ_RETRIES)
                except anthropic.AnthropicError:
                    client = None
                if client is None or not (
                    client.api_key or client.auth_token or getattr(client, "_token_cache", None)
                ):
                    raise ConfigError(
                        "a memstore:// remote needs an API key: set ANTHROPIC_API_KEY"
                    )
                if not hasattr(client.beta, "memory_stores"):
                    raise ConfigError(
                        f"a memstore:// remote needs anthropic 2.14 or later (this is "
                        f"{anthropic.__version__}): pip install 'memsync[memstore]'"
                    )
                self._client_made = client
            return self._client_made

    def _timeout(self) -> float:
        if self.deadline is None:
            return TIMEOUT
        return max(0.1, min(TIMEOUT, self.deadline - time.monotonic()))

    def _call(self, what: str, key: str | None, write: bool, fn: Any, *args: Any, **kw: Any):
        """One SDK call with the SDK's errors as memsync's. A write is sent once: a conditional
        write retried after a lost answer would meet its own first attempt, and a write whose
        answer came damaged may have landed, so both are Unreachable (the next sync compares
        the contents). A read whose answer came damaged (cut short, not JSON, not the model) is
        asked again, READ_RETRIES times, then is Unreachable: a damaged answer is never used."""
        import anthropic

        client = self._client()
        if write or self.deadline is not None:  # the SDK's retries would not see the deadline
            client = client.with_options(max_retries=0)
        memories = client.beta.memory_stores
        for _ in range(1 if write else READ_RETRIES + 1):
            try:
                return fn(memories, *args, timeout=self._timeout(), **kw)
            except anthropic.APIConnectionError as exc:
                raise Unreachable(
                    f"the memory store {self.store_id} cannot be reached ({exc})"
                ) from None
            except anthropic.APIStatusError as exc:
                raise self._translate(exc, what, key) from None
            except (ValueError, anthropic.APIResponseValidationError) as exc:
                damaged = exc  # a JSON body cut short or garbled, or not the SDK's model
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    break
        raise Unreachable(
            f"the memory store {self.store_id}'s answer to {what} came damaged "
            f"({type(damaged).__name__}); run the command again"
        )

    def _translate(self, exc: Any, what: str, key: str | None) -> Exception:
        status, kind = exc.status_code, getattr(exc, "type", None)
        said = getattr(exc, "api_message", None) or str(exc)
        name = key or self.store_id
        if status in (401, 403):
            return AuthError(
                f"the memory store {self.store_id} refused the API key ({status}: {said}); "
                "check ANTHROPIC_API_KEY and the key's workspace"
            )
        if status == 409 and kind == "memory_precondition_failed_error":
            return PreconditionFailed(f"{name} changed on the remote")
        if status == 409 and kind == "memory_path_conflict_error":
            return AlreadyExists(f"{name} already exists on the remote")
        if status == 404:
            return NotFound(f"{name} is not on the remote ({said})")
        if status == 408 or status == 429 or status >= 500:
            return Unreachable(
                f"the memory store {self.store_id} answered {status} to {what} ({said}); "
                "the work is queued"
            )
        return StoreError(f"the memory store {self.store_id} refused {what} of {name}: {said}")

    # --- names and limits --------------------------------------------------------------

    def _path(self, key: str) -> str:
        return self.root + check_key(key)

    def refuses(self, key: str, data: bytes) -> str | None:
        try:
            self._check(key, data)
        except Unholdable as exc:
            return exc.reason
        return None

    def _check(self, key: str, data: bytes) -> str:
        """The text to send for `key`, or Unholdable (before any request) saying which of the
        service's limits it is outside."""
        problem = path_problem(self._path(key))
        with self._lock:  # the transfers run in threads, each adding the ids it wrote
            known = list(self._ids)
        if problem is None and len(data) > MAX_CONTENT:
            problem = f"it is {len(data)} bytes; a memory store holds {MAX_CONTENT} a memory"
        if problem is None and any(
            k.startswith(key + "/") or key.startswith(k + "/") for k in known
        ):
            problem = (
                "the memory store already holds a folder or a file of this name, and cannot "
                "hold both"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            problem = problem or "it is not UTF-8 text, and a memory store holds text only"
            text = ""
        if problem is not None:
            raise Unholdable(key, f"not sent to the memory store: {problem}")
        return text

    # --- the protocol ------------------------------------------------------------------

    def _pages(self, prefix: str, depth: int | None = None) -> Iterator[Any]:
        """Every item under `prefix`, a counted request a page."""
        kw: dict[str, Any] = {"path_prefix": prefix, "limit": PAGE, "view": "basic"}
        if depth is not None:
            kw["depth"] = depth
        self.stats.count("list")
        page = self._call(
            "a listing", None, False, lambda m, **k: m.memories.list(self.store_id, **k), **kw
        )
        while True:
            yield from page.data
            if not page.has_next_page():
                return
            self.stats.count("list")
            cursor = page.next_page
            page = self._call(
                "a listing",
                None,
                False,
                lambda m, **k: m.memories.list(self.store_id, **k),
                **{**kw, "page": cursor},
            )

    def list(self) -> dict[str, Entry]:
        entries: dict[str, Entry] = {}
        ids: dict[str, str] = {}
        for item in self._pages(self.root):
            if item.type != "memory" or not item.path.startswith(self.root):
                continue
            key = item.path[len(self.root) :]
            ids[key] = item.id
            entries[key] = Entry(
                key, item.content_sha256, item.content_size_bytes, _seconds(item.updated_at)
            )
        seq = next(self._seq)
        with self._lock:
            self._ids = ids
            self._seen = {k: (e.etag, seq) for k, e in entries.items()}
            self._listed = True
        return entries

    def projects(self) -> tuple[str, ...] | None:
        names = [
            item.path[len(self.parent) :].strip("/")
            for item in self._pages(self.parent, depth=1)
            if item.type == "memory_prefix"
        ]
        return tuple(sorted(names))

    def _find(self, key: str) -> str:
        """The id of the memory at `key`: the one seen last, else one listing of its folder."""
        with self._lock:
            known = self._ids.get(key)
        if known is not None:
            return known
        path = self._path(key)
        items = list(self._pages(posixpath.dirname(path) + "/", depth=1))
        seq = next(self._seq)
        found = None
        with self._lock:
            for item in items:
                if item.type == "memory" and item.path.startswith(self.root):
                    self._seen[item.path[len(self.root) :]] = (item.content_sha256, seq)
                if item.type == "memory" and item.path == path:
                    self._ids[key] = found = str(item.id)
        if found is None:
            raise NotFound(f"{key} is not on the remote")
        return found

    def _forget_id(self, key: str) -> None:
        with self._lock:
            self._ids.pop(key, None)

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        """The memory's content and hash, and when that content was edited (`_edit_time`)."""
        path = self._path(key)
        for _ in range(2):  # a remembered id may be stale: one look-up again
            memory_id = self._find(key)
            self.stats.count("get")
            try:
                item = self._call(
                    "a read",
                    key,
                    False,
                    lambda m, memory_id=memory_id, **k: m.memories.retrieve(
                        memory_id, memory_store_id=self.store_id, view="full", **k
                    ),
                )
            except NotFound:
                self._forget_id(key)
                continue
            if item.path != path:  # renamed by another client since it was listed
                self._forget_id(key)
                continue
            data = (item.content or "").encode()
            if hashlib.sha256(data).hexdigest() != item.content_sha256:
                raise StoreError(
                    f"{key} came from the memory store with content that does not match its "
                    "content_sha256; run the command again"
                )
            self.stats.moved(down=len(data))
            read = next(self._seq)
            return data, item.content_sha256, self._edit_time(key, item, read)
        raise NotFound(f"{key} is not on the remote")

    # --- the writer's edit time ----------------------------------------------------------

    def _edit_time(self, key: str, item: Any, read: int) -> float | None:
        """When the content of `item` (the memory at `key`, read at `read`) was edited: its
        entry in the edit-time record, else the time of the write that made it. The record is
        written before the memory it speaks for, so a copy of it read after the memory was
        (after this read, or after a listing that showed this content) has the entry if there
        is one; an older copy without it is read again, once. Content as the full listing
        showed it, when that listing showed no record, was written promptly: no request."""
        if key.startswith(OWN):
            return None
        sha = item.content_sha256
        with self._lock:
            hash_seen, seen = self._seen.get(key, ("", 0))
            unrecorded = self._listed and TIMES_KEY not in self._seen
        if hash_seen == sha and unrecorded:
            return _seconds(item.updated_at)  # listed as it is, and no record was listed
        after = seen if hash_seen == sha else read
        times, read_at = self._read_times(after=0)
        if edited_at(times, key, sha) is None and read_at <= after:
            times, read_at = self._read_times(after=after)
        when = edited_at(times, key, sha)
        return when if when is not None else _seconds(item.updated_at)

    def _read_times(self, after: int) -> tuple[Times, int]:
        """The edit-time record, read again unless the copy here was read after `after`."""
        with self._times_lock:
            if self._times is None or self._times_seq <= after:
                seq = next(self._seq)
                try:
                    data, etag = self.get(TIMES_KEY)
                except NotFound:
                    data, etag = None, None
                self._times, self._times_etag, self._times_seq = parse(data), etag, seq
            return self._times, self._times_seq

    def _note_edited(self, key: str, sha: str, edited: float | None) -> None:
        """Before `key` is written with content of hash `sha`: a write later than PROMPT after
        its edit puts its edit time in the record; a prompt write of content the record has
        an entry for (seen here) takes that entry out, since the write's own time is the
        edit's. The writes in flight together go in one conditional write of the record; a
        failure to write it fails this write (nothing half-done: the memory is not sent)."""
        if key.startswith(OWN):
            return
        late = edited is not None and time.time() - edited > PROMPT
        if not late:
            with self._times_lock:
                known = self._times
            if known is None or edited_at(known, key, sha) is None:
                return
        with self._lock:
            self._pending.append((key, sha, edited if late else None))
        with self._times_lock:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return  # written with another thread's batch
            try:
                self._write_times(batch)
            except BaseException:
                with self._lock:
                    self._pending[:0] = batch
                raise

    def _write_times(self, batch: builtins.list[tuple[str, str, float | None]]) -> None:
        """The record with `batch` in it, by a conditional write (read again after a lost
        race); the caller holds `_times_lock`."""
        for _ in range(MAX_ATTEMPTS):
            if self._times is None:
                try:
                    data, self._times_etag = self.get(TIMES_KEY)
                except NotFound:
                    data, self._times_etag = None, None
                self._times = parse(data)
            with self._lock:
                live = set(self._seen) if self._listed else set(self._times)
            new = changed(self._times, batch, live, MAX_CONTENT)
            if new == self._times:
                return
            try:
                if self._times_etag is None:
                    etag = self.create(TIMES_KEY, dump(new))
                else:
                    etag = self.replace(TIMES_KEY, dump(new), self._times_etag)
            except (PreconditionFailed, NotFound):  # AlreadyExists is one
                self._times = None
                continue
            self._times, self._times_etag, self._times_seq = new, etag, next(self._seq)
            return
        raise Unreachable(
            f"the memory store {self.store_id}'s edit-time record {TIMES_KEY} kept changing; "
            "the work is queued"
        )

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        text = self._check(key, data)
        path = self._path(key)
        self._note_edited(key, hashlib.sha256(data).hexdigest(), edited)
        self.stats.count("put", up=len(data))
        try:
            item = self._call(
                "a create",
                key,
                True,
                lambda m, **k: m.memories.create(self.store_id, path=path, content=text, **k),
            )
        except AlreadyExists as exc:
            raise self._overlap(key, exc) from None
        with self._lock:
            self._ids[key] = item.id
        return str(item.content_sha256)

    def _overlap(self, key: str, exc: AlreadyExists) -> Exception:
        """A create's path conflict: the key itself taken (lost a race), or a file and a folder
        of one name, which the store cannot hold."""
        self._forget_id(key)
        try:
            self._find(key)
        except NotFound:
            return Unholdable(
                key,
                "not sent to the memory store: the memory store already holds a folder or a "
                "file of this name, and cannot hold both",
            )
        return exc

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        text = self._check(key, data)
        path = self._path(key)
        try:
            memory_id = self._find(key)
        except NotFound:
            raise PreconditionFailed(f"{key} is gone from the remote") from None
        self._note_edited(key, hashlib.sha256(data).hexdigest(), edited)
        self.stats.count("put", up=len(data))
        precondition = {"type": "content_sha256", "content_sha256": etag}
        try:
            item = self._call(
                "an update",
                key,
                True,
                lambda m, **k: m.memories.update(
                    memory_id,
                    memory_store_id=self.store_id,
                    content=text,
                    precondition=precondition,
                    **k,
                ),
            )
        except NotFound:
            self._forget_id(key)
            raise PreconditionFailed(f"{key} is gone from the remote") from None
        if item.path != path:
            self._forget_id(key)
            raise StoreError(
                f"{key} was renamed to {item.path} in the memory store by another client while "
                "memsync wrote it; run `memsync sync` to see both"
            )
        return str(item.content_sha256)

    def delete(self, key: str, etag: str) -> None:
        """Delete on the hash. A remembered id that is gone (the memory was deleted, perhaps
        made again by another client) is looked up once more: a memory at `key` under a new id
        is deleted only if its hash is `etag` too."""
        memory_id = self._find(key)
        for _ in range(2):
            self.stats.count("delete")
            try:
                self._call(
                    "a delete",
                    key,
                    True,
                    lambda m, mid=memory_id, **k: m.memories.delete(
                        mid, memory_store_id=self.store_id, expected_content_sha256=etag, **k
                    ),
                )
                break
            except NotFound:
                self._forget_id(key)
                fresh = self._find(key)  # NotFound: gone indeed
                if fresh == memory_id:
                    raise
                memory_id = fresh
        else:
            raise NotFound(f"{key} is not on the remote")
        with self._lock:
            self._gone[key] = memory_id
            self._ids.pop(key, None)

    def exists(self) -> bool:
        self.stats.count("get")
        try:
            self._call("a look-up", None, False, lambda m, **k: m.retrieve(self.store_id, **k))
        except NotFound:
            return False
        return True

    def ensure(self) -> None:
        if not self.exists():
            raise ConfigError(self._missing())

    def _missing(self) -> str:
        return (
            f"the memory store {self.store_id} does not exist for this API key; "
            f"{self.create_advice()}"
        )

    def can_create(self) -> bool:
        return False

    def create_advice(self) -> str:
        return (
            "create it in the Claude Console (or with client.beta.memory_stores.create) and "
            "use its memstore_… id in the remote URL"
        )

    # --- versions ----------------------------------------------------------------------

    def versions(self, key: str) -> builtins.list[RemoteVersion] | None:
        """The store's versions of the memory now at `key` (or deleted there by this store),
        newest first."""
        return [
            RemoteVersion(
                v.id,
                v.operation,
                _seconds(v.created_at),
                v.content_sha256,
                v.content_size_bytes,
                v.redacted_at is not None,
            )
            for v in self._versions_where(False, memory_id=self._id_of(key))
        ]

    def _id_of(self, key: str) -> str:
        """The id of the memory at `key`, or of the newest one deleted there (its versions
        stay on the store: `history` shows them, `forget` redacts them)."""
        with self._lock:
            gone = self._gone.get(key)
        try:
            return self._find(key)
        except NotFound:
            if gone is not None:
                return gone
            path = self.root + key
            for v in self._versions_where(False, operation="deleted"):  # newest first
                if v.path == path:
                    return v.memory_id
            raise

    def erase_history(self, key: str, holds: Callable[[bytes], bool] | None = None) -> int:
        """`redact` each earlier version of the memory at `key` (or deleted there) whose
        content `holds` (every one when `holds` is None): the service erases its content,
        path, size and hash and keeps the record (when, by whom). The current version stays:
        it holds what the forget left."""
        try:
            memory_id = self._id_of(key)
        except NotFound:
            return 0
        current = self._current_version(memory_id)
        erased = 0
        for v in list(self._versions_where(holds is not None, memory_id=memory_id)):
            if v.id == current or v.redacted_at is not None or v.operation == "deleted":
                continue
            if holds is not None and (v.content is None or not holds(v.content.encode())):
                continue
            erased += self._redact(v.id, key)
        return erased

    def erase_deleted(self, holds: Callable[[str, bytes], bool]) -> int:
        """`redact` the versions of the memories deleted from under this project's folder
        (found by their `deleted` versions, a request a 100) whose content `holds`, each
        asked under the key its version was written at."""
        gone = {
            v.memory_id
            for v in self._versions_where(False, operation="deleted")
            if v.operation == "deleted" and v.path is not None and v.path.startswith(self.root)
        }
        erased = 0
        for memory_id in sorted(gone):
            for v in list(self._versions_where(True, memory_id=memory_id)):
                if v.content is None or v.path is None or not v.path.startswith(self.root):
                    continue  # a deletion, or redacted already
                if holds(v.path[len(self.root) :], v.content.encode()):
                    erased += self._redact(v.id, v.path[len(self.root) :])
        return erased

    def _redact(self, version_id: str, key: str) -> int:
        """Redact one version: 1, or 0 when it is gone (past the retention period)."""
        self.stats.count("erase")
        try:
            self._call(
                "a redaction",
                key,
                True,
                lambda m, **k: m.memory_versions.redact(
                    version_id, memory_store_id=self.store_id, **k
                ),
            )
        except NotFound:
            return 0
        return 1

    def _current_version(self, memory_id: str) -> str | None:
        """The version holding the memory's content now; None once it is deleted."""
        self.stats.count("get")
        try:
            item = self._call(
                "a read",
                None,
                False,
                lambda m, **k: m.memories.retrieve(
                    memory_id, memory_store_id=self.store_id, view="basic", **k
                ),
            )
        except NotFound:
            return None
        return str(item.memory_version_id)

    def _versions_where(self, full: bool, **filters: str) -> Iterator[Any]:
        """The versions `filters` (`memory_id`, `operation`) select, newest first, a page a
        request (20 with their content, else 100)."""
        kw: dict[str, Any] = {
            **filters,
            "limit": 20 if full else PAGE,
            "view": "full" if full else "basic",
        }
        while True:
            self.stats.count("list")
            page = self._call(
                "a version listing",
                None,
                False,
                lambda m, **k: m.memory_versions.list(self.store_id, **k),
                **kw,
            )
            yield from page.data
            if not page.has_next_page():
                return
            kw["page"] = page.next_page

    def close(self) -> None:
        with self._lock:
            client, self._client_made = self._client_made, None
        if client is not None:
            client.close()


def _seconds(when: datetime | None) -> float:
    return when.timestamp() if when is not None else 0.0
