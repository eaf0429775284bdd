"""The Azure Blob Storage remote.

Every write is conditional on the server (`If-None-Match: *` to create, `If-Match: <etag>` to
replace or delete), and every failure is translated here into memsync's own error types: a 412
reaches the engine as the same PreconditionFailed the folder store raises, so the
merge-and-retry path is shared.

Requests go out through memsync's lean REST client (memsync.stores.blobhttp), signed with an
account key, carrying a SAS token or a bearer token from DefaultAzureCredential (the only
`azure.*` import, made only for that credential).

Every download is verified before the engine sees it: against the Content-MD5 the service
keeps for the blob (set by every upload, which sends one), else against the size the listing
gave for that ETag. A body that fails is fetched again, then refused; never landed.
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

from memsync.memory.frontmatter import DEFAULT_MAX_BYTES
from memsync.stores.base import Entry, Stats, Store, check_key, check_remote_path
from memsync.stores.blobhttp import md5_base64, parse_edited, quote_etag
from memsync.stores.httpdate import parse_date
from memsync.util.errors import (
    AlreadyExists,
    AuthError,
    ConfigError,
    NotFound,
    PreconditionFailed,
    RefusedFile,
    StoreError,
    Unreachable,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

MARKDOWN = "text/markdown; charset=utf-8"
# blob metadata `edited`: when the writer's file was edited (seconds since the epoch)
EDITED_METADATA = "edited"
EDITED_HEADER = f"x-ms-meta-{EDITED_METADATA}"
URL_SAS = "SAS token in the URL"
GET_ATTEMPTS = 3  # a download that fails verification is fetched this many times at most
LISTING_LIMIT = 64 * 1024 * 1024  # one page of 5000 entries is about 4 MB
HEADROOM = 64 * 1024  # a blob may be this much over max_file_bytes and still be read (and
# then refused by the inbound check with its size named, not as a network error)
NO_CREDENTIAL = (
    "no Azure credential found: set AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_KEY, "
    "put a SAS token in the remote URL, or sign in for a token (az login, a managed identity, "
    "or AZURE_CLIENT_ID / AZURE_TENANT_ID / AZURE_CLIENT_SECRET)"
)


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
        check_remote_path(url, parts.path, mask_url(url))
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
    if url.sas and parse_qs(url.sas).keys() & {"sv", "sp", "se", "sr", "ss", "srt"}:
        raise ConfigError(
            "the remote URL carries a SAS token without its signature (sig=...): copy the "
            "whole token (az storage container generate-sas, or the portal) into the URL"
        )
    if url.scheme != "https":
        raise ConfigError(
            f"{NO_CREDENTIAL} (a token credential needs an https:// remote, not {url.scheme}://)"
        )
    from memsync.stores.token import token_credential

    return Credential("DefaultAzureCredential", token=token_credential(NO_CREDENTIAL))


def sas_expiry(sas: str) -> float | None:
    """When a SAS token expires (its `se` field), if it says and it can be read."""
    value = (parse_qs(sas).get("se") or [""])[0]
    if not value:
        return None
    import datetime

    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def parse_listing(body: bytes, base: str) -> tuple[dict[str, Entry], str]:
    """One List Blobs page: the entries under `base` (keys relative to it) and the next marker."""
    from xml.etree import ElementTree

    entries: dict[str, Entry] = {}
    root = ElementTree.fromstring(body)
    for blob in root.iterfind("Blobs/Blob"):
        node = blob.find("Name")
        name = (node.text or "") if node is not None else ""
        if node is not None and node.get("Encoded") == "true":
            # Azure percent-encodes names XML cannot carry; bytes that are not UTF-8 stay
            # as lone surrogates, so the engine can tell such a name apart and ignore it
            name = unquote(name, errors="surrogateescape")
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


class AzureStore(Store):
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
        self.max_bytes: int = DEFAULT_MAX_BYTES  # the engine sets its max_file_bytes
        self._listed: dict[str, Entry] = {}  # the last listing, to check downloads against
        self._denied: str | None = None  # a write refused for lack of rights: not tried again
        self._write_ok = False  # a write went through: the credential may write
        self._first_write = threading.Lock()
        self._open()

    @property
    def deadline(self) -> float | None:
        """The command's deadline (time.monotonic()): no request outlives it."""
        return self.http.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.http.deadline = value

    def _open(self) -> None:
        from memsync.stores.blobhttp import BlobHTTP, SharedKey

        cred = self.credential
        if cred.account_key and self.blob_url.scheme != "https" and not self.blob_url.path_style:
            # Azurite's path-style URLs may be http://; a storage account's name never is
            raise ConfigError(
                f"the remote {self.url} is plain http:// to a storage account: requests signed "
                "with its key would cross the network readable; use https://"
            )
        self.http = BlobHTTP(
            self.blob_url.scheme,
            self.blob_url.netloc,
            shared_key=SharedKey(cred.account_name, cred.account_key) if cred.account_key else None,
            sas=cred.sas,
            token=self._bearer(cred),
            on_request=self.stats.count,
        )
        account = f"/{self.blob_url.account}" if self.blob_url.path_style else ""
        self.container_path = f"{account}/{self.blob_url.container}"

    @staticmethod
    def _bearer(cred: Credential) -> Any:
        if cred.token is None:
            return None
        from memsync.stores.token import Bearer

        return Bearer(cred.token)

    def _name(self, key: str) -> str:
        return self.base + check_key(key)

    @property
    def _sas(self) -> str:
        return self.credential.sas or (self.blob_url.sas if self.credential.kind == URL_SAS else "")

    @contextmanager
    def _gate(self) -> Iterator[None]:
        """Until one write has gone through, writes go one at a time: a read-only SAS then
        costs one refused request, not one per file sent in parallel before the first answer."""
        if self._write_ok:
            yield
            return
        with self._first_write:
            if self._denied:
                raise AuthError(self._denied)
            try:
                yield
            except AuthError:
                raise
            except StoreError:
                self._write_ok = True  # refused for another reason (412...): writing is allowed
                raise
            self._write_ok = True

    def _auth_message(self, code: str, status: int, write: bool) -> str:
        """Why the service refused the credential, and what to do about it."""
        where = self.blob_url.account_url
        sas = self._sas
        expiry = sas_expiry(sas) if sas else None
        if expiry is not None and expiry < time.time():
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(expiry))
            return (
                f"the {self.credential_kind} expired on {when}; make a new one "
                "(az storage container generate-sas ... --permissions racwdl) and set it again"
            )
        if code in ("AuthorizationPermissionMismatch", "AuthorizationResourceTypeMismatch") or (
            sas and write and code == "AuthorizationFailure"
        ):
            rights = "write and delete" if write else "list and read"
            return (
                f"the {self.credential_kind} does not allow memsync to {rights} on {where} "
                f"({code or status}); give it the permissions racwdl (or the Storage Blob "
                "Data Contributor role)"
            )
        return (
            f"the {self.credential_kind} was refused by {where} ({code or status}); check the "
            "key or SAS token (AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, the URL)"
        )

    def _raise_for(
        self, status: int, headers: Any, key: str | None = None, write: bool = False
    ) -> None:
        """An error answer from the service, as memsync's error."""
        code = headers.get("x-ms-error-code", "") or ""
        what = key or f"container {self.blob_url.container!r}"
        if status == 404 and key is None and not code:
            # every answer of the Blob service names its error: this is another web server
            raise ConfigError(
                f"{self.blob_url.account_url} answered 404 without an Azure Storage error code "
                f"for the container {self.blob_url.container!r}: it is not an Azure Blob "
                "endpoint; check the address in --remote, MEMSYNC_REMOTE or the remote "
                "setting; nothing was changed"
            )
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
            message = self._auth_message(code, status, write)
            if write:
                self._denied = message
            raise AuthError(message)
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
        limit: int = 0,
    ) -> Any:
        write = method in ("PUT", "DELETE")
        if write and self._denied:
            raise AuthError(self._denied)  # one refused write says it for all of them
        from memsync.stores.blobhttp import TooLarge

        path = self.container_path + (f"/{self._name(key)}" if key is not None else "")
        try:
            response = self.http.request(
                kind, method, path, query, headers, body, limit=limit or self.max_bytes + HEADROOM
            )
        except TooLarge as exc:
            if kind == "get":
                raise  # a blob over max_file_bytes: `_fetch` refuses it as a file
            raise StoreError(
                f"{self.blob_url.account_url} sent an answer of more than {exc.limit} bytes "
                f"to a {kind} request; is the remote URL an Azure Blob endpoint?"
            ) from None
        if response.status >= 300:
            self._raise_for(response.status, response.headers, key, write)
        return response

    def _list_query(self, marker: str = "", size: int = 0) -> dict[str, str]:
        query = {"restype": "container", "comp": "list", "maxresults": str(size or self.page_size)}
        if self.base:
            query["prefix"] = self.base
        if marker:
            query["marker"] = marker
        return query

    def list(self) -> dict[str, Entry]:
        """Every key with its ETag: one request per 5000 blobs, read with ElementTree (the
        SDK's generic XML deserializer takes three times as long on large listings). A page
        that is not whole XML (cut short on the way) is asked for again."""
        from xml.etree.ElementTree import ParseError

        entries: dict[str, Entry] = {}
        marker = ""
        while True:
            query = self._list_query(marker)
            for attempt in range(GET_ATTEMPTS):
                response = self._request("list", "GET", query=query, limit=LISTING_LIMIT)
                try:
                    page, marker = parse_listing(response.body, self.base)
                    break
                except ParseError:
                    if attempt == GET_ATTEMPTS - 1:
                        raise Unreachable(
                            f"{self.blob_url.account_url} sent a listing cut short "
                            f"{GET_ATTEMPTS} times; try again later"
                        ) from None
            entries.update(page)
            if not marker:
                self._listed = entries
                return entries

    @property
    def _projects_root(self) -> str:
        """The prefix the remote URL names, under which each project is one "folder"."""
        return f"{self.blob_url.prefix}/" if self.blob_url.prefix else ""

    def projects(self) -> tuple[str, ...] | None:
        """The project prefixes beside this one: List Blobs with a delimiter, one entry per
        project (a request per 5000 projects)."""
        from xml.etree import ElementTree

        root = self._projects_root
        names: list[str] = []
        marker = ""
        while True:
            query = {"restype": "container", "comp": "list", "delimiter": "/"}
            if root:
                query["prefix"] = root
            if marker:
                query["marker"] = marker
            response = self._request("list", "GET", query=query, limit=LISTING_LIMIT)
            try:
                page = ElementTree.fromstring(response.body)
            except ElementTree.ParseError:
                raise Unreachable(
                    f"{self.blob_url.account_url} sent a listing cut short; try again later"
                ) from None
            for node in page.iterfind("Blobs/BlobPrefix/Name"):
                name = node.text or ""
                if node.get("Encoded") == "true":
                    name = unquote(name, errors="surrogateescape")
                if name.startswith(root) and name.endswith("/"):
                    names.append(name[len(root) : -1])
            marker = page.findtext("NextMarker") or ""
            if not marker:
                return tuple(sorted(names))

    def verify(self, key: str, data: bytes, etag: str, md5: str | None) -> str | None:
        """Why a downloaded body is not the blob (None if it is): its MD5 against the one the
        service keeps, else its size against the listing's for that very version."""
        if md5:
            if md5_base64(data) != md5:
                return f"its bytes do not match the MD5 the service keeps ({len(data)} bytes)"
            return None
        listed = self._listed.get(key)
        if listed is not None and listed.etag == etag and listed.size != len(data):
            return f"it came {len(data)} of the {listed.size} bytes the listing gave"
        return None

    def _too_large(self, key: str, size: int | None, said_by: str) -> RefusedFile:
        """`said_by`: what declared the size (the listing, the answer), never measured here:
        such a file is not fetched, or not past the limit."""
        shown = f"{said_by} gives it {size} bytes" if size is not None else "it is larger"
        return RefusedFile(key, f"{shown}, over the {self.max_bytes}-byte limit")

    def _fetch(self, key: str) -> tuple[bytes, str, str | None, float | None]:
        """One GET: body, ETag, the MD5 the service keeps, the `edited` metadata."""
        from memsync.stores.blobhttp import TooLarge

        listed = self._listed.get(key)
        if listed is not None and listed.size > self.max_bytes:
            raise self._too_large(key, listed.size, "the listing")  # not worth fetching
        try:
            response = self._request("get", "GET", key)
        except TooLarge as exc:
            raise self._too_large(key, exc.size, "the server's answer") from None
        return (
            response.body,
            quote_etag(response.headers.get("ETag")),
            # the whole blob's MD5, as the service keeps it (a ranged answer names it apart)
            response.headers.get("Content-MD5") or response.headers.get("x-ms-blob-content-md5"),
            parse_edited(response.headers.get(EDITED_HEADER)),
        )

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        problem = ""
        for _ in range(GET_ATTEMPTS):
            data, etag, md5, edited = self._fetch(key)
            problem = self.verify(key, data, etag, md5) or ""
            if not problem:
                return data, etag, edited
        raise StoreError(
            f"{key} was not pulled: {problem}, {GET_ATTEMPTS} times (a proxy or the network "
            "is damaging answers); nothing was written, try again later"
        )

    def _put(self, key: str, data: bytes, condition: dict[str, str], edited: float | None) -> str:
        headers = {
            "x-ms-blob-type": "BlockBlob",
            "Content-Type": MARKDOWN,
            "Content-MD5": md5_base64(data),  # the service refuses a body that differs
            **condition,
        }
        if edited is not None:
            headers[EDITED_HEADER] = repr(float(edited))
        with self._gate():
            response = self._request("put", "PUT", key, headers=headers, body=data)
        return quote_etag(response.headers.get("ETag"))

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        return self._put(key, data, {"If-None-Match": "*"}, edited)

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        return self._put(key, data, {"If-Match": quote_etag(etag)}, edited)

    def delete(self, key: str, etag: str) -> None:
        try:
            with self._gate():
                self._request("delete", "DELETE", key, headers={"If-Match": quote_etag(etag)})
        except PreconditionFailed:
            # Azure answers 412, not 404, when the blob is gone: tell the two apart
            self._request("head", "HEAD", key)
            raise

    def _probe(self) -> Any:
        """The cheapest request that tells whether the container exists: Get Container
        Properties, or under a SAS (which a container SAS cannot authorize for it) a listing
        of one name under the prefix."""
        if self._sas:
            query = self._list_query(size=1)
            return self.http.request("list", "GET", self.container_path, query)
        return self.http.request("head", "HEAD", self.container_path, {"restype": "container"})

    def exists(self) -> bool:
        response = self._probe()
        if response.status == 404 and response.headers.get("x-ms-error-code"):
            return False  # ContainerNotFound; a 404 without a code is `_raise_for`'s to say
        if response.status >= 300:
            self._raise_for(response.status, response.headers)
        return True

    def can_create(self) -> bool:
        """Whether the credential may create the container: a service SAS (`sr=`, e.g. a
        container SAS) never can; an account SAS needs container resource rights and create or
        write permission; a key or a token may."""
        if not self._sas:
            return True
        query = parse_qs(self._sas.lstrip("?"))
        if "sr" in query:
            return False
        resources = "".join(query.get("srt", []))
        rights = "".join(query.get("sp", []))
        return "c" in resources and ("c" in rights or "w" in rights)

    def create_advice(self) -> str:
        """What to do about a missing container, fit for this credential."""
        name = self.blob_url.container
        if self.can_create():
            return f"run `memsync push` to create the container {name!r}"
        return (
            f"the {self.credential_kind} cannot create it: create the container {name!r} "
            f"(az storage container create --name {name} --account-name "
            f"{self.blob_url.account}) or use a credential with account rights"
        )

    def ensure(self) -> None:
        if self._sas and self.exists():
            return  # a container SAS may not create containers, and need not
        response = self.http.request("put", "PUT", self.container_path, {"restype": "container"})
        if response.status == 409 and response.headers.get("x-ms-error-code") == (
            "ContainerAlreadyExists"
        ):
            return
        if response.status in (401, 403) and self._sas:
            raise AuthError(self._cannot_create())
        if response.status >= 300:
            self._raise_for(response.status, response.headers)

    def _cannot_create(self) -> str:
        name = self.blob_url.container
        return (
            f"the container {name!r} does not exist at {self.url} and the "
            f"{self.credential_kind} may not create it; create it (az storage container create "
            f"--name {name} --account-name {self.blob_url.account}) or use a credential with "
            "account rights"
        )

    def server_time(self) -> float | None:
        """The server's clock (from the Date header of a cheap request), for `doctor`."""
        date = self._probe().headers.get("Date")
        return parse_date(date) if date else None

    @property
    def round_trip(self) -> float | None:
        """About one network round trip to the service (its quickest small request), once
        known."""
        return self.http.round_trip

    def warm(self, count: int) -> None:
        """Open `count` connections in the background, e.g. while the listing is in flight."""
        self.http.warm(count)

    def close(self) -> None:
        self.http.close()
