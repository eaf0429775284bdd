"""The memory tool's six commands over one project's synced memory, without the SDK.

The Claude API's client-side memory tool (`memory_20250818`) asks the application to carry out
`view`, `create`, `str_replace`, `insert`, `delete` and `rename` on paths under `/memories`.
`ToolMemory` does that on a memsync memory dir: every path is checked before it touches the disk,
every write is checked like any memory file (frontmatter, size, secrets, consent) before it is
written, and the privacy fields (consent, allow_sensitive, sensitivity) are never granted
through it. Each write is written here, then pushed at once as `memsync push FILE` pushes it:
the engine's conditional write, merge and retry on a lost race, and offline queue decide what
the remote holds, so a race ends as it does for `sync` (a fact: the later edit wins, the other
version kept in local history) and the model is shown what the file now holds.
What the model must act on comes back as a `MemoryToolError` (the SDK adapter in
`memory_tool.py` turns it into a tool error); everything else is the text the tool returns.

Kept free of the `anthropic` SDK so the rules can be tested and reused on their own.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
import time
import unicodedata
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.context.config import Context
from memsync.memory import frontmatter as memory
from memsync.memory.memtypes import TYPES, UNKNOWN, type_of
from memsync.memory.names import unportable
from memsync.privacy.gate import check_outbound, name_secret
from memsync.sync.planner import too_many
from memsync.util.errors import (
    MemsyncError,
    RefusedFile,
    UserError,
)
from memsync.util.fsutil import atomic_write, private_dir, read_text_if_there

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memsync.sync.engine import SyncResult

ROOT = "/memories"
INDEX = memory.INDEX_NAME
LINE_NUMBER_WIDTH = 6  # the SDK's own backend numbers lines this wide
VIEW_MAX_CHARS = 16_000  # one view's output: about 4,000 tokens of the model's context
LIST_DEPTH = 2  # a directory view lists two levels, as the tool documentation shows
MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255
LOCK_TIMEOUT = 60.0
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# text-direction controls: a name that displays as something else (`user_\u202egpj.md`)
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BAD_CHARS = re.compile(r'[\\:*?"<>|]')  # what the remote refuses in a key (stores.check_key)
_MODIFIED_LINE = re.compile(
    r"^(?P<lead>\s*modified:\s*)(?P<q>['\"]?)(?P<value>[^'\"\n]*)(?P=q)\s*$"
)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_INDEX_KEPT = (
    "/memories/MEMORY.md is the index Claude Code reads to find every memory file, so it "
    "cannot be {what} through this tool; memsync keeps its lines in step with the files you "
    "create, rename and delete. Edit its lines with str_replace if one is wrong."
)
_SECRET_HINT = "; remove it, or allow it with"
_SECRET_LINE = re.compile(r"^line (\d+)")


class MemoryToolError(Exception):
    """A refused or failed command: `str(err)` is what the model reads, saying what to do."""


class ToolMemory:
    """One project's memory (memory dir + remote, resolved like every memsync command) behind
    the memory tool's commands. Thread-safe: commands run one at a time."""

    def __init__(
        self,
        ctx: Context,
        *,
        pull_timeout: float | None = None,
        refresh_after: float | None = None,
        index: bool = True,
        view_max_chars: int = VIEW_MAX_CHARS,
    ) -> None:
        """`pull_timeout`: seconds of transfers the session's first pull may take (default:
        the `pull_timeout` setting). `refresh_after`: pull again before a command when the
        last pull is older than this many seconds (None: once a session, for an instance
        that lives as long as one conversation). `index`: list created files in MEMORY.md."""
        from memsync.sync.engine import Engine

        self.ctx = ctx
        self.engine = Engine(ctx)
        self.root = ctx.memory_dir
        self.max_bytes = int(ctx.setting("max_file_bytes"))
        self.pull_timeout = float(
            ctx.setting("pull_timeout") if pull_timeout is None else pull_timeout
        )
        self.refresh_after = refresh_after
        self.index = index
        self.view_max_chars = view_max_chars
        self._lock = threading.RLock()
        self._pulled: float | None = None  # monotonic time of the last pull
        self._session_note = ""
        self._line_cursor: tuple[object, int] = (None, 0)  # the long line a view is paging

    # --- paths ------------------------------------------------------------------------------

    def name_of(self, path: object) -> str:
        """The memory-dir-relative name of a tool path ('' for /memories itself), or a
        MemoryToolError saying why the path is refused. Purely lexical: see `local`. A refused
        path is described, never quoted back (it may hold a secret the scanner cannot tell)."""
        if not isinstance(path, str) or not path:
            raise MemoryToolError("The path is empty: give a path under /memories.")
        _check_characters(path)
        rest = _under_root(path)
        if rest:
            _check_names(rest)
        return rest

    def file_name_of(self, path: object) -> str:
        """`name_of` for a command on a file: a path ending in `/` names a folder."""
        name = self.name_of(path)
        if name and isinstance(path, str) and path.endswith("/"):
            raise MemoryToolError(
                "The path ends in '/', which names a folder: give the file's path without the "
                "trailing '/'."
            )
        return name

    def _need_new_name(self, name: str, path: str) -> None:
        """A new file or folder name: every folder on the way is a folder (not a file), and no
        name on the way differs from an existing one only by case or Unicode normalisation
        (one file on macOS and Windows, two on Linux and the remote)."""
        folder = self.root
        parts = name.split("/")
        for i, part in enumerate(parts):
            try:
                existing = {
                    unicodedata.normalize("NFC", e).casefold(): e for e in os.listdir(folder)
                }
            except (FileNotFoundError, NotADirectoryError):
                return
            same = existing.get(part.casefold())
            if same is not None and same != part:
                shown = "/".join([*parts[:i], same])
                raise MemoryToolError(
                    f"{path} differs only in upper/lower case (or accent encoding) from the "
                    f"existing {ROOT}/{shown}; on macOS and Windows they would be one file. "
                    "Use that name, or choose a different one."
                )
            folder = folder / part
            if i < len(parts) - 1 and folder.is_file():
                raise MemoryToolError(
                    f"{ROOT}/{'/'.join(parts[: i + 1])} is a file, not a folder, so nothing can "
                    "be created under it; choose another folder name."
                )

    def local(self, name: str) -> Path:
        """The file for `name`; refused when it (or a folder on the way) is a symbolic link
        that leads out of the memory dir."""
        path = self.root / name if name else self.root
        root = self.root.resolve()
        resolved = path.resolve()
        if resolved != root and root not in resolved.parents:
            raise MemoryToolError(
                f"The path {ROOT}/{name} leads outside /memories through a symbolic link; "
                "it is refused."
            )
        return path

    def _writable(self, name: str) -> Path:
        path = self.local(name)
        if path.is_symlink():
            raise MemoryToolError(
                f"{ROOT}/{name} is a symbolic link; memsync does not write through links."
            )
        return path

    # --- the session --------------------------------------------------------------------

    def pull(self) -> str:
        """A bounded pull (`pull_timeout` seconds of transfers): what other devices wrote since
        this device last synced. Runs before the first command of a session; call it again
        to refresh. Returns a note for the model ('' when all went well)."""
        with self._lock:
            self._pulled = time.monotonic()
            try:
                result = self.engine.run("pull", deadline=time.monotonic() + self.pull_timeout)
            except (MemsyncError, OSError, TimeoutError) as exc:
                if isinstance(exc, UserError) and self._remote_missing():
                    self._session_note = ""  # a fresh remote: nothing to pull yet
                    return ""
                self._session_note = f"(memsync could not pull: {exc}; showing this device's copy)"
                return self._session_note
            if result.offline:
                note = "(the memory remote is unreachable; showing this device's copy)"
            elif result.skipped:
                note = (
                    f"({len(result.skipped)} file(s) from other devices did not arrive within "
                    f"{self.pull_timeout:g} s; they come with the next pull)"
                )
            else:
                note = ""
            self._session_note = note
            return note

    def _remote_missing(self) -> bool:
        try:
            return not self.engine.store.exists()
        except MemsyncError:
            return False

    def _start(self) -> None:
        if self._pulled is None or (
            self.refresh_after is not None and time.monotonic() - self._pulled > self.refresh_after
        ):
            self.pull()

    @contextlib.contextmanager
    def _local_edit(self):
        """Hold memsync's lock for this project while the local file is read and rewritten,
        so a pull or push by another memsync process is not halfway through it."""
        try:
            with self.engine.locked(timeout=LOCK_TIMEOUT):
                yield
        except TimeoutError:
            raise MemoryToolError(
                "The memory is busy (another memsync process holds its lock); try again."
            ) from None

    # --- the commands -----------------------------------------------------------------------

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        with self._lock:
            self._start()
            name = self.name_of(path)
            target = self.local(name)
            try:
                st = os.stat(target)
            except (FileNotFoundError, NotADirectoryError):
                if not name:  # no memory yet
                    return _note(self._listing(path, []), self._session_note)
                raise MemoryToolError(
                    f"The path {path} does not exist. View /memories to see what there is."
                ) from None
            if stat.S_ISDIR(st.st_mode):
                listing = self._listing(path, self._entries(target, name), view_range)
                return _note(listing, self._session_note)
            if not stat.S_ISREG(st.st_mode):
                raise MemoryToolError(f"{path} is not a file or a directory.")
            text = self._read_text(target, path)
            return _note(self._numbered(path, text, view_range), self._session_note)

    def create(self, path: str, file_text: str) -> str:
        with self._lock:
            self._start()
            name = self.file_name_of(path)
            self._need_markdown(name, path)
            notes: list[str] = []
            with self._local_edit():
                self._need_new_name(name, path)
                target = self._writable(name)
                if target.exists():
                    kind = "directory" if target.is_dir() else "file"
                    raise MemoryToolError(
                        f"The {kind} {path} already exists. View it, then use str_replace or "
                        "insert to change it (or delete it first)."
                    )
                text, added = self._with_frontmatter(name, file_text)
                if added:
                    notes.append(f"Added the frontmatter its name implies ({added}).")
                    notes.append(
                        "Its description was made from the file name; a real one-line "
                        "description (str_replace the description line) helps later sessions "
                        "find it."
                    )
                data = self._checked(name, path, text, offset=_lines_added(text, file_text))
                private_dir(target.parent)
                atomic_write(target, data, 0o600)
                indexed = self._index_add(name, text)
            if indexed:
                notes.append("Listed it in /memories/MEMORY.md, the index Claude Code reads.")
            names = [name, INDEX] if indexed else [name]
            return self._push(names, f"File created successfully at: {path}", notes, path)

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        with self._lock:
            self._start()
            name = self.file_name_of(path)
            with self._local_edit():
                target = self._writable(name)
                text = self._read_existing(target, path)
                if not old_str:
                    raise MemoryToolError(
                        "old_str is empty: give the exact text to replace (view the file to "
                        "copy it), or use insert to add lines."
                    )
                count = text.count(old_str)
                if count == 0:
                    raise MemoryToolError(
                        f"No replacement was performed: old_str did not appear verbatim in "
                        f"{path}. View the file and copy the text exactly."
                    )
                if count > 1:
                    lines = _occurrence_lines(text, old_str)
                    raise MemoryToolError(
                        f"No replacement was performed: old_str appears {count} times in {path} "
                        f"(lines {', '.join(map(str, lines))}); include more context to make it "
                        "unique."
                    )
                at = text.index(old_str)
                changed_line = text[:at].count("\n")
                new_text = _touch_modified(text.replace(old_str, new_str, 1))
                data = self._checked(name, path, new_text, before=text)
                atomic_write(target, data, _mode(target))
            head = "The memory file has been edited. Here is the snippet showing the change:"
            snippet = _snippet(new_text, changed_line)
            return self._push([name], f"{head}\n{snippet}", [], path)

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        with self._lock:
            self._start()
            name = self.file_name_of(path)
            with self._local_edit():
                target = self._writable(name)
                text = self._read_existing(target, path)
                lines = text.split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                if not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
                    raise MemoryToolError(
                        f"Invalid insert_line {insert_line!r}: {path} has {len(lines)} lines, so "
                        f"it must be between 0 (before the first) and {len(lines)} (after the "
                        "last)."
                    )
                closing = _frontmatter_end(text)
                if closing and insert_line == 0:
                    raise MemoryToolError(
                        f"Nothing was inserted: {path} starts with its frontmatter (lines "
                        f"1-{closing}), which must stay first; to add text at the top, use "
                        f"insert_line {closing} (after the frontmatter's closing ---)."
                    )
                lines.insert(insert_line, insert_text.rstrip("\n"))
                new_text = _touch_modified("\n".join(lines) + "\n")
                data = self._checked(name, path, new_text, before=text)
                atomic_write(target, data, _mode(target))
            return self._push([name], f"The file {path} has been edited.", [], path)

    def delete(self, path: str) -> str:
        with self._lock:
            self._start()
            name = self.name_of(path)
            if not name:
                raise MemoryToolError("Cannot delete the /memories directory itself.")
            if name == INDEX:
                raise MemoryToolError(_INDEX_KEPT.format(what="deleted"))
            with self._local_edit():
                target = self._writable(name)
                if target.is_dir():
                    names = self._whole_folder(name, path)
                elif target.is_file():
                    names = [name]
                else:
                    raise MemoryToolError(f"The path {path} does not exist.")
                total = self._file_count()
                if too_many(len(names), total):
                    raise MemoryToolError(
                        f"Deleting {path} would remove {len(names)} of the {total} memory files; "
                        "memsync refuses mass deletions from the tool. Nothing was deleted: ask "
                        "the user to do it with `memsync forget` if it is really wanted."
                    )
                for each in names:
                    self.local(each).unlink(missing_ok=True)
                if target.is_dir():
                    _remove_empty_dirs(target)
                indexed = self._index_drop(names)
            pushed = names + ([INDEX] if indexed else [])
            return self._push(pushed, f"Successfully deleted {path}", [], path, deleted=names)

    def rename(self, old_path: str, new_path: str) -> str:
        with self._lock:
            self._start()
            old = self.name_of(old_path)
            new = self.name_of(new_path)
            if not old or not new:
                raise MemoryToolError("Cannot rename the /memories directory itself.")
            if INDEX in (old, new):
                raise MemoryToolError(_INDEX_KEPT.format(what="renamed or replaced"))
            if new_path.endswith("/") and not old_path.endswith("/") and self.local(old).is_file():
                self.file_name_of(new_path)
            if new == old or new.startswith(old + "/"):
                raise MemoryToolError(f"Cannot move {old_path} into itself.")
            with self._local_edit():
                source = self._writable(old)
                dest = self._writable(new)
                if dest.exists():
                    raise MemoryToolError(f"The destination {new_path} already exists.")
                self._need_new_name(new, new_path)
                if source.is_dir():
                    moves = [(n, new + n[len(old) :]) for n in self._whole_folder(old, old_path)]
                elif source.is_file():
                    self._need_markdown(new, new_path)
                    moves = [(old, new)]
                else:
                    raise MemoryToolError(f"The path {old_path} does not exist.")
                staged = []
                for src, dst in moves:
                    text = self._read_existing(self.local(src), f"{ROOT}/{src}")
                    moved = _renamed_fields(text, src, dst)
                    data = self._checked(dst, f"{ROOT}/{dst}", moved, before=text)
                    staged.append((src, dst, data))
                for src, dst, data in staged:
                    target = self._writable(dst)
                    private_dir(target.parent)
                    atomic_write(target, data, _mode(self.local(src)))
                    self.local(src).unlink()
                if source.is_dir():
                    _remove_empty_dirs(source)
                indexed = self._index_move(dict((s, d) for s, d, _ in staged))
            names = [n for s, d, _ in staged for n in (s, d)] + ([INDEX] if indexed else [])
            done = f"Successfully renamed {old_path} to {new_path}"
            return self._push(names, done, [], new_path, deleted=[s for s, _, _ in staged])

    # --- pushing and what it tells the model ------------------------------------------------

    def _push(
        self,
        names: list[str],
        done: str,
        notes: list[str],
        shown: str,
        deleted: list[str] | tuple[str, ...] = (),
    ) -> str:
        """Push `names` (one conditional write each) and turn the outcome into the tool's
        answer. A lost race merged cleanly is a note; a merge that had to drop a version, a
        delete undone by another device's edit, or a push that failed is a MemoryToolError."""
        names = list(dict.fromkeys(names))
        result = self._run_push(names, shown)
        problems = [p for name in names for p in self._problems(name, result, deleted)]
        if problems:
            raise MemoryToolError("\n".join(problems))
        return "\n".join([done, *notes, *self._notes(names, result, deleted)])

    def _run_push(self, names: list[str], shown: str) -> SyncResult:
        """One `push` of the files; the lock busy or a push that could not start is a
        MemoryToolError saying the change is saved here."""
        try:
            return self.engine.run("push", [str(self.root / n) for n in names])
        except TimeoutError:
            raise MemoryToolError(
                f"{shown} is saved on this device, but memsync's lock was busy so it is not "
                "on the remote yet; the next sync sends it."
            ) from None
        except MemsyncError as exc:
            raise MemoryToolError(
                f"{shown} is saved on this device but was not pushed: {exc}"
            ) from None

    def _problems(self, name: str, result: SyncResult, deleted: Sequence[str]) -> list[str]:
        """What the push of one file did that the model must act on: its version lost a race
        to another device's (kept in local history), an error, a refusal, a delete another
        device's edit undid (its index line is put back)."""
        problems: list[str] = []
        if name in result.replaced:
            problems.append(
                f"Your change to {ROOT}/{name} was not applied: another device changed the file "
                f"at the same time and its version won ({result.replaced[name]}; yours is kept "
                f"in this device's local history, `memsync history {name}`). It now reads:\n"
                f"{self._current(name)}\nIf your change still holds, apply it again to this "
                "content."
            )
        if name in result.errors:
            problems.append(
                f"{ROOT}/{name} is saved on this device but not on the remote: "
                f"{result.errors[name]}."
            )
        if name in result.refused:
            problems.append(f"{ROOT}/{name} is not synced: {result.refused[name]}.")
        if name in deleted and self.local(name).exists():
            self._index_restore(name)
            problems.append(
                f"{ROOT}/{name} was edited on another device since this device last saw "
                "it, so the delete was not applied (an edit wins over a deletion). It now "
                f"reads:\n{self._current(name)}\nDelete it again if it should still go."
            )
        return problems

    def _notes(self, names: list[str], result: SyncResult, deleted: Sequence[str]) -> list[str]:
        """What the push did that the model should know: another device's version merged in
        or set aside (the file may now read otherwise), sync off, the remote unreachable."""
        notes = []
        for name in names:
            conflicted = any(c.startswith(f"{name}: ") for c in result.conflicts)
            raced = name in result.merged or conflicted
            if raced and name not in result.replaced and name not in deleted:
                notes.append(
                    f"Another device changed {ROOT}/{name} at the same time; memsync merged "
                    "the two as `sync` does (a version that could not be merged is kept in "
                    f"local history). It now reads:\n{self._current(name)}"
                )
        if result.disabled:
            notes.append("Saved on this device only: sync is off (MEMSYNC_SYNC=off).")
        elif result.offline:
            notes.append(
                "Saved on this device; the memory remote is unreachable, so the change is "
                "queued and goes out with the next sync."
            )
        return notes

    def _index_restore(self, name: str) -> None:
        """A delete undone by another device's edit: the file is back, so is its index line
        (on this device and the remote), or Claude Code could not find it."""
        if not self.index:
            return
        text = _read_or_none(self.local(name))
        with self._local_edit():
            added = self._index_add(name, text or "")
        if added:
            with contextlib.suppress(MemsyncError, TimeoutError):
                self.engine.run("push", [str(self.root / INDEX)])

    def _current(self, name: str) -> str:
        text = read_text_if_there(self.local(name), unreadable="none")
        if text is None:
            return "(the file is gone)"
        return self._numbered(f"{ROOT}/{name}", text, None, header=False)

    # --- reading and checking ------------------------------------------------------------

    def _read_text(self, target: Path, path: str) -> str:
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise MemoryToolError(f"The path {path} does not exist.") from None
        except IsADirectoryError:
            raise MemoryToolError(f"The path {path} is a directory, not a file.") from None
        except OSError as exc:
            raise MemoryToolError(f"{path} cannot be read ({exc.strerror}).") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryToolError(f"{path} is not UTF-8 text.") from None

    def _read_existing(self, target: Path, path: str) -> str:
        if target.is_dir():
            raise MemoryToolError(f"The path {path} is a directory, not a file.")
        if not target.exists():
            raise MemoryToolError(
                f"The path {path} does not exist. View /memories to see what there is, or "
                "create it."
            )
        return self._read_text(target, path)

    def _need_markdown(self, name: str, path: str) -> None:
        if not name:
            raise MemoryToolError("/memories is the memory directory; give a file name under it.")
        if not name.endswith(".md"):
            raise MemoryToolError(
                f"{path} was not saved: memory files are Markdown and their names end in .md "
                "(for example /memories/user_preferences.md)."
            )

    def _checked(
        self, name: str, path: str, text: str, before: str | None = None, offset: int = 0
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
            check_outbound(name, data, self.max_bytes)
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
            elif (
                "frontmatter is missing required field" in reason or "no YAML frontmatter" in reason
            ):
                reason += ". " + _frontmatter_hint(name)
            raise MemoryToolError(f"{path} was not saved: {reason}.") from None
        return data

    def _with_frontmatter(self, name: str, text: str) -> tuple[str, str]:
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
        description = _made_description(name)
        # Claude Code's own shape (docs/claude-code.md), so its sessions read the file as theirs
        nested: dict[str, object] = {"node_type": "memory"}
        if mtype is not UNKNOWN:
            nested["type"] = mtype.name
        nested["modified"] = memory.modified_now()
        meta = {"name": _file_title(name), "description": description}
        added = ", ".join([*meta, *(f"metadata.{k}" for k in nested)])
        return memory.render({**meta, memory.NESTED: nested}, body.lstrip("\n")), added

    # --- listings and numbered text --------------------------------------------------------

    def _entries(self, folder: Path, name: str) -> list[tuple[str, int]]:
        """What a view of a folder lists. Not MemoryWalk: a view shows folders too, two levels
        deep, and what the tool can open there; the walk's one ignore rule still applies."""
        from memsync.sync.walk import is_ignored

        found: list[tuple[str, int]] = []

        def walk(directory: Path, rel: str, depth: int) -> None:
            try:
                children = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                return
            for child in children:
                child_rel = f"{rel}/{child.name}" if rel else child.name
                full_rel = f"{name}/{child_rel}" if name else child_rel
                if is_ignored(full_rel):
                    continue
                try:
                    self.local(full_rel)  # skips links that lead outside
                    st = os.stat(child.path)
                except (MemoryToolError, OSError):
                    continue
                if stat.S_ISDIR(st.st_mode):
                    found.append((child_rel + "/", st.st_size))
                    if depth < LIST_DEPTH:
                        walk(Path(child.path), child_rel, depth + 1)
                elif stat.S_ISREG(st.st_mode):
                    found.append((child_rel, st.st_size))

        walk(folder, "", 1)
        return found

    def _listing(
        self, path: str, entries: list[tuple[str, int]], view_range: list[int] | None = None
    ) -> str:
        """A directory listing; `view_range` [first, last] pages through its entries (1-based,
        last -1: the end), which is what the notice of a cut listing tells the model to use."""
        shown = path.rstrip("/") or ROOT
        header = (
            f"Here're the files and directories up to {LIST_DEPTH} levels deep in {shown}, "
            "excluding hidden items:"
        )
        total = sum(size for _, size in entries if not _.endswith("/"))
        lines = [header, f"{_size(total)}\t{shown}"]
        first, last = 1, len(entries)
        if view_range is not None and entries:
            first, last = _check_range(path, view_range, len(entries), unit="entries")
            lines[0] = header[:-1] + f" (entries {first}-{last} of {len(entries)}):"
        used = sum(len(x) + 1 for x in lines)
        for number in range(first, last + 1):
            rel, size = entries[number - 1]
            line = f"{_size(size)}\t{shown}/{rel}"
            if used + len(line) + 1 > self.view_max_chars - 200:
                lines.append(
                    f"[listing cut: entries {first}-{number - 1} of {len(entries)} shown; view "
                    f"{shown} with view_range [{number}, {last}] for the rest]"
                )
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)

    def _numbered(
        self, path: str, text: str, view_range: list[int] | None, header: bool = True
    ) -> str:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = _check_range(path, view_range, len(lines))
        out = [f"Here's the content of {path} with line numbers:"] if header else []
        used = sum(len(x) + 1 for x in out)
        budget = self.view_max_chars - 300  # room for the notice
        for number in range(first, last + 1):
            line = f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{lines[number - 1]}"
            if used + len(line) + 1 > budget and number > first:
                out.append(
                    f"[output cut at {self.view_max_chars} characters: lines {first}-{number - 1} "
                    f"of {len(lines)} shown; view with view_range [{number}, {last}] for the "
                    "rest]"
                )
                break
            if len(line) > budget:  # one line longer than a view: shown in parts
                out.extend(self._line_part(path, text, number, lines[number - 1], budget - used))
                if number < last:
                    out.append(
                        f"[lines {number + 1}-{last} not shown: view with view_range "
                        f"[{number + 1}, {last}] for them]"
                    )
                break
            out.append(line)
            used += len(line) + 1
        return "\n".join(out)

    def _line_part(self, path: str, text: str, number: int, line: str, room: int) -> list[str]:
        """The next part of a line too long for one view: the first view of [N, N] shows its
        start, each further view of the same line (unchanged) the part after, and every part
        says which characters it holds and how to get the rest."""
        key = (path, number, hash(text))
        start = self._line_cursor[1] if self._line_cursor[0] == key else 0
        room = max(room - LINE_NUMBER_WIDTH - 1, 1000)
        end = min(start + room, len(line))
        part = f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line[start:end]}"
        if end < len(line):
            self._line_cursor = (key, end)
            notice = (
                f"[line {number} is {len(line):,} characters, more than one view shows: "
                f"characters {start + 1:,}-{end:,} shown; view {path} with view_range "
                f"[{number}, {number}] again for the next part]"
            )
        else:
            self._line_cursor = (None, 0)
            notice = (
                f"[line {number}: characters {start + 1:,}-{end:,} of {len(line):,} shown, "
                "the end of the line]"
                if start
                else ""
            )
        return [part, notice] if notice else [part]

    # --- the MEMORY.md index, so Claude Code sees what the agent writes -------------------

    def _index_add(self, name: str, text: str) -> bool:
        if not self.index or name == INDEX or name.rsplit("/", 1)[-1] == INDEX:
            return False
        index = self.root / INDEX
        current = _read_or_none(index)
        if current is not None and f"]({name})" in current:
            return False
        try:
            meta = memory.parse(text).meta or {}
        except memory.FrontmatterError:
            meta = {}
        title = str(meta.get("name") or name[:-3])
        description = str(meta.get("description") or "")
        line = f"- [{title}]({name})" + (f" — {description}" if description else "")
        base = "# Memory index\n\n" if current is None else current.rstrip("\n") + "\n"
        atomic_write(index, (base + line + "\n").encode("utf-8"), 0o600)
        return True

    def _index_drop(self, names: list[str]) -> bool:
        if not self.index:
            return False
        index = self.root / INDEX
        current = _read_or_none(index)
        if current is None or INDEX in names:
            return False
        kept = [
            line
            for line in current.splitlines(keepends=True)
            if not any(f"]({n})" in line for n in names)
        ]
        if len(kept) == len(current.splitlines(keepends=True)):
            return False
        atomic_write(index, "".join(kept).encode("utf-8"), _mode(index))
        return True

    def _index_move(self, moves: dict[str, str]) -> bool:
        if not self.index:
            return False
        index = self.root / INDEX
        current = _read_or_none(index)
        if current is None:
            return False
        text = current
        for src, dst in moves.items():
            old_titles = {_file_title(src), src[:-3], src.rsplit("/", 1)[-1][:-3]}

            def relabel(
                m: re.Match[str], src: str = src, dst: str = dst, old_titles: set[str] = old_titles
            ) -> str:
                title = _file_title(dst) if m.group(1) in old_titles else m.group(1)
                rest = m.group(2)
                if rest == f" — {_made_description(src)}":
                    rest = f" — {_made_description(dst)}"
                return f"[{title}]({dst}){rest}"

            pattern = r"\[([^\]\n]*)\]\(" + re.escape(src) + r"\)([^\n]*)"
            text = re.sub(pattern, relabel, text)
            text = text.replace(f"]({src})", f"]({dst})")
        if text == current:
            return False
        atomic_write(index, text.encode("utf-8"), _mode(index))
        return True

    def _file_count(self) -> int:
        """How many memory files there are, as the sync's walk finds them."""
        from memsync.sync.walk import MemoryWalk

        return sum(1 for _ in MemoryWalk(self.root))

    def _whole_folder(self, name: str, path: str) -> list[str]:
        """The memory files under the folder `name`, for a command that deletes or moves all
        of it: a file there the sync refuses (a link leading out, a FIFO) refuses the command,
        so the folder is handled whole or not at all."""
        from memsync.sync.walk import MemoryWalk

        walk = MemoryWalk(self.root)
        prefix = f"{name}/"
        names = sorted(n for n, _, _ in walk if n.startswith(prefix))
        for bad, why in sorted(walk.refused.items()):
            if bad.startswith(prefix):
                raise MemoryToolError(
                    f"{path} was left as it is: {ROOT}/{bad} is not a memory file memsync can "
                    f"sync ({why}). Ask the user to move it away first."
                )
        return names


# --- small helpers ----------------------------------------------------------------------------


def _check_characters(path: str) -> None:
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


def _under_root(path: str) -> str:
    """The part of the path after /memories/, NFC, without a trailing '/'; or refuse a path
    outside /memories."""
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise MemoryToolError(
            "The path is outside /memories: every memory path starts with "
            "/memories/ (for example /memories/notes.md)."
        )
    rest = unicodedata.normalize("NFC", path[len(ROOT) + 1 :])
    return rest[:-1] if rest.endswith("/") else rest


def _check_names(rest: str) -> None:
    """Refuse a relative path with an empty, '.' or '..' segment, a name too long or not
    portable, or a name a sync never syncs."""
    for segment in rest.split("/"):
        if segment in ("", ".", ".."):
            raise MemoryToolError(
                "The path has an empty, '.' or '..' segment; give the plain path "
                "under /memories."
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


def _note(text: str, note: str) -> str:
    return f"{text}\n{note}" if note else text


def _size(size: int) -> str:
    """Sizes as the SDK's own backend shows them: 0B, 512B, 1.5K, 2M."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _check_range(
    path: str, view_range: list[int], count: int, unit: str = "lines"
) -> tuple[int, int]:
    if (
        not isinstance(view_range, (list, tuple))
        or len(view_range) != 2
        or not all(isinstance(x, int) for x in view_range)
    ):
        raise MemoryToolError("view_range must be two line numbers, [first, last] (last -1: end).")
    first, last = view_range
    last = count if last == -1 else min(last, count)  # past the end: up to the end
    if first < 1 or first > max(count, 1) or last < first:
        raise MemoryToolError(
            f"view_range {list(view_range)} is outside {path}, which has {count} {unit}: use "
            f"[first, last] with 1 <= first <= last <= {count} (or last = -1)."
        )
    return first, last


def _snippet(text: str, line_index: int) -> str:
    lines = text.split("\n")
    start, end = max(0, line_index - 2), min(len(lines), line_index + 3)
    return "\n".join(
        f"{str(n + 1).rjust(LINE_NUMBER_WIDTH)}\t{lines[n]}" for n in range(start, end)
    )


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines, start = [], 0
    while (at := text.find(needle, start)) != -1:
        lines.append(text[:at].count("\n") + 1)
        start = at + 1
    return lines


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


def _made_description(name: str) -> str:
    """The description memsync makes from a file's name when the model gives none."""
    mtype = type_of(name)
    return mtype.summary if mtype.filename else name.rsplit("/", 1)[-1][:-3].replace("_", " ")


def _file_title(name: str) -> str:
    """The `name` field memsync gives a file called `name` (`user_日本語.md` keeps its letters)."""
    stem = name.rsplit("/", 1)[-1][:-3]
    return memory.name_slug(stem) if stem.isascii() else stem


def _renamed_fields(text: str, src: str, dst: str) -> str:
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
    if str(meta.get("name")) == _file_title(src) and _file_title(src) != _file_title(dst):
        swaps["name"] = (_file_title(src), _file_title(dst))
    if str(meta.get("description")) == _made_description(src):
        swaps["description"] = (_made_description(src), _made_description(dst))
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


def _lines_added(text: str, file_text: str) -> int:
    """How many lines memsync put before the model's own text (the frontmatter it added)."""
    body = file_text.lstrip("\n")
    if not body or text == file_text or not text.endswith(body):
        return 0
    return text[: len(text) - len(body)].count("\n") - (len(file_text) - len(body))


def _frontmatter_end(text: str) -> int:
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


def _touch_modified(text: str) -> str:
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


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o600


def _read_or_none(path: Path) -> str | None:
    """The text of the index (or a file memsync adds to it); not UTF-8 counts as none."""
    return read_text_if_there(path, undecodable="none")


def _remove_empty_dirs(folder: Path) -> None:
    for dirpath, _, _ in sorted(os.walk(folder), key=lambda x: -len(x[0])):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


__all__ = ["ROOT", "MemoryToolError", "ToolMemory"]
