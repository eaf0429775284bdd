"""What may leave the machine: the checks every file passes before a push, and that every
file from the remote passes before it is written here."""

from __future__ import annotations

from collections.abc import Iterable

from memsync.errors import KeptLocal, RefusedFile
from memsync.memory import DEFAULT_MAX_BYTES, Document, check, field


def check_outbound(
    name: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES, allow: Iterable[str] = ()
) -> Document:
    """Validate a local file for upload, or raise RefusedFile saying why (never the secret)."""
    from memsync.scanner import KINDS, scan

    doc = check(name, data, max_bytes)
    meta = doc.meta or {}
    sensitivity = str(field(meta, "sensitivity") or "").lower()
    if sensitivity == "high" and field(meta, "consent") is not True:
        raise KeptLocal(
            name, "it is marked 'sensitivity: high' without 'consent: true', so it stays local"
        )
    allowed = set(allow)
    extra = field(meta, "allow_sensitive")
    if isinstance(extra, list):
        allowed |= {str(k) for k in extra}
    elif isinstance(extra, str):
        allowed.add(extra)
    findings = scan(data.decode("utf-8"), allow=allowed)
    if findings:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        label = KINDS.get(first.kind, first.kind)
        raise RefusedFile(
            name,
            f"line {first.line} looks like a secret or personal data: {label}{more}; remove it, "
            f"or allow it with `memsync push --allow {first.kind} {name}`",
        )
    return doc


def check_inbound(name: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Validate a file that came from the remote before writing it into the memory dir."""
    return check(name, data, max_bytes)
