"""Whether an S3 service honours the conditions memsync's writes carry, checked before trusting it.

Every write memsync makes is conditional on the server (`If-None-Match: *` to create,
`If-Match: <etag>` to replace or delete); that is what keeps two devices from overwriting each
other. A service that ignores those headers answers 200 all the same, so the S3 store checks the
service once per device and per endpoint and bucket, before the first listing or write: under
the project's `_memsync/` it creates probe objects, then sends a create-only PUT of one again and
a PUT with an ETag it cannot have, both of which must be refused (412, or 409
ConditionalRequestConflict), a PUT with the ETag it has, which must be taken, and a DELETE with
the wrong ETag. The probe objects are deleted afterwards, whatever the answers were.

- A service that accepts either PUT is refused: one sentence, exit 1, nothing synced (the check
  runs before the listing, so nothing lands locally either).
- A service that refuses `If-Match` with the ETag it gave, as HTTP writes it (in quotes), and
  takes it without the quotes (Ceph's radosgw 16 compares the bare digest) is sent the bare
  form in every `If-Match`; one that takes neither is refused like one that ignores them.
- A service that ignores `If-Match` on DeleteObject (MinIO does, by its issue tracker) is
  used, and each delete first reads the object's ETag (a HEAD) and deletes only if it is still
  the one memsync saw: a replace landing in the round trip between the two can still be
  deleted.
- A verdict that lets the service in is kept in `MEMSYNC_HOME/s3-services.json`, keyed by
  endpoint, bucket and proxy, so later runs and hooks send nothing for it (`memsync doctor`
  checks again, for a service replaced at the same address); a refusal is not kept (the
  next run checks again, after the service is upgraded). A probe that cannot tell (no bucket
  yet, a credential that may not write) decides nothing and runs again before the first write.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from memsync.stores.blobhttp import md5_base64, quote_etag
from memsync.stores.crypt_keys import memsync_home
from memsync.util import background
from memsync.util.errors import (
    AuthError,
    ConfigError,
    NotFound,
    PreconditionFailed,
    StoreError,
    Unreachable,
)
from memsync.util.fsutil import atomic_write, private_dir, read_if_there

if TYPE_CHECKING:
    from pathlib import Path

    from memsync.stores.s3 import S3Store

STATE_FILE = "s3-services.json"
PROBE_PREFIX = "_memsync/probe-"  # the check's objects, under the project's prefix
PROBE_BODY = b"memsync checks that this service honours conditional writes; delete me\n"
T = TypeVar("T")
WRONG_ETAG = '"00000000000000000000000000000000"'  # the MD5 of no body memsync sends


class Verdict(NamedTuple):
    """What a service honours, once it is let in (it always honours the PUT conditions)."""

    deletes: bool  # If-Match on DeleteObject
    bare: bool = False  # If-Match matches the ETag without its quotes only

    def if_match(self, etag: str) -> str:
        """The `If-Match` value this service matches against `etag`."""
        return quote_etag(etag).strip('"') if self.bare else quote_etag(etag)


def _state_path() -> Path:
    return memsync_home() / STATE_FILE


def service_id(store: S3Store) -> str:
    """The endpoint, bucket and proxy a verdict holds for (a proxy can change the headers)."""
    proxy = store.http.proxy
    through = f" via {proxy.host}:{proxy.port}" if proxy else ""
    return f"{store.where}/{store.s3_url.bucket}{through}"


def _load() -> dict[str, dict[str, object]]:
    data = read_if_there(_state_path())
    if not data:
        return {}
    try:
        doc = json.loads(data)
    except ValueError:
        return {}  # a damaged cache only costs one probe
    services = doc.get("services") if isinstance(doc, dict) else None
    return services if isinstance(services, dict) else {}


def cached(store: S3Store) -> Verdict | None:
    entry = _load().get(service_id(store))
    if not isinstance(entry, dict) or entry.get("puts") is not True or "bare" not in entry:
        return None
    return Verdict(deletes=entry.get("deletes") is True, bare=entry.get("bare") is True)


def _remember(store: S3Store, verdict: Verdict) -> None:
    services = _load()
    services[service_id(store)] = {
        "puts": True,
        "deletes": verdict.deletes,
        "bare": verdict.bare,
        "checked": round(time.time()),
    }
    path = _state_path()
    try:
        private_dir(path.parent)
        doc = {"version": 1, "services": services}
        atomic_write(path, json.dumps(doc, indent=1, sort_keys=True).encode(), sync=False)
    except OSError:
        pass  # not kept: the next run checks again


def refusal(store: S3Store, ignored: list[str]) -> str:
    headers = " and ".join(ignored)
    return (
        f"the S3 service at {store.where} (bucket {store.s3_url.bucket!r}) ignores conditional "
        f"writes ({headers} on PutObject), so two devices could overwrite each other; memsync "
        "needs a service that honours them (AWS S3, Cloudflare R2, a current MinIO): "
        "nothing was synced"
    )


def replace_refusal(store: S3Store) -> str:
    return (
        f"the S3 service at {store.where} (bucket {store.s3_url.bucket!r}) refuses a PutObject "
        "conditional on the object's own ETag (If-Match), so memsync could never update a file "
        "there; use a service that honours conditional writes (AWS S3, Cloudflare R2, a "
        "current MinIO): nothing was synced"
    )


def _put(store: S3Store, key: str, condition: dict[str, str]) -> str:
    headers = {
        "Content-Type": "text/plain; charset=utf-8",
        "Content-MD5": md5_base64(PROBE_BODY),
        **condition,
    }
    response = store._request("check", "PUT", key, headers=headers, body=PROBE_BODY)
    return store.etag_of(response)


def _refused(store: S3Store, key: str, condition: dict[str, str]) -> bool:
    """Whether the service refuses this conditional PUT of the existing probe."""
    try:
        _put(store, key, condition)
    except PreconditionFailed:
        return True
    except (AuthError, Unreachable):
        raise
    except StoreError:  # e.g. 501 NotImplemented: the condition is not honoured either
        return False
    return False


def _taken(store: S3Store, key: str, etag: str) -> bool:
    """Whether the service takes a PUT of the probe conditional on the ETag it has."""
    try:
        _put(store, key, {"If-Match": etag})
    except PreconditionFailed:
        return False
    return True


def _delete_refused(store: S3Store, key: str) -> bool:
    """Whether the service refuses a DELETE of the existing probe with a wrong If-Match."""
    try:
        store._request("check", "DELETE", key, headers={"If-Match": WRONG_ETAG})
    except PreconditionFailed:
        return True
    except (AuthError, Unreachable):
        raise
    except StoreError:  # 501: the service does not take the condition on a delete
        return False
    return False


def _together(*calls: Callable[[], T]) -> list[T | BaseException]:
    """Run `calls` at once (one round trip for all): each one's result or its exception."""
    if not calls:
        return []
    results: list[T | BaseException] = [RuntimeError("not run")] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # handed to the caller
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(1, len(calls))]
    for thread in threads:
        thread.start()
    run(0)
    for thread in threads:
        thread.join()
    return results


def probe(store: S3Store) -> Verdict | None:
    """Check the service (requests as the store's, against its deadline) in two round trips
    over three probe objects: create them; then at once, a create-only PUT, a stale If-Match
    PUT and a current If-Match PUT of the first, a stale If-Match DELETE of the second and a
    PUT of the third with its current ETag bare. The objects left are deleted after the
    verdict, beside the command's own requests. A Verdict when the service
    honours the PUT conditions, None when it cannot tell; ConfigError when it ignores them or
    takes the current ETag in neither form."""
    stem = f"{PROBE_PREFIX}{uuid.uuid4().hex[:12]}"
    keys = puts, dels, bare = f"{stem}-put", f"{stem}-delete", f"{stem}-bare"
    created = _together(*(partial(_put, store, key, {"If-None-Match": "*"}) for key in keys))
    left = [key for key, result in zip(keys, created, strict=True) if isinstance(result, str)]
    try:
        for result in created:
            if isinstance(result, (NotFound, AuthError, PreconditionFailed)):
                return None  # no bucket yet, no right to write (the write says so), a clash
            if isinstance(result, BaseException):
                raise result
        etag = str(created[0])
        checks = _together(
            lambda: _refused(store, puts, {"If-None-Match": "*"}),
            lambda: _refused(store, puts, {"If-Match": WRONG_ETAG}),
            lambda: _delete_refused(store, dels),
            lambda: _taken(store, puts, etag),
            lambda: _taken(store, bare, etag.strip('"')),
        )
        for answer in checks:
            if isinstance(answer, BaseException):
                raise answer
        ignored = [
            name
            for name, honoured in zip(("If-None-Match: *", "If-Match"), checks[:2], strict=True)
            if honoured is False
        ]
        if ignored:
            raise ConfigError(refusal(store, ignored))
        if checks[3] is False and checks[4] is False:
            raise ConfigError(replace_refusal(store))
        verdict = Verdict(deletes=checks[2] is True, bare=checks[3] is False)
    finally:  # nothing waits for the removals (memsync.util.background)
        background.start(partial(_together, *(partial(_remove, store, key) for key in left)))
    _remember(store, verdict)
    return verdict


def _remove(store: S3Store, key: str) -> None:
    """Delete a probe object (S3 answers 204 also when the stale-ETag delete took it already);
    a failure is ignored with the rest: a probe left behind is ignored by every sync."""
    store._request("check", "DELETE", key)


def check(store: S3Store) -> Verdict | None:
    """The service's verdict: kept from an earlier run (no request), else probed now."""
    return cached(store) or probe(store)


def beside(store: S3Store) -> Callable[[], Verdict | None]:
    """`check` started beside another request (the listing): the call returned waits for it,
    giving its verdict or raising its refusal. A kept verdict starts nothing."""
    known = cached(store)
    if known is not None:
        return lambda: known
    answer: list[Verdict | None | BaseException] = []

    def run() -> None:
        try:
            answer.append(probe(store))
        except BaseException as exc:  # raised by the waiter, in the caller's thread
            answer.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def wait() -> Verdict | None:
        thread.join()
        if isinstance(answer[0], BaseException):
            raise answer[0]
        return answer[0]

    return wait


def unchanged(store: S3Store, key: str, etag: str) -> None:
    """For a service that ignores If-Match on DeleteObject: PreconditionFailed unless `key`
    still has `etag` (NotFound if it is gone)."""
    response = store._request("head", "HEAD", key)
    if quote_etag(response.headers.get("ETag")) != quote_etag(etag):
        raise PreconditionFailed(f"{key} changed on the remote")
