"""Memory files: Markdown with YAML frontmatter, parsed safely and checked before they sync."""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime
    from types import ModuleType
    from typing import Any

INDEX_NAME = "MEMORY.md"
DEFAULT_MAX_BYTES = 1024 * 1024
_FENCE = "---"

# Claude Code (2.1.330, docs/claude-code.md) rewrites the frontmatter of every memory file it
# writes: `name` and `description` stay at the top level, everything else goes under
# `metadata:` (`node_type: memory`, `type`, `originSessionId`, `modified`). memsync's own files
# used to keep `type` and `modified` at the top level. Both shapes are read; a file keeps its own.
NESTED = "metadata"
TOP_LEVEL = ("name", "description")  # at the top level in both shapes


@cache
def _yaml() -> tuple[ModuleType, Any, Any]:
    """PyYAML with its safe loader and dumper, in C when available (parsing is on the hooks'
    hot path), imported on first use: a sync with nothing to read does not load it."""
    from datetime import datetime

    import yaml

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[valid-type,misc]
        """The safe dumper, writing timestamps the way Claude Code does (ISO 8601, `T`, `Z`)."""

    Dumper.add_representer(datetime, _represent_datetime)
    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader), Dumper


def _represent_datetime(dumper: Any, value: datetime) -> Any:
    """`2026-11-24T05:47:59.752Z`, as Claude Code writes `modified`, instead of PyYAML's
    `2026-11-24 05:47:59.752000+00:00`: rewriting a file keeps its timestamps' spelling."""
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", stamp_text(value))


def stamp_text(value: datetime) -> str:
    """A timestamp spelled as Claude Code spells `modified`: ISO 8601 with `T`, milliseconds
    when there are any, and `Z` for UTC."""
    text = value.isoformat(timespec="milliseconds" if value.microsecond else "seconds")
    if value.utcoffset() is not None and not value.utcoffset():
        text = text.removesuffix("+00:00") + "Z"
    return text


def modified_now() -> datetime:
    """The `modified` stamp of a write made now: UTC, to the millisecond, as Claude Code stamps
    it (`stamp_text` spells it; the dumper writes it so). Every writer of `modified` uses it."""
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class FrontmatterError(ValueError):
    """The frontmatter block is missing or malformed; the message says how."""


class Document(NamedTuple):
    """A parsed memory file. `meta` is None for files without frontmatter (MEMORY.md)."""

    meta: dict[str, Any] | None
    body: str

    def render(self) -> str:
        return render(self.meta, self.body)


def split(text: str) -> tuple[str | None, str]:
    """Split text into (frontmatter YAML source, body). No frontmatter → (None, text)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not (text.startswith(_FENCE + "\n") or text.startswith(_FENCE + "\r\n")):
        return None, text
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == _FENCE:
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise FrontmatterError("the frontmatter block opened with '---' is never closed")


# `key: plain words` lines, which is what memory frontmatter almost always is. Such a value is
# a string to YAML unless it starts with an indicator, digit, sign or dot (numbers, dates,
# ~ null, .inf) or is one of the bool/null words; those are left to PyYAML.
_PLAIN = r"\w.,;()/+='\"?!%\-"  # no ':', '#', flow or anchor characters, no tab
_SIMPLE_LINE = re.compile(rf"([A-Za-z_][A-Za-z0-9_-]*): ([^\W\d_](?:[{_PLAIN} ]*[{_PLAIN}])?)")
_YAML_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})
_BLOCK_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):")
_STAMP_LINE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_-]*): (?:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    r"|(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z)"
)


def simple_mapping(source: str) -> dict[str, Any] | None:
    """The frontmatter as YAML would load it, when every line is `key: plain text`, or the
    shape Claude Code writes: such lines and one `metadata:` block of them, indented alike,
    whose values may also be a UTC time as Claude Code stamps it or a UUID (`modified`,
    `originSessionId`); None (use PyYAML) for anything else. A pull checks every file it
    lands, and the PostToolUse hook the file Claude wrote: PyYAML's constructor is most of
    the first's CPU, its import a fifth of the second (docs/benchmarks.md)."""
    data: dict[str, Any] = {}
    block: dict[str, Any] | None = None  # the mapping of the last `key:` line
    indent = ""
    for line in source.split("\n"):
        if not line:
            continue
        if line.startswith(" "):
            rest = line.lstrip(" ")
            if block is None or (indent and line[: len(line) - len(rest)] != indent):
                return None
            indent = line[: len(line) - len(rest)]
            pair = _plain_pair(rest)
            if pair is None:
                return None
            block[pair[0]] = pair[1]
            continue
        if block is not None and not block:  # `key:` with nothing under it: null
            return None
        block, indent = None, ""
        opened = _BLOCK_LINE.fullmatch(line)
        if opened is not None and opened.group(1).lower() not in _YAML_WORDS:
            block = data[opened.group(1)] = {}
            continue
        pair = _plain_pair(line)
        if pair is None:
            return None
        data[pair[0]] = pair[1]
    if block is not None and not block:
        return None
    return data


def _plain_pair(line: str) -> tuple[str, Any] | None:
    """(key, value) of a `key: value` line whose value YAML reads as that text, or as the
    time a UTC stamp `2026-11-24T05:47:59.752Z` names (what PyYAML's timestamp constructor
    makes of it: microseconds cut to six digits, UTC); None for any other line."""
    m = _SIMPLE_LINE.fullmatch(line)
    if m is not None:
        key, value = m.groups()
        if key.lower() in _YAML_WORDS or value.lower() in _YAML_WORDS:
            return None
        return key, value
    m = _STAMP_LINE.fullmatch(line)
    if m is None:
        return None
    key, uuid, *stamp = m.groups()
    if key.lower() in _YAML_WORDS:
        return None
    if uuid is not None:  # no YAML int, float or date: a string
        return key, uuid
    from datetime import datetime, timezone

    year, month, day, hour, minute, second, fraction = stamp
    micro = int((fraction or "")[:6].ljust(6, "0"))
    try:
        when = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            micro,
            tzinfo=timezone.utc,
        )
    except ValueError:  # 2026-02-30: PyYAML fails on it too, with its own message
        return None
    return key, when


def load_yaml(source: str) -> dict[str, Any]:
    """Load a frontmatter mapping with the safe loader, refusing anchors and aliases.

    Aliases are how YAML "billion laughs" bombs work, and memory never needs them.
    """
    simple = simple_mapping(source)
    if simple is not None:
        return simple
    yaml, loader, _ = _yaml()
    try:
        if "&" in source or "*" in source:  # no anchor or alias can be written without them
            for event in yaml.parse(source, Loader=loader):
                if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                    raise FrontmatterError("the frontmatter uses YAML anchors or aliases")
        data = yaml.load(source, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise FrontmatterError(f"the frontmatter is not valid YAML{where} ({problem})") from None
    except FrontmatterError:
        raise
    except ValueError as exc:  # a scalar YAML resolves but cannot build: 0b_, 2026-02-30
        raise FrontmatterError(f"the frontmatter has a value YAML cannot read ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError("the frontmatter is not a mapping of fields")
    return {str(k): v for k, v in data.items()}


def parse(text: str) -> Document:
    source, body = split(text)
    if source is None:
        return Document(None, body)
    return Document(load_yaml(source), body)


def dump_meta(meta: dict[str, Any]) -> str:
    yaml, _, dumper = _yaml()
    return yaml.dump(
        meta,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1000,
    )


def render(meta: dict[str, Any] | None, body: str) -> str:
    if meta is None:
        return body
    return f"{_FENCE}\n{dump_meta(meta)}{_FENCE}\n{body}"


def field(meta: Mapping[str, Any] | None, key: str) -> Any:
    """A frontmatter field in either shape: under `metadata:` (Claude Code's) first, else at the
    top level. None when neither has it."""
    if not meta:
        return None
    nested = meta.get(NESTED)
    if isinstance(nested, dict) and nested.get(key) is not None:
        return nested[key]
    return meta.get(key)


def is_nested(meta: dict[str, Any] | None) -> bool:
    """True for Claude Code's shape: a `metadata:` mapping."""
    return bool(meta) and isinstance(meta.get(NESTED), dict)  # type: ignore[union-attr]


def set_field(meta: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """`meta` with `key` set where this file keeps it: under `metadata:` if the file has that
    mapping (a file Claude Code wrote keeps its shape), else at the top level."""
    out = dict(meta)
    if key in TOP_LEVEL or not is_nested(out):
        out[key] = value
        return out
    nested = dict(out[NESTED])
    nested[key] = value
    out[NESTED] = nested
    out.pop(key, None)  # never the same field in both places
    return out


def name_slug(text: str) -> str:
    """The `name` as Claude Code stores it: kept if already `[a-z0-9_-]+`, else lower-cased with
    every other run of characters turned into one `-` (`Carry-forward` → `carry-forward`)."""
    if re.fullmatch(r"[a-z0-9_-]+", text):
        return text
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError(f"it is not UTF-8 text (bad byte at offset {exc.start})") from None
