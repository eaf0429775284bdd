"""What may leave the machine: the checks every file passes before a push, and that every
file from the remote passes before it is written here."""

from __future__ import annotations

import re
from collections.abc import Iterable

from memsync.memory.frontmatter import DEFAULT_MAX_BYTES, Document, field
from memsync.util.errors import KeptLocal, RefusedFile

# a segment's runs of parts grow as the square of its parts: past this many, only the segment
# and its words are scanned
_MAX_PARTS = 12


def _name_variants(name: str) -> list[str]:
    """The spans of `name` that could hold a secret: each part between `/` and `_` separators
    and each run of neighbouring parts (`_` both splits words and occurs inside keys)."""
    out = [name]
    for segment in re.split(r"[/\\]", name):
        # `_` is a word character: a key right after `user_` has no word boundary before it
        parts = segment.split("_")
        if len(parts) > _MAX_PARTS:  # a pathological name: its whole and its words
            out += [segment, " ".join(parts)]
            continue
        out += [
            "_".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)
        ]
    return list(dict.fromkeys(out))


def _name_findings(name: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) in `name` of every secret its spans hold."""
    from memsync.privacy.scanner import scan

    found = []
    for variant in _name_variants(name):
        if not variant:
            continue
        findings = scan(variant)
        for m in re.finditer(re.escape(variant), name) if findings else ():
            found += [(f.kind, m.start() + f.start, m.start() + f.end) for f in findings]
    return found


def name_secret(name: str) -> str | None:
    """The kind of secret a file or folder name holds (`aws_access_key` ...), or None. A name
    is copied to the remote and into MEMORY.md like a file's text, so it is scanned too."""
    found = _name_findings(name)
    return found[0][0] if found else None


def shown_name(name: str) -> str:
    """`name` as it may be printed: every secret in it replaced by `***` (never echoed)."""
    found = _name_findings(name)
    if not found:
        return name
    hidden = [False] * len(name)
    for _, start, end in found:
        hidden[start:end] = [True] * (end - start)
    out, prev = [], False
    for ch, h in zip(name, hidden, strict=True):
        if not h:
            out.append(ch)
        elif not prev:
            out.append("***")
        prev = h
    return "".join(out)


def check_outbound(
    name: str,
    data: bytes,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allow: Iterable[str] = (),
    allow_with: str = "memsync push --allow {kind} {name}",
) -> Document:
    """Validate a file for upload, or raise RefusedFile saying why (never the secret). Every
    path that writes memory to the remote calls this; `allow_with` is the command that would
    send the file anyway, named in the refusal."""
    from memsync.privacy.scanner import KINDS, scan

    kind = name_secret(name)
    if kind is not None:
        raise RefusedFile(
            name,
            f"its name looks like it holds a secret ({KINDS.get(kind, kind)}), and names are "
            "copied to the remote like the text: rename it",
        )
    from memsync.memory.memtypes import check  # a no-op sync checks no file: not imported

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
            f"or allow it with `{allow_with.format(kind=first.kind, name=name)}`",
        )
    return doc


def check_inbound(name: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Validate a file that came from the remote before writing it into the memory dir."""
    from memsync.memory.memtypes import check

    return check(name, data, max_bytes)
