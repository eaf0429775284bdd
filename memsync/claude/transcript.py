"""Claude Code session transcripts: find one, read it defensively, and boil it down to text.

A transcript is `<claude config dir>/projects/<slug>/<session-id>.jsonl`, one JSON record a line.
Its format is not a stable API: records this reader does not understand are skipped and counted,
never fatal. What is kept: user and assistant text, one line per tool call, short tool results.
What is dropped: thinking blocks, long tool outputs, and the middle of an over-long session.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memsync.context import config, identity
from memsync.privacy.scanner import redact
from memsync.util.errors import UserError

MAX_CHARS = 120_000  # what is sent to the model, at most (about 30k tokens)
MAX_MESSAGE_CHARS = 6_000  # one user or assistant message, at most
MAX_RESULT_CHARS = 400  # tool results longer than this are dropped, only their size is kept
MAX_TOOL_SUMMARY = 160
MAX_LINE_BYTES = 16 * 1024 * 1024  # a single record larger than this is skipped unread

# record types Claude Code writes that carry nothing for a digest
IGNORED_TYPES = frozenset(
    {"summary", "system", "file-history-snapshot", "queue-operation", "progress", "attachment"}
)
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# input fields that say best what a tool call did, in order of preference
_SUMMARY_KEYS = (
    "command",
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
    "skill",
)


@dataclass
class Transcript:
    """A session boiled down to text for the model, with what reading it skipped."""

    path: Path | None
    session_id: str
    text: str
    user_turns: int = 0
    records: int = 0  # non-blank lines read
    kept: int = 0  # records that contributed text
    malformed: int = 0  # lines that are not a JSON object
    unknown: int = 0  # records of a type (or shape) this reader does not understand
    ignored: int = 0  # known record types with nothing for a digest
    truncated: int = 0  # characters cut from the middle to stay within the bound
    started: datetime | None = None
    ended: datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    @property
    def minutes(self) -> int | None:
        if self.started is None or self.ended is None:
            return None
        return max(0, round((self.ended - self.started).total_seconds() / 60))

    def describe(self) -> str:
        """One line on what was read, for logs and `--dry-run`."""
        parts = [f"{self.records} record(s)", f"{self.user_turns} user turn(s)"]
        if self.malformed:
            parts.append(f"{self.malformed} malformed skipped")
        if self.unknown:
            parts.append(f"{self.unknown} unknown skipped")
        if self.truncated:
            parts.append(f"{self.truncated} characters cut from the middle")
        return ", ".join(parts)


# --- finding a transcript ------------------------------------------------------------------


def projects_dir() -> Path:
    return config.claude_config_dir() / "projects"


def project_transcripts_dir(cwd: Path) -> Path:
    """Where Claude Code keeps the transcripts of the project containing `cwd`."""
    root = identity.find_git_root(cwd) or cwd
    slug = config.project_slug(root)
    candidate = projects_dir() / slug
    if len(slug) > 200 and not candidate.is_dir():
        matches = sorted(p for p in projects_dir().glob(f"{slug[:200]}-*") if p.is_dir())
        if len(matches) == 1:
            return matches[0]
    return candidate


def find_transcript(
    cwd: Path | None = None, session: str | None = None, path: str | Path | None = None
) -> Path:
    """The transcript chosen by `path`, else by `session` id, else this project's latest."""
    if path is not None:
        chosen = Path(path).expanduser()
        if not chosen.is_file():
            raise UserError(f"the transcript {chosen} does not exist or is not a file")
        return chosen
    cwd = (cwd or Path.cwd()).resolve()
    directory = project_transcripts_dir(cwd)
    if session:
        if not _SESSION_ID.match(session):
            raise UserError(f"{session!r} is not a session id (letters, digits, '-' and '_')")
        candidate = directory / f"{session}.jsonl"
        if candidate.is_file():
            return candidate
        others = sorted(projects_dir().glob(f"*/{session}.jsonl"))
        if others:
            return others[0]
        raise UserError(f"no transcript for session {session} under {projects_dir()}")
    try:
        files = [p for p in directory.glob("*.jsonl") if p.is_file()]
    except OSError:
        files = []
    if not files:
        raise UserError(f"no session transcripts in {directory}; pass --session or --transcript")
    return max(files, key=lambda p: (p.stat().st_mtime, p.name))


# --- reading one ----------------------------------------------------------------------------


def _clip(text: str, limit: int, what: str = "characters") -> str:
    """`text` within `limit` characters: its start and its end, with a note of the cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} {what} omitted …]\n{text[-tail:]}"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _summarise_input(tool_input: Any) -> str:
    if isinstance(tool_input, dict):
        for key in _SUMMARY_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                return _one_line(value, MAX_TOOL_SUMMARY)
        if not tool_input:
            return ""
        try:
            return _one_line(json.dumps(tool_input, ensure_ascii=False), MAX_TOOL_SUMMARY)
        except (TypeError, ValueError):
            return ""
    if isinstance(tool_input, str):
        return _one_line(tool_input, MAX_TOOL_SUMMARY)
    return ""


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return ""


def _timestamp(record: dict[str, Any]) -> datetime | None:
    value = record.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.astimezone()


def _blocks(record: dict[str, Any]) -> list[Any] | None:
    """A message record's content blocks (a plain string is one text block), or None for a
    shape that holds none."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    return None


class _Reader:
    def __init__(self, path: Path | None) -> None:
        self.t = Transcript(path, path.stem if path else "", "")
        self.pieces: list[str] = []
        self.session_ids: list[str] = []

    def line(self, raw: str) -> None:
        if not raw.strip():
            return
        self.t.records += 1
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            self.t.malformed += 1
            return
        if not isinstance(record, dict):
            self.t.malformed += 1
            return
        try:
            self.record(record)
        except Exception:  # a record of a shape we did not foresee: skip it
            self.t.unknown += 1

    def record(self, record: dict[str, Any]) -> None:
        """Take in one parsed record: a user's or the assistant's message becomes pieces of
        the transcript; sidechains and bookkeeping records count as ignored, other shapes as
        unknown."""
        kind = record.get("type")
        if kind in IGNORED_TYPES or record.get("isSidechain") is True:
            self.t.ignored += 1
            return
        blocks = _blocks(record) if kind in ("user", "assistant") else None
        if blocks is None:
            self.t.unknown += 1
            return
        self._when_and_session(record)
        before = len(self.pieces)
        user_text = False
        for block in blocks:
            piece, is_text = self._piece(str(kind), block)  # user or assistant
            if piece is not None:
                self.pieces.append(piece)
                user_text = user_text or (is_text and kind == "user")
        if user_text and record.get("isMeta") is not True:
            self.t.user_turns += 1
        if len(self.pieces) > before:
            self.t.kept += 1

    def _when_and_session(self, record: dict[str, Any]) -> None:
        """The transcript's first and last times, and its session (the first one named)."""
        stamp = _timestamp(record)
        if stamp is not None:
            self.t.started = self.t.started or stamp
            self.t.ended = stamp
        sid = record.get("sessionId")
        if isinstance(sid, str) and sid and not self.session_ids:
            self.session_ids.append(sid)

    def _piece(self, kind: str, block: Any) -> tuple[str | None, bool]:
        """The line one content block gives (None: nothing of it is kept), and whether it is
        text (what makes a user's message a turn)."""
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, dict):
            return None, False
        btype = block.get("type")
        if btype == "text":
            text = block.get("text")
            if isinstance(text, str) and text.strip():
                return f"[{kind}] {_clip(redact(text.strip()), MAX_MESSAGE_CHARS)}", True
            return None, False
        if btype == "tool_use":
            name = block.get("name") if isinstance(block.get("name"), str) else "tool"
            summary = redact(_summarise_input(block.get("input")))
            return f"[tool] {name}" + (f": {summary}" if summary else ""), False
        if btype == "tool_result":
            return self._tool_result(block), False
        if btype in ("image", "document"):
            return f"[{kind}] ({btype} omitted)", False
        # thinking and redacted_thinking: private reasoning never leaves the machine
        return None, False

    def _tool_result(self, block: dict[str, Any]) -> str:
        text = _result_text(block.get("content")).strip()
        label = "[tool error]" if block.get("is_error") is True else "[tool result]"
        if not text:
            return f"{label} (empty)"
        if len(text) > MAX_RESULT_CHARS:
            return f"{label} ({len(text)} characters omitted)"
        return f"{label} {_one_line(redact(text), MAX_RESULT_CHARS)}"

    def finish(self, max_chars: int) -> Transcript:
        if self.session_ids:
            self.t.session_id = self.session_ids[0]
        text = "\n".join(self.pieces)
        if len(text) > max_chars:
            text, self.t.truncated = _bound(self.pieces, max_chars)
        self.t.text = text
        return self.t


def _bound(pieces: list[str], max_chars: int) -> tuple[str, int]:
    """Keep whole pieces from the start (2/5 of the budget) and the end (the rest)."""
    head_budget = max_chars * 2 // 5
    head: list[str] = []
    used = 0
    for piece in pieces:
        if used + len(piece) + 1 > head_budget:
            break
        head.append(piece)
        used += len(piece) + 1
    tail: list[str] = []
    used_tail = 0
    tail_budget = max_chars - used - 80
    for piece in reversed(pieces[len(head) :]):
        if used_tail + len(piece) + 1 > tail_budget:
            break
        tail.append(piece)
        used_tail += len(piece) + 1
    tail.reverse()
    middle = pieces[len(head) : len(pieces) - len(tail)]
    cut = sum(len(p) + 1 for p in middle)
    marker = f"[… {len(middle)} message(s), {cut} characters omitted from the middle …]"
    return "\n".join([*head, marker, *tail]), cut


def parse_lines(
    lines: list[str] | Any, path: Path | None = None, max_chars: int = MAX_CHARS
) -> Transcript:
    """A transcript from an iterable of JSONL lines (never raises on bad content)."""
    reader = _Reader(path)
    for raw in lines:
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", errors="replace")
        if len(raw) > MAX_LINE_BYTES:
            reader.t.records += 1
            reader.t.unknown += 1
            continue
        reader.line(raw)
    return reader.finish(max_chars)


def read_transcript(path: Path, max_chars: int = MAX_CHARS) -> Transcript:
    """Read a session transcript. Unreadable file → UserError; bad records → skipped, counted."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            return parse_lines(fh, path, max_chars)
    except OSError as exc:
        raise UserError(f"the transcript {path} cannot be read ({exc.strerror})") from None
