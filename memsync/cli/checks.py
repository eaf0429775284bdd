"""Argument checks every command runs before it touches anything: a wrong value is a usage
error (exit 2) in one sentence naming the option and what it accepts, the same wording on
every command."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from memsync.util.errors import UsageError


def choice(option: str, value: str, allowed: Iterable[str]) -> str:
    allowed = list(allowed)
    if value not in allowed:
        raise UsageError(f"{option} takes {_either(allowed)}, not {value!r}")
    return value


def _either(values: list[str]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


def day(option: str, text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option} {text!r} is not a date like 2026-11-22") from None


def number(option: str, value: float | None, low: float, high: float | None = None) -> None:
    if value is None:
        return
    if value < low or (high is not None and value > high):
        bound = f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
        raise UsageError(f"{option} must be {bound}, not {value:g}")


def memory_type(option: str, value: str | None) -> str | None:
    from memsync.memory.memtypes import TYPES

    if value is not None and (value not in TYPES or value == "index"):
        raise UsageError(
            f"{option} {value!r} is not a memory type; the types are "
            f"{', '.join(t for t in TYPES if t != 'index')}"
        )
    return value


def secret_kinds(kinds: Iterable[str]) -> None:
    """`--allow KIND`: each a kind of secret the scanner finds."""
    from memsync.privacy.scanner import KINDS

    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise UsageError(
            f"--allow {unknown[0]!r} is not a kind of secret memsync finds; "
            f"use one of {', '.join(KINDS)}"
        )
