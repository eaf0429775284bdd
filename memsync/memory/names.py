"""One rule for memory file names that every platform can hold.

Linux keeps `User_Pat.md` and `user_pat.md`, or an NFC and an NFD `café`, as two files; the
default file systems of macOS (APFS, case- and normalisation-insensitive) and Windows (NTFS,
case-insensitive) keep each pair as one, so a remote holding both would make those devices
overwrite one with the other. Keys are therefore NFC, and a new name that another name folds
to the same file is refused on the device that creates it, before it reaches the remote."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable


def is_nfc(name: str) -> bool:
    return name.isascii() or unicodedata.is_normalized("NFC", name)


def nfc(name: str) -> str:
    return name if name.isascii() else unicodedata.normalize("NFC", name)


def fold(name: str) -> str:
    """The name as a case-insensitive, normalisation-insensitive file system sees it: two
    names that are one file on macOS (APFS: Unicode case folding, any normal form) or Windows
    (NTFS: both names upper-cased) have the same fold. Upper-casing before folding covers
    both (dotless ı is I on NTFS); full mappings (ß to SS) are wider than NTFS's table, so
    this errs towards refusing."""
    if name.isascii():
        return name.lower()
    decomposed = unicodedata.normalize("NFD", name)
    return unicodedata.normalize("NFC", decomposed.upper().casefold())


_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{d}{n}" for d in ("COM", "LPT") for n in "123456789"]
)


def unportable(name: str) -> str | None:
    """Why Windows cannot hold the file `name` (a relative path), or None: a device name
    (CON, NUL, COM1...) with any extension, or a name ending in a space or a dot, which
    Windows drops. Checked on the device that creates the file, as `collisions` is."""
    for segment in name.split("/"):
        stem = segment.split(".")[0].rstrip(" ")
        if stem.upper() in _WINDOWS_DEVICES:
            return (
                f"{stem!r} is a device name on Windows (like CON, NUL, COM1), which cannot "
                "hold such a file; rename it"
            )
        if segment != segment.strip(" ") or segment.endswith("."):
            return (
                f"the name {segment!r} starts or ends with a space or ends with a dot, which "
                "Windows drops from file names; rename it"
            )
    return None


def local_key(dirpath: str, fname: str) -> str:
    """The NFC spelling of `fname` where this file system finds the same file under it (macOS
    may list a name decomposed); else `fname` as listed (`collisions` then refuses it if new)."""
    if is_nfc(fname):
        return fname
    composed = nfc(fname)
    try:
        if os.path.samefile(os.path.join(dirpath, fname), os.path.join(dirpath, composed)):
            return composed
    except OSError:
        pass
    return fname


def collisions(new: Iterable[str], known: Iterable[str]) -> dict[str, str]:
    """The new names to refuse, each with the reason: one clause naming the other file.

    `known` are names that already exist remotely or in the last-synced records (never
    refused: the remote already holds them); `new` are names only this device has. A new name
    is refused when it is not NFC, or when it folds like another name and is not the one to
    keep: the known one, else the first NFC one of the new ones in sorted order. Order of the inputs
    does not matter."""
    known_set = set(known)
    new_set = set(new) - known_set
    groups: dict[str, list[str]] = {}
    for name in known_set | new_set:
        groups.setdefault(fold(name), []).append(name)
    refused: dict[str, str] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort()
        keep = next(
            (n for n in group if n in known_set),
            next((n for n in group if is_nfc(n)), group[0]),
        )
        for name in group:
            if name in new_set and name != keep and nfc(name) == nfc(keep):
                # the two names print alike: say which is which by how they are spelled
                this = "decomposed (Unicode NFD)" if not is_nfc(name) else "composed (NFC)"
                other = "composed (NFC)" if is_nfc(keep) else "decomposed (NFD)"
                refused[name] = (
                    f"this is {keep} spelled with its accents {this}, the other file's "
                    f"{other}: macOS and Windows keep the two as one file; merge this one "
                    "into the other and delete it"
                )
            elif name in new_set and name != keep:
                refused[name] = (
                    f"its name differs from {keep} only by letter case or Unicode form, and "
                    "macOS and Windows keep such names as one file; rename it, or merge it "
                    f"into {keep}"
                )
    for name in sorted(new_set - set(refused)):
        if not is_nfc(name):
            refused[name] = (
                "its name spells accented letters decomposed (Unicode NFD: a letter, then its "
                "accent), which macOS and Windows cannot tell apart from the composed "
                f"spelling; rename it to the composed {nfc(name)} (typing the name again "
                "usually gives it)"
            )
    return refused
