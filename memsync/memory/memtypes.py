"""The registry of memory types: how a file's type is known, what it must carry, how it merges.

The type comes from the frontmatter `type` (under `metadata:`, where Claude Code writes it, or at
the top level), else from the file name. Unknown types still sync;
they merge line by line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from memsync.memory import digests
from memsync.memory.frontmatter import (
    DEFAULT_MAX_BYTES,
    INDEX_NAME,
    NESTED,
    Document,
    FrontmatterError,
    decode,
    field,
    parse,
)
from memsync.memory.names import unportable
from memsync.util.errors import RefusedFile

if TYPE_CHECKING:
    from typing import Any

FACT_FIELDS = ("name", "description")


class MemoryType(NamedTuple):
    name: str
    pattern: str  # regex over the file's base name
    merge: str  # key into memsync.memory.merge.STRATEGIES
    summary: str
    read_when: str = ""
    write_when: str = ""
    filename: str = ""  # the canonical file name ("" for one-file-per-entry types)
    required: tuple[str, ...] = FACT_FIELDS

    def matches(self, basename: str) -> bool:
        return re.fullmatch(self.pattern, basename) is not None


TYPES: dict[str, MemoryType] = {
    t.name: t
    for t in (
        MemoryType(
            "index",
            r"MEMORY\.md",
            "index",
            "The index Claude Code loads at start.",
            filename="MEMORY.md",
            required=(),
        ),
        MemoryType(
            "user",
            r"user_.+\.md",
            "fact",
            "Who the user is: role, goals, preferences.",
            read_when="whenever you tailor an answer to the person",
            write_when="when you learn something lasting about who the user is",
        ),
        MemoryType(
            "feedback",
            r"feedback_.+\.md",
            "fact",
            "Guidance the user gave about how to work.",
            read_when="before starting work of the kind the feedback was about",
            write_when="when the user corrects you or confirms an approach worked",
        ),
        MemoryType(
            "project",
            r"project_.+\.md",
            "fact",
            "Facts about ongoing work, goals and deadlines.",
            read_when="when the task touches that project",
            write_when="when you learn who is doing what, why, or by when",
        ),
        MemoryType(
            "reference",
            r"reference_.+\.md",
            "fact",
            "Pointers to information kept elsewhere.",
            read_when="when you need the outside resource it points to",
            write_when="when you learn where a kind of information lives",
        ),
        MemoryType(
            "session_digest",
            digests.PATTERN,
            "digest",
            "The narrative of one session (or a weekly/monthly/yearly roll-up): arcs, "
            "relational notes, open threads.",
            read_when="today's at session start; older ones when the user refers to a past session",
            write_when="at session end (the digest-session skill); a second session that day adds "
            "its own section",
        ),
        MemoryType(
            "relationship",
            r"relationship_.+\.md",
            "sections",
            "One person you work with: role, register, past interactions, patterns to keep.",
            read_when="when that person appears in the conversation or a message",
            write_when="on first meeting someone who recurs (a stub), then as you learn more",
        ),
        MemoryType(
            "voice_calibration",
            r"voice_calibration\.md",
            "sections",
            "What tone landed and what missed, by date, plus the rules learned.",
            read_when="before banter or any message where register matters",
            write_when="when the user comments on tone, or you notice a miss; add under today's "
            "date, never rewrite history",
            filename="voice_calibration.md",
        ),
        MemoryType(
            "self_observations",
            r"self_observations\.md",
            "sections",
            "Patterns you noticed in your own work: failure modes, what worked, open questions.",
            read_when="at session start, and when you catch yourself repeating a known mistake",
            write_when="at session end if you caught a new pattern in yourself",
            filename="self_observations.md",
        ),
        MemoryType(
            "callbacks",
            r"running_jokes_and_callbacks\.md",
            "sections",
            "Shared references and running jokes (Active and Retired).",
            read_when="when the user refers to something that might be a callback",
            write_when="when a joke or reference is reused (move it to Active, date it)",
            filename="running_jokes_and_callbacks.md",
        ),
        MemoryType(
            "commitments",
            r"running_commitments\.md",
            "commitments",
            "What you promised, with status (Open, Delivered).",
            read_when="before claiming something shipped, and before promising something new",
            write_when="when you say you will do something (Open); when it is verified (Delivered)",
            filename="running_commitments.md",
        ),
        MemoryType(
            "philosophical_threads",
            r"philosophical_threads\.md",
            "sections",
            "Ongoing intellectual conversations that span sessions.",
            read_when="when the user raises a topic that matches an existing thread",
            write_when="when a topic recurs or could; record both positions and where you left off",
            filename="philosophical_threads.md",
        ),
        MemoryType(
            "unsent_drafts",
            r"unsent_drafts\.md",
            "sections",
            "Drafts you cut before sending, and why.",
            read_when="before sending a message you are unsure about",
            write_when="when you cut a draft for a reason worth learning from (under today's date)",
            filename="unsent_drafts.md",
        ),
        MemoryType(
            "carry_forward",
            r"carry_forward\.md",
            "carry_forward",
            "What to raise next session (Pending), and what was raised (Consumed).",
            read_when="at session start, first",
            write_when="at session end, and whenever you notice something to raise later; move "
            "an item to Consumed once raised",
            filename="carry_forward.md",
        ),
    )
}

UNKNOWN = MemoryType("unknown", r".*", "lines", "A file of a type memsync does not know.")


def type_of(path: str, meta: dict[str, Any] | None = None) -> MemoryType:
    """The type of a memory file: frontmatter `type` (either shape) first, then the file name."""
    declared = field(meta, "type")
    if isinstance(declared, str) and declared in TYPES:
        return TYPES[declared]
    basename = path.rsplit("/", 1)[-1]
    for mtype in TYPES.values():
        if mtype.matches(basename):
            return mtype
    return UNKNOWN


# --- checking one memory file (its type says which fields it needs) -------------------------

_NAME_OK = re.compile(r"^[^\x00-\x1f\x7f\\]+\.md$")



def _name_problem(name: str) -> str:
    """Why `name` cannot be a memory file's name, said so the user knows what to rename."""
    if not name.endswith(".md"):
        return "only Markdown files ending in .md are synced"
    if "\\" in name:
        return "its name holds a backslash, which other systems read as a folder; rename it"
    return "its name holds a control character (a tab, a newline); rename it"



def check(name: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Check one memory file and return it parsed, or raise RefusedFile naming the problem."""
    if not _NAME_OK.match(name):
        raise RefusedFile(name, _name_problem(name))
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode's surrogates: bytes that are not UTF-8
        raise RefusedFile(
            name, "its name is not valid UTF-8, which the remote cannot store; rename it"
        ) from None
    problem = unportable(name.removesuffix(".md"))
    if problem:
        raise RefusedFile(name, problem)
    if len(data) > max_bytes:
        raise RefusedFile(name, f"it is {len(data)} bytes, over the {max_bytes}-byte limit")
    if not data.strip() and name.rsplit("/", 1)[-1] != INDEX_NAME:
        # an index with no lines left (its last file forgotten) is still Claude Code's index
        raise RefusedFile(name, "the file is empty")
    if b"\x00" in data:
        raise RefusedFile(name, "it contains NUL bytes (binary data, not Markdown)")
    try:
        doc = parse(decode(data))
    except FrontmatterError as exc:
        raise RefusedFile(name, str(exc)) from None
    basename = name.rsplit("/", 1)[-1]
    if basename == INDEX_NAME:
        return doc
    if doc.meta is None:
        reason = "it has no YAML frontmatter (a '---' block with name and description)"
        raise RefusedFile(name, reason)
    mtype = type_of(name, doc.meta)
    missing = [f for f in mtype.required if doc.meta.get(f) in (None, "")]
    if missing:
        fields = ", ".join(missing)
        raise RefusedFile(name, f"the frontmatter is missing required field(s): {fields}")
    nested = doc.meta.get(NESTED)
    if nested is not None and not isinstance(nested, dict):
        raise RefusedFile(name, "the frontmatter field 'metadata' must be a mapping of fields")
    declared = field(doc.meta, "type")
    if declared is not None and not isinstance(declared, str):
        where = "metadata.type" if isinstance(nested, dict) and "type" in nested else "type"
        raise RefusedFile(name, f"the frontmatter field '{where}' must be a single word")
    return doc

