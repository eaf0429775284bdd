"""Remotes behind one small protocol. `open_store` picks the backend from the URL."""

from __future__ import annotations

from urllib.parse import urlsplit

from memsync.stores.base import MAX_ATTEMPTS, Entry, Stats, Store, check_key
from memsync.util.errors import ConfigError

__all__ = ["MAX_ATTEMPTS", "Entry", "Stats", "Store", "check_key", "open_store"]


def open_store(url: str, prefix: str) -> Store:
    """Open the store for remote `url`, scoped to the project `prefix` inside it, inside the
    encrypting wrapper: it passes a plain remote through and encrypts one whose recipients
    object is there (see stores/crypt.py)."""
    from memsync.stores.crypt import CryptStore

    return CryptStore(_open(url, prefix), url, prefix)


def _open(url: str, prefix: str) -> Store:
    parts = urlsplit(url)
    if parts.scheme == "file":
        from memsync.stores.folder import FolderStore
        from memsync.util.portable import file_url_path

        try:
            folder = file_url_path(parts.netloc, parts.path)
        except ValueError:
            raise ConfigError(f"the remote {url!r} is not a local file:/// URL") from None
        return FolderStore(folder, prefix)
    if parts.scheme == "memstore":
        from memsync.stores.memstore import MemoryStoreStore

        return MemoryStoreStore(url, prefix)
    if parts.scheme == "memory":
        from memsync.stores.memory import MemoryStore

        return MemoryStore.named(parts.netloc + parts.path, prefix)
    if parts.scheme in ("http", "https") and parts.netloc:
        from memsync.stores.azure import AzureStore

        return AzureStore(url, prefix)
    if parts.scheme == "s3":
        from memsync.stores.s3 import S3Store

        return S3Store(url, prefix)
    raise ConfigError(
        f"the remote {url!r} is not a file:/// folder or an Azure Blob URL "
        "(https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX), an S3 URL "
        "(s3://BUCKET/PREFIX) nor a memory store (memstore://memstore_ID[/PREFIX])"
    )
