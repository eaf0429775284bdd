"""What the memory tool lets through: a tool path's name, a write's text, the frontmatter
memsync writes for the model.

Paths are checked lexically before they touch the disk; a refused path is described, never
quoted back (it may hold a secret the scanner cannot tell). A write's text passes the checks
every memory file passes before it may leave the machine, and the privacy fields (consent,
allow_sensitive, sensitivity) are never granted through the tool. Each refusal is a
`MemoryToolError` whose text tells the model what to do instead.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date

from memsync.memory import frontmatter as memory
from memsync.memory.memtypes import TYPES, UNKNOWN, type_of
from memsync.memory.names import unportable
from memsync.privacy.gate import check_outbound, name_secret
from memsync.util.errors import RefusedFile

ROOT = "/memories"
INDEX = memory.INDEX_NAME
MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# text-direction controls: a name that displays as something else (`user_\u202egpj.md`)
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BAD_CHARS = re.compile(r'[\\:*?"<>|]')  # what the remote refuses in a key (stores.check_key)
_MODIFIED_LINE = re.compile(
    r"^(?P<lead>\s*modified:\s*)(?P<q>['\"]?)(?P<value>[^'\"\n]*)(?P=q)\s*$"
)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_SECRET_HINT = "; remove it, or allow it with"
_SECRET_LINE = re.compile(r"^line (\d+)")


class MemoryToolError(Exception):
    """A refused or failed command: `str(err)` is what the model reads, saying what to do."""


def name_of(path: object) -> str:
    """The memory-dir-relative name of a tool path ('' for /memories itself), or a
    MemoryToolError saying why the path is refused. Purely lexical: links are the backend's."""
    if not isinstance(path, str) or not path:
        raise MemoryToolError("The path is empty: give a path under /memories.")
    check_characters(path)
    rest = under_root(path)
    if rest:
        check_names(rest)
    return rest


def file_name_of(path: object) -> str:
    """`name_of` for a command on a file: a path ending in `/` names a folder."""
    name = name_of(path)
    if name and isinstance(path, str) and path.endswith("/"):
        raise MemoryToolError(
            "The path ends in '/', which names a folder: give the file's path without the "
            "trailing '/'."
        )
    return name


def check_characters(path: str) -> None:
    """Refuse a path whose characters no memory file name may hold: a name that looks like a
    secret (names go to the remote and into MEMORY.md), control or text-direction
    characters, an overlong path, a percent-escape, or a character some platform refuses."""
    from memsync.privacy.scanner import KINDS

    kind = name_secret(path[:MAX_PATH_CHARS])
    if kind is not None:  # a name goes to the remote and into MEMORY.md; never quoted back
        raise MemoryToolError(
            f"The file or folder name looks like it holds a secret ({KINDS.get(kind, kind)}); "
            "names are copied to other machines like the files: choose a plain name."
        )
    if _CONTROL.search(path) or _BIDI.search(path):
        raise MemoryToolError(
            "The path contains control or text-direction characters (like a newline, NUL "
            "or U+202E), which memory file names cannot hold: use plain characters."
        )
    if len(path) > MAX_PATH_CHARS:
        raise MemoryToolError(f"The path is over {MAX_PATH_CHARS} characters.")
    if _PERCENT_ESCAPE.search(path):
        raise MemoryToolError(
            "The path contains a percent-escape (like %2e or %2f); memory paths "
            "are plain text: write the characters themselves."
        )
    if _BAD_CHARS.search(path):
        raise MemoryToolError(
            'The path contains a backslash or one of : * ? " < > |, which memory '
            "file names cannot hold."
        )


def under_root(path: str) -> str:
    """The part of the path after /memories/, NFC, without a trailing '/'; or refuse a path
    outside /memories."""
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise MemoryToolError(
            "The path is outside /memories: every memory path starts with "
            "/memories/ (for example /memories/notes.md)."
        )
    rest = unicodedata.normalize("NFC", path[len(ROOT) + 1 :])
    return rest[:-1] if rest.endswith("/") else rest


def check_names(rest: str) -> None:
    """Refuse a relative path with an empty, '.' or '..' segment, a name too long or not
    portable, or a name a sync never syncs."""
    for segment in rest.split("/"):
        if segment in ("", ".", ".."):
            raise MemoryToolError(
                "The path has an empty, '.' or '..' segment; give the plain path under /memories."
            )
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise MemoryToolError(f"A name in the path is over {MAX_SEGMENT_BYTES} bytes.")
        problem = unportable(segment)
        if problem:
            raise MemoryToolError(f"{problem[0].upper()}{problem[1:]}.")
    from memsync.sync.walk import is_ignored

    if is_ignored(rest):
        raise MemoryToolError(
            "The path is not part of the synced memory (hidden names, editor "
            "temp files, team/ and _memsync/ are not synced); choose another name."
        )


def _privacy_fields(text: str | None) -> tuple[bool, frozenset[str], bool]:
    """(consent given, kinds allow-listed, sensitivity high) of a memory file's frontmatter."""
    if text is None:
        return False, frozenset(), False
    try:
        meta = memory.parse(text).meta or {}
    except memory.FrontmatterError:
        return False, frozenset(), False
    extra = memory.field(meta, "allow_sensitive")
    kinds = (
        frozenset(str(k) for k in extra)
        if isinstance(extra, list)
        else frozenset([str(extra)])
        if extra
        else frozenset()
    )
    high = str(memory.field(meta, "sensitivity") or "").lower() == "high"
    return memory.field(meta, "consent") is True, kinds, high


def _declared_type(text: str | None) -> object:
    if text is None:
        return None
    try:
        return memory.field(memory.parse(text).meta, "type")
    except memory.FrontmatterError:
        return None


def _refuse_unknown_type(path: str, text: str, before: str | None) -> None:
    """A `type` memsync does not know merges as plain lines and Claude Code ignores it: a
    write that sets one is refused, naming the valid types (an existing one is left alone)."""
    declared = _declared_type(text)
    if declared is None or declared in TYPES or declared == _declared_type(before):
        return
    valid = ", ".join(t for t in TYPES if t != "index")
    raise MemoryToolError(
        f"{path} was not saved: its type {str(declared)[:40]!r} is not a memory type. Use one "
        f"of: {valid} (or leave type out and memsync takes it from the file name)."
    )


def _refuse_privacy_grants(path: str, text: str, before: str | None) -> None:
    """Consent, allow-listed secret kinds and a lowered sensitivity are the user's to give:
    a write through the tool that grants any of them is refused (taking them away is fine)."""
    consent, kinds, high = _privacy_fields(text)
    had_consent, had_kinds, was_high = _privacy_fields(before)
    if (consent and not had_consent) or not kinds <= had_kinds or (was_high and not high):
        raise MemoryToolError(
            f"{path} was not saved: the privacy fields consent, allow_sensitive and "
            "sensitivity decide what may leave this machine, and only the user sets them, "
            "outside this tool. Write the file without changing them."
        )


def made_description(name: str) -> str:
    """The description memsync makes from a file's name when the model gives none."""
    mtype = type_of(name)
    return mtype.summary if mtype.filename else name.rsplit("/", 1)[-1][:-3].replace("_", " ")


def file_title(name: str) -> str:
    """The `name` field memsync gives a file called `name` (`user_日本語.md` keeps its letters)."""
    stem = name.rsplit("/", 1)[-1][:-3]
    return memory.name_slug(stem) if stem.isascii() else stem


def renamed_fields(text: str, src: str, dst: str) -> str:
    """A renamed file's frontmatter follows its name: a `name` that was the old file's name
    becomes the new one, and a `type` the old name implied becomes the type the new name
    implies. Only those lines change (format and order kept)."""
    try:
        source, _ = memory.split(text)
        meta = memory.parse(text).meta or {}
    except memory.FrontmatterError:
        return text
    if source is None:
        return text
    old_type, new_type = type_of(src), type_of(dst)
    swaps = {}
    if str(meta.get("name")) == file_title(src) and file_title(src) != file_title(dst):
        swaps["name"] = (file_title(src), file_title(dst))
    if str(meta.get("description")) == made_description(src):
        swaps["description"] = (made_description(src), made_description(dst))
    declared = memory.field(meta, "type")
    if (
        declared == old_type.name
        and old_type is not UNKNOWN
        and new_type is not UNKNOWN
        and new_type is not old_type
    ):
        swaps["type"] = (old_type.name, new_type.name)
    if not swaps:
        return text
    start = text.index("\n") + 1
    end = start + len(source)
    lines = source.split("\n")
    for i, line in enumerate(lines):
        key, sep, value = line.partition(":")
        field_name = key.strip()
        if sep and field_name in swaps and value.strip().strip("'\"") == swaps[field_name][0]:
            lines[i] = f"{key}: {swaps[field_name][1]}"
    return text[:start] + "\n".join(lines) + text[end:]


def lines_added(text: str, file_text: str) -> int:
    """How many lines memsync put before the model's own text (the frontmatter it added)."""
    body = file_text.lstrip("\n")
    if not body or text == file_text or not text.endswith(body):
        return 0
    return text[: len(text) - len(body)].count("\n") - (len(file_text) - len(body))


def frontmatter_end(text: str) -> int:
    """The line number of the frontmatter's closing `---` (0: no frontmatter)."""
    try:
        source, _ = memory.split(text)
    except memory.FrontmatterError:
        return 0
    if source is None:
        return 0
    return source.count("\n") + 2 if source else 2


def _frontmatter_hint(name: str) -> str:
    mtype = type_of(name)
    fields = ["name: " + name.rsplit("/", 1)[-1][:-3]]
    fields += [f"{f}: ..." for f in mtype.required if f != "name"]
    if mtype is not UNKNOWN:
        fields.append(f"type: {mtype.name}")
    lines = "\\n".join(["---", *fields, "---"])
    return f"Start the file with frontmatter like: {lines} (or leave it out and memsync adds it)"


def touch_modified(text: str) -> str:
    """An edited file's existing `modified` field (top level or under `metadata:`) moves to
    now, so the later edit wins a fact-file race; its format, quoting and place are kept, and
    no field is added (the agent's line numbers stay right)."""
    try:
        source, _ = memory.split(text)
    except memory.FrontmatterError:
        return text
    if source is None:
        return text
    start = text.index("\n") + 1
    end = start + len(source)
    lines = source.split("\n")
    for i, line in enumerate(lines):
        m = _MODIFIED_LINE.match(line)
        if m:
            value = m.group("value").strip()
            if _DATE_ONLY.fullmatch(value):
                new = date.today().isoformat()
            else:
                new = memory.stamp_text(memory.modified_now())
            lines[i] = f"{m.group('lead')}{m.group('q')}{new}{m.group('q')}"
    return text[:start] + "\n".join(lines) + text[end:]


def need_markdown(name: str, path: str) -> None:
    if not name:
        raise MemoryToolError("/memories is the memory directory; give a file name under it.")
    if not name.endswith(".md"):
        raise MemoryToolError(
            f"{path} was not saved: memory files are Markdown and their names end in .md "
            "(for example /memories/user_preferences.md)."
        )


def checked(
    name: str, path: str, text: str, max_bytes: int, before: str | None = None, offset: int = 0
) -> bytes:
    """`text` as it will be written, after the checks every memory file passes before it
    may leave the machine; a refusal names the problem (a secret's kind, never the
    secret) and nothing is written. `before`: the file's text before this edit (None for a
    new file); `offset`: lines memsync put before the model's own text (a secret's line is
    told in the model's terms)."""
    _refuse_privacy_grants(path, text, before)
    _refuse_unknown_type(path, text, before)
    data = text.encode("utf-8")
    try:
        check_outbound(name, data, max_bytes)
    except RefusedFile as exc:
        reason = exc.reason
        if _SECRET_HINT in reason:
            reason = reason.split(_SECRET_HINT)[0]
            reason = _SECRET_LINE.sub(
                lambda m: (
                    f"line {max(1, int(m.group(1)) - offset)} of "
                    + ("your text" if offset else "the file")
                ),
                reason,
                count=1,
            )
            reason += (
                "; memory is copied to other machines, so credentials and personal "
                "numbers never go in it: write it again without that line"
            )
        elif reason.startswith("it is marked 'sensitivity: high'"):
            reason = (
                "it is marked sensitivity: high, so it stays off the remote until the user "
                "allows it; only the user can do that, outside this tool"
            )
        elif "frontmatter is missing required field" in reason or "no YAML frontmatter" in reason:
            reason += ". " + _frontmatter_hint(name)
        raise MemoryToolError(f"{path} was not saved: {reason}.") from None
    return data


def with_frontmatter(name: str, text: str) -> tuple[str, str]:
    """Text without frontmatter gets what its name implies: name, a description from the
    name (never a copy of a body line, which would make the agent's later str_replace of
    that line ambiguous), and the type when the name says it (user_*.md,
    voice_calibration.md ...). Text with frontmatter is left as the agent wrote it (the
    checks say what is missing)."""
    basename = name.rsplit("/", 1)[-1]
    if basename == INDEX:
        return text, ""
    try:
        source, body = memory.split(text)
    except memory.FrontmatterError:
        return text, ""  # the checks name the problem
    if source is not None:
        return text, ""
    if not body.strip():
        return text, ""  # empty: the checks say so
    mtype = type_of(name)
    description = made_description(name)
    # Claude Code's own shape (docs/claude-code.md), so its sessions read the file as theirs
    nested: dict[str, object] = {"node_type": "memory"}
    if mtype is not UNKNOWN:
        nested["type"] = mtype.name
    nested["modified"] = memory.modified_now()
    meta = {"name": file_title(name), "description": description}
    added = ", ".join([*meta, *(f"metadata.{k}" for k in nested)])
    return memory.render({**meta, memory.NESTED: nested}, body.lstrip("\n")), added
