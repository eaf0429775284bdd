"""The Azure store through azure-storage-blob, for what the lean REST client does not do:
token credentials (DefaultAzureCredential: `az login`, managed identity, workload identity)
and proxies (requests honours HTTP(S)_PROXY and NO_PROXY). The only module that imports the
SDK; imported only when such a remote is opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    DecodeError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import BlobPrefix, ContainerClient, ContentSettings, LinearRetry
from azure.storage.blob._shared.authentication import AzureSigningError
from azure.storage.blob._shared.policies import is_retry

from memsync.stores import tls
from memsync.stores.azure import (
    EDITED_METADATA,
    GET_ATTEMPTS,
    MARKDOWN,
    AzureStore,
    parse_edited,
    proxy_configured,
    quote_etag,
)
from memsync.stores.blobhttp import MAX_RETRY_AFTER, retry_after
from memsync.stores.httpdate import parse_date
from memsync.util.errors import (
    AlreadyExists,
    AuthError,
    NotFound,
    PreconditionFailed,
    StoreError,
    Unreachable,
)


class _Retry(LinearRetry):
    """The SDK's linear retry, plus what the lean client also retries: 429, and a wait as long
    as a `Retry-After` (up to MAX_RETRY_AFTER; longer is an outage, reported at once)."""

    deadline: float | None = None  # the command's (time.monotonic()): no retry past it

    def _in_time(self, settings: dict[str, Any], wait: float = 0.0) -> bool:
        if self.deadline is None:
            return True
        import time

        return time.monotonic() + max(wait, self.get_backoff_time(settings)) < self.deadline

    def send(self, request: Any) -> Any:
        settings = self.configure_retries(request)
        while True:
            try:
                response = self.next.send(request)
            except AzureError as err:
                if (
                    isinstance(err, AzureSigningError)
                    or not self._in_time(settings)
                    or not self.increment(settings, request=request.http_request, error=err)
                ):
                    raise
                self.sleep(settings, request.context.transport)
                continue
            status = response.http_response.status_code
            response.http_response.location_mode = settings["mode"]
            if not (is_retry(response, settings["mode"]) or status == 429):
                return response
            wait = retry_after(response.http_response.headers.get("Retry-After"))
            if (
                (wait is not None and wait > MAX_RETRY_AFTER)
                or not self._in_time(settings, wait or 0.0)
                or not self.increment(
                    settings, request=request.http_request, response=response.http_response
                )
            ):
                return response
            pause = max(self.get_backoff_time(settings), wait or 0.0)
            request.context.transport.sleep(pause)


def _error_code(exc: Exception) -> str:
    """The storage error code the SDK sets on its errors at run time ("" when it did not)."""
    return str(getattr(exc, "error_code", None) or "")


def client_options() -> dict[str, Any]:
    """Bounded retries, as the lean client's: transient errors are retried, an outage is
    reported within seconds so the engine can queue the work (a hook has seconds, not minutes;
    the SDK's default, exponential from 15 s, would hold a refused connection for half a
    minute)."""
    options: dict[str, Any] = {
        "retry_policy": _Retry(backoff=0.5, random_jitter_range=0.25, retry_total=3),  # type: ignore[arg-type]
        "connection_timeout": 5,
        "read_timeout": 30,
    }
    # requests re-reads proxy settings from the environment on every request, a sixth of a
    # download's CPU: let it only when there are proxy settings
    if not proxy_configured():
        options["use_env_settings"] = False
    # the system's CA store or the configured bundle, as the lean client, not certifi's copy
    options["connection_verify"] = tls.sdk_verify()
    return options


def _count(stats: Any, request: Any) -> None:
    """Count one attempt (retries included) and the bytes it sends."""
    body = request.http_request.body
    stats.count(_kind(request), up=len(body) if isinstance(body, (bytes, bytearray)) else 0)


def _kind(request: Any) -> str:
    """The kind of one HTTP request, for exact request counts."""
    method = request.http_request.method
    query = getattr(request.http_request, "query", {})
    if method == "GET" and query.get("comp") == "list":
        return "list"
    return {"GET": "get", "PUT": "put", "DELETE": "delete", "HEAD": "head"}.get(method, method)


class AzureSDKStore(AzureStore):
    """The same store, every operation through the SDK's ContainerClient."""

    def _open(self) -> None:
        self._deadline: float | None = None
        options = client_options()
        self._retry = options["retry_policy"]
        container_url = self.blob_url.container_url
        if self.blob_url.sas:
            container_url += "?" + self.blob_url.sas
        self.client = ContainerClient.from_container_url(
            container_url,
            credential=self.credential.for_sdk(),
            raw_request_hook=lambda request: _count(self.stats, request),
            **options,
        )

    @property
    def deadline(self) -> float | None:
        return self._deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._deadline = self._retry.deadline = value

    def _timeout(self) -> dict[str, Any]:
        """The SDK's per-operation `timeout` (the service's, in whole seconds) for what is left
        of the command's deadline; the transfer itself is bounded by the read timeout."""
        if self._deadline is None:
            return {}
        import time

        left = self._deadline - time.monotonic()
        if left <= 0:
            raise Unreachable(f"{self.blob_url.account_url} did not answer in time")
        # the server's own time limit, and requests' per-read limit within what is left: a
        # third of it, as the SDK's downloader reads a body up to three times on its own
        return {"timeout": max(1, int(left)), "read_timeout": min(30.0, max(0.2, left / 3))}

    def _refuse_untrusted(self, exc: BaseException) -> None:
        reason = tls.untrusted(exc)
        if reason:
            raise tls.untrusted_error(self.blob_url.account_url, reason) from None

    @contextmanager
    def _translate(self, key: str | None = None, write: bool = False) -> Iterator[None]:
        """Azure's exceptions in, memsync's out."""
        what = key or f"container {self.blob_url.container!r}"
        if write and self._denied:
            raise AuthError(self._denied)
        try:
            yield
        except ResourceModifiedError as exc:
            raise PreconditionFailed(f"{what} changed on the remote") from exc
        except ResourceExistsError as exc:
            if getattr(exc, "status_code", None) == 412:
                raise PreconditionFailed(f"{what} changed on the remote") from exc
            raise AlreadyExists(f"{what} already exists on the remote") from exc
        except ResourceNotFoundError as exc:
            code = getattr(exc, "error_code", None) or ""
            if "container" in str(code).lower():
                raise NotFound(
                    f"the container {self.blob_url.container!r} does not exist at {self.url}"
                ) from exc
            raise NotFound(f"{what} is not on the remote") from exc
        except ClientAuthenticationError as exc:
            self._refuse_untrusted(exc)
            raise AuthError(
                self._auth_message(_error_code(exc), exc.status_code or 401, write)
            ) from exc
        except (ServiceRequestError, ServiceResponseError) as exc:
            self._refuse_untrusted(exc)
            raise Unreachable(f"cannot reach {self.blob_url.account_url}") from exc
        except DecodeError:
            raise  # a listing cut short: list() asks again
        except HttpResponseError as exc:
            status = exc.status_code
            if status is None:  # no answer at all: the body stopped or timed out on the way
                self._refuse_untrusted(exc)
                raise Unreachable(f"cannot reach {self.blob_url.account_url} ({exc})") from exc
            if status == 412:
                raise PreconditionFailed(f"{what} changed on the remote") from exc
            if status in (401, 403):
                message = self._auth_message(_error_code(exc), status, write)
                if write:
                    self._denied = message
                raise AuthError(message) from exc
            if status is not None and (status >= 500 or status in (408, 429)):
                raise Unreachable(
                    f"{self.blob_url.account_url} answered {status}; try again later"
                ) from exc
            raise StoreError(f"the remote refused the request for {what}: {exc.reason}") from exc

    def list(self) -> dict[str, Any]:
        """Every key; a listing cut short on the way (not whole XML) is asked for again."""
        from memsync.stores.base import Entry

        for attempt in range(GET_ATTEMPTS):
            entries: dict[str, Entry] = {}
            try:
                with self._translate():
                    for blob in self.client.list_blobs(
                        name_starts_with=self.base or None, **self._timeout()
                    ):
                        key = blob.name[len(self.base) :]
                        modified = blob.last_modified.timestamp() if blob.last_modified else 0.0
                        entries[key] = Entry(key, quote_etag(blob.etag), blob.size or 0, modified)
            except DecodeError:
                if attempt == GET_ATTEMPTS - 1:
                    raise Unreachable(
                        f"{self.blob_url.account_url} sent a listing cut short "
                        f"{GET_ATTEMPTS} times; try again later"
                    ) from None
                continue
            self._listed = entries
            return entries
        raise AssertionError("unreachable")

    def projects(self) -> tuple[str, ...] | None:
        root = self._projects_root
        names: list[str] = []
        with self._translate():
            for item in self.client.walk_blobs(
                name_starts_with=root or None, delimiter="/", **self._timeout()
            ):
                name = item.name or ""
                if isinstance(item, BlobPrefix) and name.startswith(root):
                    names.append(name[len(root) :].rstrip("/"))
        return tuple(sorted(names))

    def _fetch(self, key: str) -> tuple[bytes, str, str | None, float | None]:
        import base64

        with self._translate(key):
            downloader, data = self._download_in_time(key)
        self.stats.moved(down=len(data))  # the request was counted when it was sent
        md5 = downloader.properties.content_settings.content_md5
        metadata = downloader.properties.metadata or {}
        return (
            data,
            quote_etag(downloader.properties.etag),
            base64.b64encode(bytes(md5)).decode() if md5 else None,
            parse_edited(metadata.get(EDITED_METADATA)),
        )

    def _download_in_time(self, key: str) -> tuple[Any, bytes]:
        """download_blob + readall, bounded by the command's deadline as a whole. The SDK's
        timeouts bound each socket read, so a server trickling a few bytes a second keeps a
        download going for minutes; past the deadline the transfer is abandoned on a daemon
        thread (its bytes are never used) and the fetch is Unreachable."""

        def download() -> tuple[Any, bytes]:
            downloader = self.client.download_blob(
                self._name(key), max_concurrency=1, **self._timeout()
            )
            return downloader, downloader.readall()

        if self._deadline is None:
            return download()
        import threading
        import time

        outcome: list[tuple[Any, bytes]] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(download())
            except BaseException as exc:  # handed to the caller's thread below
                failure.append(exc)

        worker = threading.Thread(target=run, name=f"memsync-get-{key}", daemon=True)
        worker.start()
        worker.join(max(0.0, self._deadline - time.monotonic()))
        if failure:
            raise failure[0]
        if not outcome:
            raise Unreachable(
                f"{self.blob_url.account_url} did not send {key} in time; try again later"
            )
        return outcome[0]

    def _put(
        self, key: str, data: bytes, condition: dict[str, str], edited: float | None = None
    ) -> str:
        kwargs: dict[str, Any] = {"overwrite": False}
        if "If-Match" in condition:
            kwargs = {"etag": condition["If-Match"]}
            kwargs["match_condition"] = MatchConditions.IfNotModified
        if edited is not None:
            kwargs["metadata"] = {EDITED_METADATA: repr(float(edited))}
        with self._translate(key, write=True), self._gate():
            result = self.client.get_blob_client(self._name(key)).upload_blob(
                data,
                length=len(data),
                max_concurrency=1,
                content_settings=ContentSettings(content_type=MARKDOWN),
                validate_content=True,  # sends Content-MD5: the service refuses damaged bytes
                **kwargs,
                **self._timeout(),
            )
        return quote_etag(result["etag"])

    def delete(self, key: str, etag: str) -> None:
        blob = self.client.get_blob_client(self._name(key))
        try:
            with self._translate(key, write=True), self._gate():
                blob.delete_blob(
                    etag=etag, match_condition=MatchConditions.IfNotModified, **self._timeout()
                )
        except PreconditionFailed:
            # Azure answers 412, not 404, when the blob is gone: tell the two apart
            with self._translate(key):
                if not blob.exists():
                    raise NotFound(f"{key} is not on the remote") from None
            raise

    def _probe(self, **kwargs: Any) -> bool:
        """Whether the container exists, by Get Container Properties or under a SAS (which a
        container SAS cannot authorize for it) by listing one name under the prefix."""
        if not self._sas:
            return self.client.exists(**kwargs)
        try:
            pages = self.client.list_blobs(
                name_starts_with=self.base or None, results_per_page=1, **kwargs
            ).by_page()
            next(pages, None)
        except ResourceNotFoundError:
            return False
        return True

    def exists(self) -> bool:
        with self._translate():
            return self._probe()

    def ensure(self) -> None:
        if self._sas and self.exists():
            return  # a container SAS may not create containers, and need not
        try:
            with self._translate(), suppress(ResourceExistsError):
                self.client.create_container()
        except AuthError:
            if not self._sas:
                raise
            raise AuthError(self._cannot_create()) from None

    def server_time(self) -> float | None:
        seen: list[str] = []
        with self._translate():
            self._probe(
                raw_response_hook=lambda r: seen.append(r.http_response.headers.get("Date", ""))
            )
        return parse_date(seen[-1]) if seen and seen[-1] else None

    @property
    def round_trip(self) -> float | None:
        return None  # requests keeps its own pool (of 10): no latency-aware widening here

    def warm(self, count: int) -> None:
        pass

    def close(self) -> None:
        self.client.close()
        close = getattr(self.credential.token, "close", None)
        if close:
            close()
