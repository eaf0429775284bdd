"""The S3 remote (AWS S3 and the services that speak its API: Cloudflare R2, MinIO).

`s3://BUCKET/PREFIX`: the credential, region and endpoint come from where the AWS CLI finds them
(memsync.stores.s3auth). Requests go out through the same lean client as Azure's
(memsync.stores.blobhttp: a keep-alive pool, an overall deadline, bounded reads, retries of
connection errors and 5xx with Retry-After honoured), signed with SigV4 instead of Shared Key:
importing boto3 alone takes longer than a whole session-start hook (docs/s3.md).

Every write is conditional on the server: `If-None-Match: *` to create, `If-Match: <etag>` to
replace or delete. A 412 reaches the engine as PreconditionFailed (AlreadyExists for a create),
so its merge-and-retry path re-reads and tries again; a 409 ConditionalRequestConflict (two
conditional writes met on the server) is the same lost race. A replace or delete of an object
that is gone is a PreconditionFailed (the engine's "changed since you read it"), told apart
from "changed" by a HEAD as on Azure.

Every upload carries Content-MD5 (the service refuses a body that differs) and the body's
MD5 in the metadata; a download is checked against that MD5, else against the ETag where the
ETag is an MD5 (a single-part upload without KMS), else against the size the listing gave.
A body that fails is fetched again, then refused; never landed.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote_plus, urlsplit

from memsync.memory.frontmatter import DEFAULT_MAX_BYTES
from memsync.stores.base import Entry, Stats, Store, check_key, check_remote_path
from memsync.stores.blobhttp import BlobHTTP, Response, md5_base64, parse_edited, quote_etag
from memsync.stores.httpdate import parse_date
from memsync.stores.s3auth import S3Settings, SigV4, host_header, settings_for
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

    from memsync.stores.s3probe import Verdict

MARKDOWN = "text/markdown; charset=utf-8"
EDITED_HEADER = "x-amz-meta-edited"  # when the writer's file was edited (seconds since epoch)
MD5_HEADER = "x-amz-meta-md5"  # the body's MD5 (base64), kept whatever the ETag is
GET_ATTEMPTS = 3  # a download that fails verification is fetched this many times at most
LISTING_LIMIT = 16 * 1024 * 1024  # one page of 1000 keys is well under 1 MB
HEADROOM = 64 * 1024  # an object may be this much over max_file_bytes and still be read
_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_MD5_ETAG = re.compile(r'^"?([0-9a-fA-F]{32})"?$')
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")  # S3's and R2's naming rules
_AUTH_CODES = {
    "InvalidAccessKeyId": "the access key is not known to {where}",
    "SignatureDoesNotMatch": "the secret key does not match the access key",
    "ExpiredToken": "the session token has expired",
    "InvalidToken": "the session token is not valid",
    "TokenRefreshRequired": "the session token has expired",
    "RequestTimeTooSkewed": "this machine's clock is too far from the server's; set it right",
}


class S3URL(NamedTuple):
    bucket: str
    prefix: str  # inside the bucket, no leading or trailing slash

    @classmethod
    def parse(cls, url: str) -> S3URL:
        parts = urlsplit(url)
        bucket = parts.netloc
        if not bucket or not _BUCKET.match(bucket) or parts.query or parts.fragment:
            shown = url.replace(bucket, "…@" + bucket.rsplit("@", 1)[1]) if "@" in bucket else url
            raise ConfigError(
                f"the S3 remote {shown!r} does not name a bucket as s3://BUCKET/PREFIX (3 to "
                "63 lower-case letters, digits, dots and dashes; credentials go in AWS_* "
                "variables or ~/.aws, not in the URL)"
            )
        check_remote_path(url, parts.path)
        return cls(bucket, "/".join(s for s in parts.path.split("/") if s))


class S3HTTP(BlobHTTP):
    """The lean client, each attempt signed with SigV4 (its time and the body's hash)."""

    def __init__(self, settings: S3Settings, **kwargs: object) -> None:
        super().__init__(settings.scheme, settings.netloc, **kwargs)  # type: ignore[arg-type]
        self.signer = SigV4(settings.credential, settings.region)
        self.host_header = host_header(self.host, self.port, self.scheme)
        self.ca_bundle = settings.ca_bundle
        if self.ca_bundle and self.scheme == "https":
            import ssl

            try:
                self.tls_context = ssl.create_default_context(cafile=self.ca_bundle)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(
                    f"AWS_CA_BUNDLE (or the profile's ca_bundle) names {self.ca_bundle}, which "
                    f"is not a readable CA bundle ({exc.strerror or exc}); fix or unset it"
                ) from None

    def _refuse_untrusted(self, exc: BaseException) -> None:
        if not self.ca_bundle or self.scheme != "https":
            super()._refuse_untrusted(exc)
            return
        from memsync.stores import tls

        reason = tls.untrusted(exc)
        if reason:
            raise ConfigError(
                f"the TLS certificate of https://{self.netloc} is not trusted ({reason}); the "
                f"CA bundle in effect is AWS_CA_BUNDLE (or the profile's ca_bundle) "
                f"{self.ca_bundle}: point it at the bundle that signed it"
            ) from None

    def _signed(
        self,
        method: str,
        target: str,
        query: Mapping[str, str],
        headers: Mapping[str, str] | None,
        body: bytes | None,
    ) -> dict[str, str]:
        send = dict(headers or {})
        if body is not None:
            send["Content-Length"] = str(len(body))
        self.signer.sign(method, target, query, send, body, self.host_header)
        return send


def _iso_time(value: str | None) -> float:
    """A listing's LastModified (ISO 8601, UTC) as seconds since the epoch."""
    if not value:
        return 0.0
    import datetime

    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def _error_code(body: bytes) -> str:
    """The <Code> of an S3 error document ("" if there is none)."""
    match = re.search(rb"<Code>([^<]{1,100})</Code>", body[:4096])
    return match.group(1).decode("utf-8", "replace") if match else ""


def _key_of(text: str | None, encoded: bool) -> str:
    text = text or ""
    # encoding-type=url: names XML cannot carry arrive percent-encoded; bytes that are not
    # UTF-8 stay lone surrogates, which the engine tells apart and ignores
    return unquote_plus(text, errors="surrogateescape") if encoded else text


def parse_listing(body: bytes, base: str) -> tuple[dict[str, Entry], str]:
    """One ListObjectsV2 page: its entries under `base` (keys relative to it) and the token
    for the next page ("" at the last)."""
    from xml.etree import ElementTree

    root = ElementTree.fromstring(body)
    encoded = (root.findtext(f"{_NS}EncodingType") or "").lower() == "url"
    entries: dict[str, Entry] = {}
    for node in root.iterfind(f"{_NS}Contents"):
        name = _key_of(node.findtext(f"{_NS}Key"), encoded)
        if not name.startswith(base) or name == base:
            continue
        key = name[len(base) :]
        entries[key] = Entry(
            key,
            quote_etag(node.findtext(f"{_NS}ETag")),
            int(node.findtext(f"{_NS}Size") or 0),
            _iso_time(node.findtext(f"{_NS}LastModified")),
        )
    truncated = (root.findtext(f"{_NS}IsTruncated") or "").lower() == "true"
    token = root.findtext(f"{_NS}NextContinuationToken") or "" if truncated else ""
    if truncated and not token:
        raise StoreError("the S3 listing said it was cut into pages but gave no next token")
    return entries, token


class S3Store(Store):
    """Objects under `<url prefix>/<project prefix>/` in one bucket."""

    page_size = 1000  # the service's maximum per ListObjectsV2 request

    def __init__(self, url: str, prefix: str = "", settings: S3Settings | None = None) -> None:
        self.s3_url = S3URL.parse(url)
        self.url = url
        self.stats = Stats()
        parts = [p for p in (self.s3_url.prefix, prefix.strip("/")) if p]
        self.base = "/".join(parts) + "/" if parts else ""
        self.settings = settings or settings_for(self.s3_url.bucket)
        self.credential_kind = self.settings.credential.kind
        self.credential_fix = (  # what `doctor` says to a refused credential
            "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or AWS_PROFILE "
            "(aws sso login, aws configure), and the key's rights on the bucket"
        )
        self.max_bytes: int = DEFAULT_MAX_BYTES
        self._listed: dict[str, Entry] = {}
        self._denied: str | None = None
        self._write_ok = False
        self._first_write = threading.Lock()
        self.conditions: Verdict | None = None  # what the service honours, once checked
        self.http = S3HTTP(self.settings, on_request=self.stats.count)
        self.bucket_path = f"/{self.s3_url.bucket}" if self.settings.path_style else ""
        self.where = f"{self.settings.scheme}://{self.settings.netloc}"

    @property
    def deadline(self) -> float | None:
        """The command's deadline (time.monotonic()): no request outlives it."""
        return self.http.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.http.deadline = value

    def _path(self, key: str | None) -> str:
        if key is None:
            return self.bucket_path or "/"
        return f"{self.bucket_path}/{self.base}{check_key(key)}"

    @contextmanager
    def _gate(self) -> Iterator[None]:
        """Until one write has gone through, writes go one at a time: a read-only credential
        then costs one refused request, not one per file sent in parallel."""
        if self._write_ok:
            yield
            return
        with self._first_write:
            if self._denied:
                raise AuthError(self._denied)
            self.check_conditions()
            try:
                yield
            except AuthError:
                raise
            except StoreError:
                self._write_ok = True
                raise
            self._write_ok = True

    def _auth_message(self, code: str, status: int, write: bool) -> str:
        kind = self.credential_kind
        bucket = self.s3_url.bucket
        if code in _AUTH_CODES:
            why = _AUTH_CODES[code].format(where=self.where)
            return (
                f"the {kind} was refused by {self.where} ({code}): {why}; check "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or AWS_PROFILE "
                "(aws sso login, aws configure)"
            )
        if not code:  # a HEAD's answer has no body to say why
            return (
                f"the {kind} was refused by {self.where} ({status}); check AWS_ACCESS_KEY_ID / "
                "AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN or AWS_PROFILE, and that it may list, "
                f"read, write and delete in the bucket {bucket!r}"
            )
        rights = "write and delete" if write else "list and read"
        return (
            f"the {kind} may not {rights} in the bucket {bucket!r} at {self.where} "
            f"({code or status}); give it s3:ListBucket, s3:GetObject, s3:PutObject and "
            "s3:DeleteObject on the bucket"
        )

    def _raise_for(self, response: Response, key: str | None, method: str) -> None:
        """An error answer from the service, as memsync's error."""
        status = response.status
        code = _error_code(response.body)
        write = method in ("PUT", "DELETE") and key is not None
        bucket = self.s3_url.bucket
        if status == 404 and key is None and code != "NoSuchBucket":
            raise self._not_s3(code)
        if status == 404 and (key is None or code == "NoSuchBucket"):
            raise NotFound(f"the bucket {bucket!r} does not exist at {self.where}")
        if status == 404:
            raise NotFound(f"{key} is not on the remote")
        if status == 412 or (status == 409 and code == "ConditionalRequestConflict"):
            raise PreconditionFailed(f"{key or bucket} changed on the remote")
        if status in (400, 401, 403) and (status != 400 or code in _AUTH_CODES):
            message = self._auth_message(code, status, write)
            if write:
                self._denied = message
            raise AuthError(message)
        if status >= 500 or status in (408, 429):
            answer = f"{status} {code}".strip()
            raise Unreachable(f"{self.where} answered {answer}; try again later")
        region = response.headers.get("x-amz-bucket-region")  # said also to a HEAD
        if (
            status == 301
            or code in ("PermanentRedirect", "AuthorizationHeaderMalformed")
            or (status == 400 and region and region != self.settings.region)
        ):
            raise ConfigError(
                f"the bucket {bucket!r} is in another region than {self.settings.region!r}: "
                "set AWS_REGION (or the profile's region) to the bucket's"
            )
        raise StoreError(f"the remote refused the request for {key or bucket}: {status} {code}")

    def _not_s3(self, code: str, answer: str = "") -> ConfigError:
        """A 404 to a request for the bucket itself that is not S3's NoSuchBucket (or an
        `answer` no S3 service gives): the endpoint is another web server (a wrong
        AWS_ENDPOINT_URL), or a service that does not know the bucket's address. Not "no
        bucket": that would read as a bucket emptied or deleted, and a sync would offer to
        publish this device's memory into it again."""
        answer = answer or (f"404 {code}" if code else "404 without an S3 error")
        setting = (
            "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the profile's endpoint_url"
            if self.settings.custom_endpoint
            else "the bucket name in the remote URL and AWS_REGION"
        )
        return ConfigError(
            f"{self.where} answered {answer} for the bucket {self.s3_url.bucket!r}: it is not "
            f"an S3 service, or not the one that holds the bucket; check {setting}; nothing "
            "was changed"
        )

    def _request(
        self,
        kind: str,
        method: str,
        key: str | None = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        limit: int = 0,
    ) -> Response:
        if method in ("PUT", "DELETE") and key is not None and self._denied:
            raise AuthError(self._denied)
        from memsync.stores.blobhttp import TooLarge

        try:
            response = self.http.request(
                kind,
                method,
                self._path(key),
                query,
                headers,
                body,
                limit=limit or self.max_bytes + HEADROOM,
            )
        except TooLarge as exc:
            if kind == "get":
                raise
            raise StoreError(
                f"{self.where} sent an answer of more than {exc.limit} bytes to a {kind} "
                "request; is the endpoint an S3 service?"
            ) from None
        if response.status >= 300:
            if method == "HEAD" and response.status == 404 and key is None:
                # a HEAD's 404 has no body: missing or not S3, `exists` tells them apart
                raise NotFound(f"the bucket {self.s3_url.bucket!r} does not exist at {self.where}")
            self._raise_for(response, key, method)
        return response

    def check_conditions(self) -> None:
        """Refuse a service that ignores conditional writes, before anything is listed or
        written: checked once per device, endpoint and bucket (memsync.stores.s3probe)."""
        if self.conditions is None:
            from memsync.stores.s3probe import check

            self.conditions = check(self)

    def check_service(self) -> str:
        """Check the service's conditions again, whatever was kept (`memsync doctor`): what
        it honours, or ConfigError."""
        from memsync.stores.s3probe import probe

        verdict = probe(self)
        if verdict is None:
            return "not checked: no bucket yet, or this key may not write"
        self.conditions = verdict
        deletes = "and on DeleteObject" if verdict.deletes else "(not on DeleteObject: read first)"
        form = ", ETags bare" if verdict.bare else ""
        return f"If-None-Match and If-Match honoured on PutObject {deletes}{form}"

    def _check_beside(self) -> Callable[[dict[str, Entry]], None]:
        """`check_conditions` beside the listing: the call returned waits for its verdict and
        takes the check's own objects out of the listing."""
        if self.conditions is not None:
            return lambda entries: None
        from memsync.stores.s3probe import PROBE_PREFIX, beside

        wait = beside(self)

        def done(entries: dict[str, Entry]) -> None:
            self.conditions = wait()
            for key in [k for k in entries if k.startswith(PROBE_PREFIX)]:
                del entries[key]

        return done

    def _page(self, query: dict[str, str]) -> Response:
        return self._request("list", "GET", query=query, limit=LISTING_LIMIT)

    def list(self) -> dict[str, Entry]:
        """Every key with its ETag: one request per 1000 objects. A page that is not whole XML
        (cut short on the way) is asked for again."""
        from xml.etree.ElementTree import ParseError

        checked = self._check_beside()  # the listing lands nothing: it may go first
        entries: dict[str, Entry] = {}
        token = ""
        while True:
            query = {"list-type": "2", "max-keys": str(self.page_size), "encoding-type": "url"}
            if self.base:
                query["prefix"] = self.base
            if token:
                query["continuation-token"] = token
            for attempt in range(GET_ATTEMPTS):
                response = self._page(query)
                try:
                    page, token = parse_listing(response.body, self.base)
                    break
                except ParseError:
                    if attempt == GET_ATTEMPTS - 1:
                        raise Unreachable(
                            f"{self.where} sent a listing cut short {GET_ATTEMPTS} times; "
                            "try again later"
                        ) from None
            entries.update(page)
            if not token:
                checked(entries)
                self._listed = entries
                return entries

    def projects(self) -> tuple[str, ...] | None:
        """The project prefixes beside this one: a listing with a delimiter."""
        from xml.etree import ElementTree

        root = f"{self.s3_url.prefix}/" if self.s3_url.prefix else ""
        names: list[str] = []
        token = ""
        while True:
            query = {"list-type": "2", "delimiter": "/", "encoding-type": "url"}
            if root:
                query["prefix"] = root
            if token:
                query["continuation-token"] = token
            try:
                page = ElementTree.fromstring(self._page(query).body)
            except ElementTree.ParseError:
                cut = f"{self.where} sent a listing cut short; try again later"
                raise Unreachable(cut) from None
            encoded = (page.findtext(f"{_NS}EncodingType") or "").lower() == "url"
            for node in page.iterfind(f"{_NS}CommonPrefixes/{_NS}Prefix"):
                name = _key_of(node.text, encoded)
                if name.startswith(root) and name.endswith("/"):
                    names.append(name[len(root) : -1])
            truncated = (page.findtext(f"{_NS}IsTruncated") or "").lower() == "true"
            token = page.findtext(f"{_NS}NextContinuationToken") or "" if truncated else ""
            if not token:
                return tuple(sorted(names))

    def verify(self, key: str, data: bytes, etag: str, md5: str | None) -> str | None:
        """Why a downloaded body is not the object (None if it is): checked against the
        server's own MD5 where the ETag is one, else the MD5 its writer kept (which a tool
        that rewrites the body and copies the metadata leaves stale), else the listing's
        size."""
        as_md5 = _MD5_ETAG.match(etag)
        if as_md5:
            if hashlib.md5(data, usedforsecurity=False).hexdigest() != as_md5.group(1).lower():
                return f"its bytes do not match the MD5 its ETag gives ({len(data)} bytes)"
            return None
        if md5:
            if md5_base64(data) != md5:
                return f"its bytes do not match the MD5 its writer kept ({len(data)} bytes)"
            return None
        listed = self._listed.get(key)
        if listed is not None and listed.etag == etag and listed.size != len(data):
            return f"it came {len(data)} of the {listed.size} bytes the listing gave"
        return None

    def _too_large(self, key: str, size: int | None, said_by: str) -> RefusedFile:
        shown = f"{said_by} gives it {size} bytes" if size is not None else "it is larger"
        return RefusedFile(key, f"{shown}, over the {self.max_bytes}-byte limit")

    def _fetch(self, key: str) -> tuple[bytes, str, str | None, float | None, bool]:
        """One GET: body, ETag, the MD5 kept in the metadata, `edited`, and whether the ETag
        may be read as an MD5 (not for KMS-encrypted objects)."""
        from memsync.stores.blobhttp import TooLarge

        listed = self._listed.get(key)
        if listed is not None and listed.size > self.max_bytes:
            raise self._too_large(key, listed.size, "the listing")
        try:
            response = self._request("get", "GET", key)
        except TooLarge as exc:
            raise self._too_large(key, exc.size, "the server's answer") from None
        headers = response.headers
        kms = (headers.get("x-amz-server-side-encryption") or "").startswith("aws:kms")
        return (
            response.body,
            quote_etag(headers.get("ETag")),
            headers.get(MD5_HEADER),
            parse_edited(headers.get(EDITED_HEADER)),
            not kms and not headers.get("x-amz-server-side-encryption-customer-algorithm"),
        )

    def get(self, key: str) -> tuple[bytes, str]:
        data, etag, _ = self.fetch(key)
        return data, etag

    def fetch(self, key: str) -> tuple[bytes, str, float | None]:
        problem = ""
        for _ in range(GET_ATTEMPTS):
            data, etag, md5, edited, etag_is_md5 = self._fetch(key)
            problem = self.verify(key, data, etag if etag_is_md5 else "", md5) or ""
            if not problem and not md5 and not etag_is_md5:
                problem = self.verify(key, data, etag, None) or ""
            if not problem:
                return data, etag, edited
        raise StoreError(
            f"{key} was not pulled: {problem}, {GET_ATTEMPTS} times (a proxy or the network "
            "is damaging answers); nothing was written, try again later"
        )

    def _put(self, key: str, data: bytes, condition: dict[str, str], edited: float | None) -> str:
        md5 = md5_base64(data)
        headers = {
            "Content-Type": MARKDOWN,
            "Content-MD5": md5,  # the service refuses a body that differs
            MD5_HEADER: md5,
            **condition,
        }
        if edited is not None:
            headers[EDITED_HEADER] = repr(float(edited))
        try:
            with self._gate():
                if "If-Match" in condition:  # in the form the service matches, once checked
                    headers["If-Match"] = self._if_match(condition["If-Match"])
                response = self._request("put", "PUT", key, headers=headers, body=data)
        except NotFound as exc:
            if "If-Match" in condition and "bucket" not in str(exc):
                raise PreconditionFailed(f"{key} is gone from the remote") from None
            raise
        except PreconditionFailed:
            if "If-None-Match" in condition:
                raise AlreadyExists(f"{key} already exists on the remote") from None
            raise
        return self.etag_of(response)

    def etag_of(self, response: Response) -> str:
        """The ETag of a write's answer; an answer without one is not S3's."""
        etag = response.headers.get("ETag")
        if not etag:
            raise self._not_s3("", "a write without an ETag")
        return quote_etag(etag)

    def create(self, key: str, data: bytes, edited: float | None = None) -> str:
        return self._put(key, data, {"If-None-Match": "*"}, edited)

    def replace(self, key: str, data: bytes, etag: str, edited: float | None = None) -> str:
        return self._put(key, data, {"If-Match": etag}, edited)

    def _if_match(self, etag: str) -> str:
        """`etag` as this service matches it (writes wait for the conditions check)."""
        return self.conditions.if_match(etag) if self.conditions else quote_etag(etag)

    def delete(self, key: str, etag: str) -> None:
        try:
            with self._gate():
                if self.conditions is not None and not self.conditions.deletes:
                    from memsync.stores.s3probe import unchanged

                    unchanged(self, key, etag)  # the service would not check the ETag
                self._request("delete", "DELETE", key, headers={"If-Match": self._if_match(etag)})
        except PreconditionFailed:
            self._request("head", "HEAD", key)  # NotFound if gone, else it changed
            raise

    def _answers_head(self) -> bool:
        """A HEAD of the bucket: False on its 404, which cannot say why."""
        try:
            self._request("head", "HEAD")
        except NotFound:
            return False
        return True

    def exists(self) -> bool:
        """Whether the bucket is there: a HEAD; its 404 has no body to say whether the bucket
        is missing or the endpoint is not S3, so only then a listing of no keys asks."""
        if self._answers_head():
            return True
        try:
            self._page({"list-type": "2", "max-keys": "0"})
        except NotFound:  # NoSuchBucket
            return False
        return True

    def ensure(self) -> None:
        """Create the bucket if missing (in the configured region). A server that is not S3
        answers the create with a 404 of its own, which `_raise_for` says."""
        if self._answers_head():
            return
        region = self.settings.region
        body = None
        if region not in ("us-east-1", "auto"):  # us-east-1 takes none; R2's region is auto
            body = (
                '<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                f"<LocationConstraint>{region}</LocationConstraint></CreateBucketConfiguration>"
            ).encode()
        response = self.http.request("put", "PUT", self._path(None), body=body)
        if response.status == 409 and _error_code(response.body) == "BucketAlreadyOwnedByYou":
            return
        if response.status == 403:
            raise AuthError(
                f"the {self.credential_kind} may not create the bucket {self.s3_url.bucket!r} "
                f"at {self.where} ({_error_code(response.body) or 403}); give it "
                "s3:CreateBucket, or create the bucket yourself"
            )
        if response.status == 409:
            raise StoreError(
                f"the bucket name {self.s3_url.bucket!r} is taken by another account; "
                "choose another in the remote URL"
            )
        if response.status >= 300:
            self._raise_for(response, None, "PUT")

    def create_advice(self) -> str:
        return f"run `memsync push` to create the bucket {self.s3_url.bucket!r}"

    def server_time(self) -> float | None:
        """The server's clock (the Date header of a HEAD of the bucket), for `doctor`."""
        response = self.http.request("head", "HEAD", self._path(None))
        date = response.headers.get("Date")
        return parse_date(date) if date else None

    @property
    def round_trip(self) -> float | None:
        return self.http.round_trip

    def warm(self, count: int) -> None:
        self.http.warm(count)

    def close(self) -> None:
        from memsync.util import background

        background.finish()  # the check's removals, which may still use a connection
        self.http.close()
