"""Token credentials (DefaultAzureCredential), made to fail fast and quietly.

Left alone, with no credential anywhere DefaultAzureCredential spends seconds per attempt
(probing for a managed identity) and every attempt logs a dozen warnings: seconds and a
screenful before "refused". Here the first attempt is bounded, its failure is remembered and
raised as memsync's own AuthError (which no retry repeats), and azure-identity's log stays out
of the terminal. `Bearer` hands each request a token, asking for a new one near its expiry.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from memsync.util.errors import AuthError

FIRST_TOKEN_WITHIN = 2.5  # seconds: a missing credential is reported in under 3 s


class FailFastCredential:
    """A TokenCredential around DefaultAzureCredential that gives up within a bound and says
    what to set, once, for every later request too."""

    def __init__(self, inner: Any, message: str) -> None:
        self.inner = inner
        self.message = message
        self.failed: str | None = None
        self.got_one = False

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        if self.failed:
            raise AuthError(self.failed)
        box: dict[str, Any] = {}

        def fetch() -> None:
            try:
                box["token"] = self.inner.get_token(*scopes, **kwargs)
            except BaseException as exc:  # handed to the caller
                box["error"] = exc

        worker = threading.Thread(target=fetch, name="memsync-token", daemon=True)
        worker.start()
        # once one token came, a refresh may take as long as the identity service needs
        worker.join(None if self.got_one else FIRST_TOKEN_WITHIN)
        if "token" in box:
            self.got_one = True
            return box["token"]
        error = box.get("error")
        if error is None:
            self.failed = f"{self.message} (no token within {FIRST_TOKEN_WITHIN:g} s)"
        elif type(error).__name__ == "CredentialUnavailableError" or (
            "from the included credentials" in str(error)  # every kind tried was unavailable
        ):
            self.failed = self.message
        elif type(error).__name__ == "ClientAuthenticationError":
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            self.failed = f"signing in to Azure for a token failed ({first[:200]}); {self.message}"
        else:
            raise error
        raise AuthError(self.failed)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close:
            close()


STORAGE_SCOPE = "https://storage.azure.com/.default"
REFRESH_BEFORE = 300  # seconds before its expiry a token is replaced


class Bearer:
    """The bearer token for each request: the credential's, kept until it nearly expires."""

    def __init__(self, credential: Any) -> None:
        self.credential = credential
        self._token: Any = None
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if self._token is None or self._token.expires_on - REFRESH_BEFORE < time.time():
                self._token = self.credential.get_token(STORAGE_SCOPE)
            return str(self._token.token)


def token_credential(no_credential: str) -> FailFastCredential:
    """`no_credential`: the sentence for a device with no credential at all."""
    from azure.identity import DefaultAzureCredential

    for name in ("azure.identity", "azure.core.pipeline.policies.http_logging_policy"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return FailFastCredential(DefaultAzureCredential(), no_credential)
