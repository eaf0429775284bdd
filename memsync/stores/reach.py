"""Where each kind of remote is reached, for one cheap look before a hook trusts the network
again (memsync.sync.offline asks and knows no schemes).

A folder remote is there or not. A network remote is reached at the host and port its store
connects to first: the proxy HTTP(S)_PROXY or ALL_PROXY names for it (NO_PROXY honoured), else
its endpoint — an Azure URL's own host; S3's endpoint as the AWS CLI finds it
(`AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the profile's `endpoint_url`, else the region's AWS
endpoint); a memory store's `ANTHROPIC_BASE_URL`, else the API's. An in-process remote
(memory://) and a setting this cannot read have no address: the probe then says "try", and the
store's own requests report what is wrong.
"""

from __future__ import annotations

import os
import socket
from typing import NamedTuple
from urllib.parse import urlsplit

from memsync.util.errors import ConfigError

ANTHROPIC_API = "https://api.anthropic.com"  # the anthropic SDK's default base URL


class Address(NamedTuple):
    host: str
    port: int


def folder(url: str) -> str | None:
    """The local path of a folder remote (file://), None for any other remote."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    from memsync.util.portable import file_url_path

    try:
        return file_url_path(parts.netloc, parts.path)
    except ValueError:
        return None


def endpoint(url: str) -> tuple[str, str] | None:
    """(scheme, host[:port]) of the service a network remote's store sends its requests to;
    None for a folder or an in-process remote."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:  # Azure Blob
        return parts.scheme, parts.netloc.rpartition("@")[2]
    if parts.scheme == "s3":
        from memsync.stores.s3auth import endpoint_for

        where = endpoint_for(parts.netloc)
        return where.scheme, where.netloc
    if parts.scheme == "memstore":
        base = urlsplit(os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API)
        return (base.scheme or "https"), base.netloc
    return None


def address(url: str) -> Address | None:
    """The host and port a network remote's first connection goes to (its proxy's, if one
    applies); None where there is no network in between or it cannot be told."""
    try:
        found = endpoint(url)
        if found is None or not found[1]:
            return None
        from memsync.stores.blobhttp import proxy_for, split_netloc

        scheme, netloc = found
        host, port = split_netloc(netloc, scheme)
        proxy = proxy_for(scheme, host)
    except ConfigError:
        return None
    return Address(proxy.host, proxy.port) if proxy else Address(host, port)


def unreachable(url: str, timeout: float) -> str | None:
    """Why the remote `url` looks unreachable, from one cheap attempt (a look at the folder, a
    TCP connect within `timeout`); None if it answers or there is nothing to try."""
    path = folder(url)
    if path is not None:
        return None if os.path.isdir(path) else f"the folder {path} is not there"
    where = address(url)
    if where is None:
        return None
    try:
        with socket.create_connection(where, timeout=timeout):
            return None
    except OSError as exc:
        return f"{where.host}:{where.port}: {exc.strerror or exc}"
