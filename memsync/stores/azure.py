"""The Azure Blob Storage remote.

Every write is conditional on the server (`If-None-Match: *` to create, `If-Match: <etag>` to
replace or delete), and every failure is translated here into memsync's own error types: a 412
reaches the engine as the same PreconditionFailed the folder store raises, so the
merge-and-retry path is shared.

With an account key or a SAS token (the usual case, and Azurite's) requests go out through
memsync's lean REST client (memsync.stores.blobhttp): no `azure.*` import at all. With a token
credential (DefaultAzureCredential) or proxy settings, `AzureSDKStore` sends the same
operations through azure-storage-blob.
"""

from __future__ import annotations

import ipaddress
import os
import re
from urllib.parse import parse_qs, urlsplit, urlunsplit

from memsync.errors import (
    AlreadyExists,
    AuthError,
    ConfigError,
    NotFound,
    PreconditionFailed,
    StoreError,
    Unreachable,
)
from memsync.lean_typing import TYPE_CHECKING, NamedTuple
from memsync.stores.base import Entry, Stats, check_key
from memsync.stores.httpdate import parse_date

if TYPE_CHECKING:
    from typing import Any

_PROXY_ENV = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
MARKDOWN = "text/markdown; charset=utf-8"
# blob metadata `edited`: when the writer's file was edited (seconds since the epoch)
EDITED_METADATA = "edited"
EDITED_HEADER = f"x-ms-meta-{EDITED_METADATA}"
URL_SAS = "SAS token in the URL"


class BlobURL(NamedTuple):
    """An Azure Blob remote URL, split into its parts."""

    scheme: str
    netloc: str
    account: str
    container: str
    prefix: str  # inside the container, no leading or trailing slash
    path_style: bool  # Azurite and IP hosts put the account in the path
    sas: str  # the query string, if the URL carries a SAS token

    @classmethod
    def parse(cls, url: str) -> BlobURL:
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        host = parts.hostname or ""
        if _is_path_style(host):
            if len(segments) < 2:
                raise ConfigError(
                    f"the Azure remote {mask_url(url)} needs an account and a container in its "
                    "path (http://127.0.0.1:10000/devstoreaccount1/CONTAINER/PREFIX)"
                )
            account, segments = segments[0], segments[1:]
            path_style = True
        else:
            account = host.split(".", 1)[0]
            path_style = False
        if not segments:
            raise ConfigError(
                f"the Azure remote {mask_url(url)} names no container "
                "(https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX)"
            )
        return cls(
            parts.scheme,
            parts.netloc,
            account,
            segments[0],
            "/".join(segments[1:]),
            path_style,
            parts.query,
        )

    @property
    def account_url(self) -> str:
        path = f"/{self.account}" if self.path_style else ""
        return urlunsplit((self.scheme, self.netloc, path, "", ""))

    @property
    def container_url(self) -> str:
        return f"{self.account_url}/{self.container}"


def _is_path_style(host: str) -> bool:
    if host == "localhost" or "." not in host:
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


_SECRET_QUERY = re.compile(r"([?&]sig=)[^&]*", re.I)


def mask_url(url: str) -> str:
    """The URL with any SAS signature hidden."""
    return _SECRET_QUERY.sub(r"\1***", url)


def _parse_connection_string(conn: str) -> dict[str, str]:
    fields = {}
    for part in conn.split(";"):
        if "=" in part:
            name, value = part.split("=", 1)
            fields[name.strip().lower()] = value.strip()
    return fields


class Credential(NamedTuple):
    """How requests are authorized, and what to call it in messages."""

    kind: str
    account_name: str = ""
    account_key: str = ""  # Shared Key
    sas: str = ""  # a SAS token's query string
    token: Any = None  # an azure-identity TokenCredential

    def for_sdk(self) -> Any:
        """The credential argument the SDK's clients take (a SAS in the URL stays there)."""
        if self.account_key:
            return {"account_name": self.account_name, "account_key": self.account_key}
        if self.kind == URL_SAS:
            return None
        return self.token or self.sas or None


def credential_for(url: BlobURL) -> Credential:
    """The credential in DESIGN.md's order: connection string, SAS in the URL,
    AZURE_STORAGE_KEY, then DefaultAzureCredential."""
    conn = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if conn:
        fields = _parse_connection_string(conn)
        if fields.get("accountkey"):
            name = fields.get("accountname") or url.account
            return Credential("connection string", name, fields["accountkey"])
        if fields.get("sharedaccesssignature"):
            sas = fields["sharedaccesssignature"].lstrip("?")
            return Credential("connection string (SAS)", sas=sas)
        raise ConfigError(
            "AZURE_STORAGE_CONNECTION_STRING has neither AccountKey nor SharedAccessSignature"
        )
    if url.sas and "sig" in parse_qs(url.sas):
        return Credential(URL_SAS, sas=url.sas)
    key = os.environ.get("AZURE_STORAGE_KEY")
    if key:
        return Credential("account key", url.account, key)
    from azure.identity import DefaultAzureCredential

    return Credential("DefaultAzureCredential", token=DefaultAzureCredential())


def proxy_configured() -> bool:
    """Whether proxy variables are set: only the SDK (through requests) honours them."""
    return any(k.lower() in _PROXY_ENV for k in os.environ)


def ca_bundle() -> str | None:
    """The CA bundle TLS is verified against: the one requests would use."""
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        return bundle
    try:
        import certifi
    except ImportError:
        return None  # the system's store
    return certifi.where()


def parse_edited(value: str | None) -> float | None:
    """The `edited` metadata value, None if absent or not a number."""
    try:
        return float(value) if value else None
    except ValueError:
        return None


def quote_etag(value: str | None) -> str:
    """ETags in one spelling: Azure lists them bare and returns them quoted from writes."""
    return '"' + (value or "").strip('"') + '"'


def parse_listing(body: bytes, base: str) -> tuple[dict[str, Entry], str]:
    """One List Blobs page: the entries under `base` (keys relative to it) and the next marker."""
    from urllib.parse import unquote
    from xml.etree import ElementTree

    entries: dict[str, Entry] = {}
    root = ElementTree.fromstring(body)
    for blob in root.iterfind("Blobs/Blob"):
        node = blob.find("Name")
        name = (node.text or "") if node is not None else ""
        if node is not None and node.get("Encoded") == "true":
            name = unquote(name)  # Azure percent-encodes names XML cannot carry
        props = blob.find("Properties")
        if props is None or not name.startswith(base):
            continue
        key = name[len(base) :]
        when = props.findtext("Last-Modified")
        entries[key] = Entry(
            key,
            quote_etag(props.findtext("Etag")),
            int(props.findtext("Content-Length") or 0),
            parse_date(when) if when else 0.0,
        )
    return entries, root.findtext("NextMarker") or ""


class AzureStore:
    """Blobs under `<url prefix>/<project prefix>/` in one container."""

    page_size = 5000  # the service's maximum per List Blobs request

    def __init__(self, url: str, prefix: str = "", credential: Credential | None = None) -> None:
        self.blob_url = BlobURL.parse(url)
        self.url = mask_url(url)
        self.stats = Stats()
        parts = [p for p in (self.blob_url.prefix, prefix.strip("/")) if p]
        self.base = "/".join(parts) + "/" if parts else ""
        self.credential = credential or credential_for(self.blob_url)
        self.credential_kind = self.credential.kind
        self._open()

    def _open(self) -> None:
        from memsync.stores.blobhttp import BlobHTTP, SharedKey

        cred = self.credential
        if cred.token is not None:
            raise ConfigError("token credentials need the SDK: open the store with open_store")
        self.http = BlobHTTP(
            self.blob_url.scheme,
            self.blob_url.netloc,
            shared_key=SharedKey(cred.account_name, cred.account_key) if cred.account_key else None,
            sas=cred.sas,
            on_request=self.stats.count,
            cafile=ca_bundle() if self.blob_url.scheme == "https" else None,
        )
        account = f"/{self.blob_url.account}" if self.blob_url.path_style else ""
        self.container_path = f"{account}/{self.blob_url.container}"

    @classmethod
    def from_url(cls, url: str, prefix: str = "") -> AzureStore:
        """The lean store, or the SDK's when the credential or the network needs it."""
        credential = credential_for(BlobURL.parse(url))
        if credential.token is not None or proxy_configured():
            from memsync.stores.azure_sdk import AzureSDKStore

            return AzureSDKStore(url, prefix, credential)
        return cls(url, prefix, credential)

    def _name(self, key: str) -> str:
        return self.base + check_key(key)

    def _raise_for(self, status: int, headers: Any, key: str | None = None) -> None:
        """An error answer from the service, as memsync's error."""
        code = headers.get("x-ms-error-code", "") or ""
        what = key or f"container {self.blob_url.container!r}"
        if status == 404 and (key is None or "container" in code.lower()):
            raise NotFound(
                f"the container {self.blob_url.container!r} does not exist at {self.url}"
            )
        if status == 404:
            raise NotFound(f"{key} is not on the remote")
        if status == 412:
            raise PreconditionFailed(f"{what} changed on the remote")
        if status == 409 and code == "BlobAlreadyExists":
            raise AlreadyExists(f"{what} already exists on the remote")
        if status in (401, 403):
            raise AuthError(
                f"the {self.credential_kind} was refused by {self.blob_url.account_url}; "
                f"check the key, token or role assignment ({code or status})"
            )
        if status >= 500 or status in (408, 429):
            raise Unreachable(f"{self.blob_url.account_url} answered {status}; try again later")
        raise StoreError(f"the remote refused the request for {what}: {status} {code}".strip())

    def _request(
        self,
        kind: str,
        method: str,
        key: str | None = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> Any:
        path = self.container_path + (f"/{self._name(key)}" if key is not None else "")
        response = self.http.request(kind, method, path, query, headers, body)
        if response.status >= 300:
            self._raise_for(response.status, response.headers, key)
        return response

    def list(self) -> dict[str, Entry]:
        """Every key with its ETag: one request per 5000 blobs, read with ElementTree (the
        SDK's generic XML deserializer takes three times as long on large listings)."""
        entries: dict[str, Entry] = {}
        marker = ""
        while True:
            query = {"restype": "container", "comp": "list", "maxresults": str(self.page_size)}
            if self.base:
                query["prefix"] = self.base
            if marker:
                query["marker"] = marker
            response = self._request("list", "GET", query=query)
            page, marker = parse_listing(response.body, self.base)
            entries.update(page)
            if not marker:
                return entries

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        response = self._request("get", "GET", key)
        self.stats.bytes_down += len(response.body)
        edited = parse_edited(response.headers.get(EDITED_HEADER))
        return response.body, quote_etag(response.headers.get("ETag")), edited

    def _put(self, key: str, data: bytes, condition: dict[str, str], edited: float | None) -> str:
        headers = {"x-ms-blob-type": "BlockBlob", "Content-Type": MARKDOWN, **condition}
        if edited is not None:
            headers[EDITED_HEADER] = repr(float(edited))
        response = self._request("put", "PUT", key, headers=headers, body=data)
        self.stats.bytes_up += len(data)
        return quote_etag(response.headers.get("ETag"))

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        return self._put(key, data, {"If-None-Match": "*"}, edited)

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        return self._put(key, data, {"If-Match": quote_etag(etag)}, edited)

    def delete(self, key: str, etag: str) -> None:
        try:
            self._request("delete", "DELETE", key, headers={"If-Match": quote_etag(etag)})
        except PreconditionFailed:
            # Azure answers 412, not 404, when the blob is gone: tell the two apart
            self._request("head", "HEAD", key)
            raise

    def _container(self, method: str) -> Any:
        kind = {"HEAD": "head", "PUT": "put"}[method]
        return self.http.request(kind, method, self.container_path, {"restype": "container"})

    def exists(self) -> bool:
        response = self._container("HEAD")
        if response.status == 404:
            return False
        if response.status >= 300:
            self._raise_for(response.status, response.headers)
        return True

    def ensure(self) -> None:
        response = self._container("PUT")
        if response.status == 409 and response.headers.get("x-ms-error-code") == (
            "ContainerAlreadyExists"
        ):
            return
        if response.status >= 300:
            self._raise_for(response.status, response.headers)

    def server_time(self) -> float | None:
        """The server's clock (from the Date header of a cheap request), for `doctor`."""
        date = self._container("HEAD").headers.get("Date")
        return parse_date(date) if date else None

    def close(self) -> None:
        self.http.close()
