"""Where an S3 remote's credential, region and endpoint come from, as the AWS CLI takes them,
and the Signature Version 4 that signs each request with them.

The order is the CLI's (botocore's default chain):

1. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`) in the environment;
2. the profile `AWS_PROFILE` (else `AWS_DEFAULT_PROFILE`, else `default`): its keys in the shared
   credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else ~/.aws/credentials), then in the
   config file (`AWS_CONFIG_FILE`, else ~/.aws/config, section `[profile NAME]`);
3. what only botocore can resolve (assume-role, SSO, `credential_process`, web identity, a
   container's credentials): loaded lazily, only then, so a static key costs no import of it.

The region is `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`, else us-east-1. The
CAs an https:// endpoint is checked against: `AWS_CA_BUNDLE` or the profile's `ca_bundle` if
set, else those memsync.stores.tls chooses for every remote. The
endpoint is `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the profile's `endpoint_url` (also inside
its `s3 =` block), else AWS's regional endpoint. A custom endpoint (R2, MinIO, a test server) is
addressed path-style (`/BUCKET/KEY`), AWS virtual-hosted (`BUCKET.s3.REGION.amazonaws.com`)
unless the bucket's name has a dot (which the wildcard certificate does not cover).

Signing is SigV4 over the exact bytes sent: the path as quoted on the wire, the query sorted,
every header sent (Host as http.client writes it), the body's SHA-256.
"""

from __future__ import annotations

import configparser
import hashlib
import hmac
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, urlsplit

from memsync.util.errors import ConfigError

DEFAULT_REGION = "us-east-1"
ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
# profile settings that name a way to get a credential only botocore's chain implements
_CHAIN_SETTINGS = (
    "role_arn",
    "credential_process",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
    "credential_source",
)
_CHAIN_ENV = (
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)
NO_CREDENTIAL = (
    "no AWS credential found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
    "to a profile in ~/.aws/credentials or ~/.aws/config (aws configure, aws sso login)"
)


class AwsCredential(NamedTuple):
    access_key: str
    secret_key: str
    token: str = ""  # a session token (temporary credentials)
    kind: str = "AWS credential"  # what to call it in messages


class S3Settings(NamedTuple):
    """Everything a store needs besides the bucket: how to reach it and sign for it."""

    scheme: str
    netloc: str
    region: str
    path_style: bool
    custom_endpoint: bool
    credential: AwsCredential
    ca_bundle: str = ""  # AWS_CA_BUNDLE or the profile's ca_bundle: the CAs to trust instead


def _profile_name() -> tuple[str, str | None]:
    """The profile and the variable that named it (None: the default)."""
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        if os.environ.get(var):
            return os.environ[var], var
    return "default", None


def _file(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value).expanduser() if value else Path.home() / ".aws" / default


def _read_ini(path: Path) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(default_section="\0none")
    try:
        parser.read_string(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        message = f"the AWS file {path} cannot be read ({reason}); fix or move it"
        raise ConfigError(message) from None
    return parser


def _section(parser: configparser.RawConfigParser, *names: str) -> dict[str, str] | None:
    for name in names:
        if parser.has_section(name):
            return {k.lower(): v.strip() for k, v in parser.items(name)}
    return None


def _nested(value: str) -> dict[str, str]:
    """A config file's nested block (`s3 =` followed by indented `key = value` lines)."""
    out = {}
    for line in value.splitlines():
        name, sep, setting = line.partition("=")
        if sep:
            out[name.strip().lower()] = setting.strip()
    return out


class Profile(NamedTuple):
    name: str
    named_by: str | None
    config: dict[str, str]  # the config file's section (empty if none)
    credentials: dict[str, str]  # the credentials file's section (empty if none)
    found: bool


def load_profile() -> Profile:
    name, named_by = _profile_name()
    config = _section(
        _read_ini(_file("AWS_CONFIG_FILE", "config")),
        *((f"profile {name}", name) if name == "default" else (f"profile {name}",)),
    )
    creds = _section(_read_ini(_file("AWS_SHARED_CREDENTIALS_FILE", "credentials")), name)
    return Profile(
        name, named_by, config or {}, creds or {}, config is not None or creds is not None
    )


def _static(values: Mapping[str, str], kind: str) -> AwsCredential | None:
    key, secret = values.get("aws_access_key_id"), values.get("aws_secret_access_key")
    if key and secret:
        return AwsCredential(key, secret, values.get("aws_session_token") or "", kind)
    return None


def resolve_credential(profile: Profile) -> AwsCredential:
    """The first credential in the AWS CLI's order (see the module's docstring)."""
    env = os.environ
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        token = env.get("AWS_SESSION_TOKEN") or env.get("AWS_SECURITY_TOKEN") or ""
        kind = "AWS session credential" if token else "AWS access key"
        return AwsCredential(
            env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], token, f"{kind} (environment)"
        )
    if env.get("AWS_ACCESS_KEY_ID") or env.get("AWS_SECRET_ACCESS_KEY"):
        have, lack = (
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
            if env.get("AWS_ACCESS_KEY_ID")
            else ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID")
        )
        raise ConfigError(f"{have} is set but {lack} is not: set both (or neither)")
    if profile.named_by and not profile.found:
        raise ConfigError(
            f"the AWS profile {profile.name!r} ({profile.named_by}) is in neither "
            f"{_file('AWS_SHARED_CREDENTIALS_FILE', 'credentials')} nor "
            f"{_file('AWS_CONFIG_FILE', 'config')}; run `aws configure --profile {profile.name}`"
        )
    kind = f"AWS profile {profile.name!r}"
    static = _static(profile.credentials, kind) or _static(profile.config, kind)
    if static is not None:
        return static
    if any(s in profile.config for s in _CHAIN_SETTINGS) or any(env.get(v) for v in _CHAIN_ENV):
        return _from_botocore(profile)
    raise ConfigError(NO_CREDENTIAL)


def _from_botocore(profile: Profile) -> AwsCredential:
    """Assume-role, SSO, credential_process, web identity: resolved by botocore's own chain."""
    try:
        import botocore.session
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise ConfigError(
            f"the AWS profile {profile.name!r} gets its credential through assume-role, SSO or a "
            "credential process, which needs botocore: pip install 'memsync[s3]'"
        ) from None
    session = botocore.session.Session(profile=profile.name if profile.found else None)
    try:
        creds = session.get_credentials()
        frozen = creds.get_frozen_credentials() if creds is not None else None
    except (BotoCoreError, ClientError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"the AWS profile {profile.name!r} did not give a credential ({first}); "
            "sign in again (aws sso login) or check the profile"
        ) from None
    if frozen is None or not frozen.access_key:
        raise ConfigError(NO_CREDENTIAL)
    return AwsCredential(
        frozen.access_key,
        frozen.secret_key,
        frozen.token or "",
        f"AWS profile {profile.name!r} ({getattr(creds, 'method', 'botocore')})",
    )


def _endpoint(profile: Profile) -> str | None:
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        if os.environ.get(var):
            return os.environ[var]
    nested = _nested(profile.config.get("s3", ""))
    return nested.get("endpoint_url") or profile.config.get("endpoint_url") or None


class Endpoint(NamedTuple):
    """Where a bucket's requests go, and how they address it."""

    scheme: str
    netloc: str  # host[:port]
    region: str
    path_style: bool
    custom: bool  # an endpoint the environment or the profile names (not AWS's own)


def endpoint_for(bucket: str, profile: Profile | None = None) -> Endpoint:
    """The endpoint and region for `bucket`, as the AWS CLI would find them (no credential
    is looked at: the offline probe asks this alone)."""
    profile = profile or load_profile()
    region = (
        os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or profile.config.get("region")
        or DEFAULT_REGION
    )
    endpoint = _endpoint(profile)
    addressing = _nested(profile.config.get("s3", "")).get("addressing_style", "auto")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"the S3 endpoint {endpoint!r} (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the "
                "profile's endpoint_url) is not an http:// or https:// address"
            )
        if parts.path.strip("/") or parts.query or parts.fragment:
            raise ConfigError(
                f"the S3 endpoint {endpoint!r} (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the "
                "profile's endpoint_url) has a path, which memsync does not send requests "
                "under: give the scheme, host and port only"
            )
        scheme, netloc = parts.scheme, parts.netloc
        path_style = addressing != "virtual"
    else:
        scheme, netloc = "https", f"s3.{region}.amazonaws.com"
        path_style = addressing == "path" or "." in bucket
        if not path_style:
            netloc = f"{bucket}.{netloc}"
    return Endpoint(scheme, netloc, region, path_style, bool(endpoint))


def settings_for(bucket: str) -> S3Settings:
    """Endpoint, region and credential for `bucket`, as the AWS CLI would find them."""
    profile = load_profile()
    where = endpoint_for(bucket, profile)
    ca_bundle = os.environ.get("AWS_CA_BUNDLE") or profile.config.get("ca_bundle") or ""
    return S3Settings(
        where.scheme,
        where.netloc,
        where.region,
        where.path_style,
        where.custom,
        resolve_credential(profile),
        os.path.expanduser(ca_bundle) if ca_bundle else "",
    )


def _uri_encode(value: str) -> str:
    return quote(value, safe="-_.~", errors="surrogateescape")


def host_header(host: str, port: int, scheme: str) -> str:
    """The Host header as http.client writes it (and so as it must be signed)."""
    shown = f"[{host}]" if ":" in host else host
    return shown if port == (443 if scheme == "https" else 80) else f"{shown}:{port}"


class SigV4:
    """AWS Signature Version 4 for one credential, region and service."""

    def __init__(self, credential: AwsCredential, region: str, service: str = "s3") -> None:
        self.credential, self.region, self.service = credential, region, service
        self._keys: dict[str, bytes] = {}  # signing key by date (it changes daily)

    def _signing_key(self, day: str) -> bytes:
        key = self._keys.get(day)
        if key is None:
            key = ("AWS4" + self.credential.secret_key).encode()
            for part in (day, self.region, self.service, "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            self._keys = {day: key}
        return key

    def sign(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        headers: dict[str, str],
        body: bytes | None,
        host: str,
        now: float | None = None,
    ) -> None:
        """Add x-amz-date, x-amz-content-sha256, the session token and Authorization to
        `headers`, signing every header in it and Host. `path` is as quoted on the wire."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        day = stamp[:8]
        headers["x-amz-date"] = stamp
        headers["x-amz-content-sha256"] = (
            hashlib.sha256(body).hexdigest() if body else (EMPTY_SHA256)
        )
        if self.credential.token:
            headers["x-amz-security-token"] = self.credential.token
        canonical = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
        canonical["host"] = host
        names = sorted(canonical)
        signed = ";".join(names)
        query_text = "&".join(
            f"{_uri_encode(k)}={_uri_encode(v)}" for k, v in sorted(query.items())
        )
        request = "\n".join(
            (
                method,
                path,
                query_text,
                "".join(f"{n}:{canonical[n]}\n" for n in names),
                signed,
                headers["x-amz-content-sha256"],
            )
        )
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        text = f"{ALGORITHM}\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
        signature = hmac.new(self._signing_key(day), text.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = (
            f"{ALGORITHM} Credential={self.credential.access_key}/{scope}, "
            f"SignedHeaders={signed}, Signature={signature}"
        )
