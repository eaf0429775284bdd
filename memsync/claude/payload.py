"""The JSON object Claude Code hands a hook on stdin: how much of it is read, and how.

Its own module because both the warm hooks' client (claude/warm.py, which must import little)
and the hooks (claude/hooks.py) read it with the same limit.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the warm hooks' client imports this module: no `typing` for it
if TYPE_CHECKING:
    from typing import Any

MAX_PAYLOAD = 64 * 1024 * 1024  # a Write's payload holds the file twice (input and response)


def read_payload(stream: Any) -> dict[str, Any]:
    """The hook's JSON object; a ValueError naming the problem otherwise."""
    import json

    raw = stream.read(MAX_PAYLOAD + 1) if stream is not None else ""
    if len(raw) > MAX_PAYLOAD:
        raise ValueError(f"the hook payload is larger than {MAX_PAYLOAD >> 20} MB")
    if not raw.strip():
        raise ValueError("the hook payload on stdin is empty")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("the hook payload is not a JSON object")
    return data
