"""Commitment ids two devices can mint on their own without colliding.

The old scheme, `[c-YYYY-MM-DD-n]` with n counting up from 1, gave two devices that each made
the first promise of a day the same id. Now the last part is four random letters and digits
(`[c-2026-11-25-k3f9]`: 1.7 million choices a day), and the merge keeps both entries if two
ids ever do collide. Old ids stay valid: an id is any `[c-...]` token.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from datetime import date

ID = re.compile(r"\[(c-[A-Za-z0-9_-]+)\]")
_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"  # no 0/o, 1/l: read aloud and typed back
SUFFIX_LENGTH = 4


def new_suffix() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(SUFFIX_LENGTH))


def new_commitment_id(day: date, taken: Iterable[str] = ()) -> str:
    """A fresh id for a promise made on `day`, not among `taken` (ids without brackets)."""
    used = set(taken)
    while True:
        cid = f"c-{day.isoformat()}-{new_suffix()}"
        if cid not in used:
            return cid


def ids_in(text: str) -> set[str]:
    return set(ID.findall(text))
