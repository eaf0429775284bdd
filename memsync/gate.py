"""What may leave the machine: the checks every file passes before a push, and that every
file from the remote passes before it is written here."""

from __future__ import annotations

import re
from collections.abc import Iterable

from memsync.errors import KeptLocal, RefusedFile
from memsync.memory import DEFAULT_MAX_BYTES, Document, check, field

# '_' and '/' are word characters or separators the text patterns do not split on: a key right
# after `user_` or inside a folder name has no word boundary before it
_NAME_SPLIT = re.compile(r"[_/\\]")


def name_secret(name: str) -> str | None:
    """The kind of secret a file or folder name holds (`aws_access_key` ...), or None. A name
    is copied to the remote and into MEMORY.md like a file's text, so it is scanned too:
    whole, and with `_` and `/` read as spaces."""
    from memsync.scanner import scan

    for variant in dict.fromkeys((name, _NAME_SPLIT.sub(" ", name))):
        findings = scan(variant)
        if findings:
            return findings[0].kind
    return None


def shown_name(name: str) -> str:
    """`name` as it may be printed: a secret in it replaced by `***` (never echoed)."""
    from memsync.scanner import scan

    if name_secret(name) is None:
        return name
    spaced = _NAME_SPLIT.sub(" ", name)
    out = list(name)
    for variant in (name, spaced):
        for finding in scan(variant):
            out[finding.start : finding.end] = ["\0"] * (finding.end - finding.start)
    return re.sub("\0+", "***", "".join(out))


def check_outbound(
    name: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES, allow: Iterable[str] = ()
) -> Document:
    """Validate a local file for upload, or raise RefusedFile saying why (never the secret)."""
    from memsync.scanner import KINDS, scan

    kind = name_secret(name)
    if kind is not None:
        raise RefusedFile(
            name,
            f"its name looks like it holds a secret ({KINDS.get(kind, kind)}), and names are "
            "copied to the remote like the text: rename it",
        )
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
