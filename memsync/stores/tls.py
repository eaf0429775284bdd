"""Which certificate authorities an https:// remote is checked against.

The order curl, requests and OpenSSL agree on: `REQUESTS_CA_BUNDLE` (or `CURL_CA_BUNDLE`), a
file or a directory, replaces the default; otherwise `SSL_CERT_FILE` / `SSL_CERT_DIR`, which
OpenSSL reads itself; otherwise the system's store. certifi is used only where the system has
no store at all (some macOS Pythons). A certificate none of them vouches for is a configuration
error (exit 1) with the variables to set, never an outage: retrying or queueing cannot fix it.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from memsync.util.errors import ConfigError

if TYPE_CHECKING:
    import ssl

_lock = threading.Lock()
_contexts: dict[tuple[str | None, str | None], ssl.SSLContext] = {}

HOW_TO_TRUST = (
    "set SSL_CERT_FILE or REQUESTS_CA_BUNDLE to the CA bundle (file or directory) that signed it"
)


CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR")


def _variable_in_effect() -> tuple[str, str] | None:
    """(name, value) of the first CA variable set, in the order requests reads them."""
    for name in CA_VARIABLES:
        value = os.environ.get(name)
        if value:
            return name, value
    return None


def bundle_from_env() -> str | None:
    """The bundle a variable names, if any (REQUESTS_CA_BUNDLE first, as requests reads it)."""
    found = _variable_in_effect()
    if found is None:
        return None
    name, value = found
    if not os.path.exists(value):
        raise ConfigError(f"{name} names {value}, which does not exist; fix or unset it")
    return value


def verify_paths() -> tuple[str | None, str | None]:
    """(cafile, capath) to verify against; (None, None) means the system's defaults."""
    bundle = bundle_from_env()
    if bundle is None:
        return None, None
    return (None, bundle) if os.path.isdir(bundle) else (bundle, None)


def context() -> ssl.SSLContext:
    """One client context per trust setting, shared by every connection: creating one loads
    the whole CA store, and a context per connection did that 16 times a sync."""
    import ssl

    key = verify_paths()
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            cafile, capath = key
            ctx = ssl.create_default_context(cafile=cafile, capath=capath)
            if key == (None, None) and not _system_store_present():
                _load_certifi(ctx)
            _contexts[key] = ctx
        return ctx


def _system_store_present() -> bool:
    import ssl

    defaults = ssl.get_default_verify_paths()
    return any(p and os.path.exists(p) for p in (defaults.cafile, defaults.capath))


def _load_certifi(ctx: ssl.SSLContext) -> None:
    try:
        import certifi
    except ImportError:
        return
    ctx.load_verify_locations(cafile=certifi.where())


def untrusted(exc: BaseException) -> str | None:
    """The verification failure's reason if `exc` (or what caused it) is an untrusted
    certificate, else None."""
    import ssl

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return current.verify_message or "certificate verify failed"
        for arg in getattr(current, "args", ()):
            if isinstance(arg, BaseException) and id(arg) not in seen:
                found = untrusted(arg)
                if found:
                    return found
        if "CERTIFICATE_VERIFY_FAILED" in str(current):
            return "certificate verify failed"
        current = current.__cause__ or current.__context__
    return None


def untrusted_error(origin: str, reason: str) -> ConfigError:
    """Names the CA variable in effect: one set system-wide (REQUESTS_CA_BUNDLE, say) takes
    priority over an SSL_CERT_FILE given on the command line, and the user must know which."""
    found = _variable_in_effect()
    if found is None:
        how = HOW_TO_TRUST
    else:
        name, value = found
        how = (
            f"the CA bundle in effect is {name}={value} and it does not vouch for it; point "
            f"{name} at the bundle that signed it"
        )
        rank = CA_VARIABLES.index(name)
        above = [n for n in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE") if CA_VARIABLES.index(n) < rank]
        if above:
            how += f", or set {' or '.join(above)}, which take priority"
        shadowed = [n for n in CA_VARIABLES[rank + 1 :] if os.environ.get(n)]
        if shadowed:
            how += f" ({name} takes priority over {', '.join(shadowed)})"
    return ConfigError(f"the TLS certificate of {origin} is not trusted ({reason}); {how}")
