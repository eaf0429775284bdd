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
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import ContainerClient, ContentSettings, LinearRetry

from memsync.errors import (
    AlreadyExists,
    AuthError,
    NotFound,
    PreconditionFailed,
    StoreError,
    Unreachable,
)
from memsync.stores.azure import (
    EDITED_METADATA,
    MARKDOWN,
    AzureStore,
    ca_bundle,
    parse_edited,
    proxy_configured,
    quote_etag,
)
from memsync.stores.httpdate import parse_date


def client_options() -> dict[str, Any]:
    """Bounded retries, as the lean client's: transient errors are retried, an outage is
    reported within seconds so the engine can queue the work (a hook has seconds, not minutes;
    the SDK's default, exponential from 15 s, would hold a refused connection for half a
    minute)."""
    options: dict[str, Any] = {
        "retry_policy": LinearRetry(backoff=0.5, random_jitter_range=0.25, retry_total=3),
        "connection_timeout": 5,
        "read_timeout": 30,
    }
    # requests re-reads proxy settings from the environment on every request, a sixth of a
    # download's CPU: let it only when there are proxy settings, and pass the CA bundle along
    if not proxy_configured():
        options["use_env_settings"] = False
        bundle = ca_bundle()
        if bundle:
            options["connection_verify"] = bundle
    return options


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
        container_url = self.blob_url.container_url
        if self.blob_url.sas:
            container_url += "?" + self.blob_url.sas
        self.client = ContainerClient.from_container_url(
            container_url,
            credential=self.credential.for_sdk(),
            raw_request_hook=lambda request: self.stats.count(_kind(request)),
            **client_options(),
        )

    @contextmanager
    def _translate(self, key: str | None = None) -> Iterator[None]:
        """Azure's exceptions in, memsync's out."""
        what = key or f"container {self.blob_url.container!r}"
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
            raise AuthError(
                f"the {self.credential_kind} was refused by {self.blob_url.account_url}; "
                "check the key, token or role assignment"
            ) from exc
        except (ServiceRequestError, ServiceResponseError) as exc:
            raise Unreachable(f"cannot reach {self.blob_url.account_url}") from exc
        except HttpResponseError as exc:
            status = exc.status_code
            if status == 412:
                raise PreconditionFailed(f"{what} changed on the remote") from exc
            if status in (401, 403):
                raise AuthError(
                    f"the {self.credential_kind} is not allowed to do this on "
                    f"{self.blob_url.account_url} ({exc.error_code or status})"
                ) from exc
            if status is not None and (status >= 500 or status in (408, 429)):
                raise Unreachable(
                    f"{self.blob_url.account_url} answered {status}; try again later"
                ) from exc
            raise StoreError(f"the remote refused the request for {what}: {exc.reason}") from exc
        except Exception as exc:
            # azure-identity raises its own CredentialUnavailableError, outside azure.core
            if type(exc).__name__ == "CredentialUnavailableError":
                raise AuthError(
                    "no Azure credential found: set AZURE_STORAGE_CONNECTION_STRING, "
                    "AZURE_STORAGE_KEY, put a SAS token in the URL, or `az login`"
                ) from exc
            raise

    def list(self) -> dict[str, Any]:
        from memsync.stores.base import Entry

        entries: dict[str, Entry] = {}
        with self._translate():
            for blob in self.client.list_blobs(name_starts_with=self.base or None):
                key = blob.name[len(self.base) :]
                modified = blob.last_modified.timestamp() if blob.last_modified else 0.0
                entries[key] = Entry(key, quote_etag(blob.etag), blob.size or 0, modified)
        return entries

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        with self._translate(key):
            downloader = self.client.download_blob(self._name(key), max_concurrency=1)
            data = downloader.readall()
        self.stats.bytes_down += len(data)
        metadata = downloader.properties.metadata or {}
        edited = parse_edited(metadata.get(EDITED_METADATA))
        return data, quote_etag(downloader.properties.etag), edited

    def _put(
        self, key: str, data: bytes, condition: dict[str, str], edited: float | None = None
    ) -> str:
        kwargs: dict[str, Any] = {"overwrite": False}
        if "If-Match" in condition:
            kwargs = {"etag": condition["If-Match"]}
            kwargs["match_condition"] = MatchConditions.IfNotModified
        if edited is not None:
            kwargs["metadata"] = {EDITED_METADATA: repr(float(edited))}
        with self._translate(key):
            result = self.client.get_blob_client(self._name(key)).upload_blob(
                data,
                length=len(data),
                max_concurrency=1,
                content_settings=ContentSettings(content_type=MARKDOWN),
                **kwargs,
            )
        self.stats.bytes_up += len(data)
        return quote_etag(result["etag"])

    def delete(self, key: str, etag: str) -> None:
        blob = self.client.get_blob_client(self._name(key))
        try:
            with self._translate(key):
                blob.delete_blob(etag=etag, match_condition=MatchConditions.IfNotModified)
        except PreconditionFailed:
            # Azure answers 412, not 404, when the blob is gone: tell the two apart
            with self._translate(key):
                if not blob.exists():
                    raise NotFound(f"{key} is not on the remote") from None
            raise

    def exists(self) -> bool:
        with self._translate():
            return self.client.exists()

    def ensure(self) -> None:
        with self._translate(), suppress(ResourceExistsError):
            self.client.create_container()

    def server_time(self) -> float | None:
        seen: list[str] = []
        with self._translate():
            self.client.exists(
                raw_response_hook=lambda r: seen.append(r.http_response.headers.get("Date", ""))
            )
        return parse_date(seen[-1]) if seen and seen[-1] else None

    def close(self) -> None:
        self.client.close()
        close = getattr(self.credential.token, "close", None)
        if close:
            close()
