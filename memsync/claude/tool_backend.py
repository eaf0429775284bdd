"""The memory tool's six commands over one project's synced memory, without the SDK.

The Claude API's client-side memory tool (`memory_20250818`) asks the application to carry out
`view`, `create`, `str_replace`, `insert`, `delete` and `rename` on paths under `/memories`.
`ToolMemory` does that on a memsync memory dir. What a command lets through (paths, a write's
text, the privacy fields the model may not grant) is `tool_checks.py`; what a view shows is
`tool_view.py`. Each write is written here under memsync's lock, then pushed at once as
`memsync push FILE` pushes it: the engine's conditional write, merge and retry on a lost race,
privacy gate and offline queue decide what the remote holds, so a race ends as it does for
`sync` (a fact: the later edit wins, the other version kept in local history) and the model is
shown what the file now holds.
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
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.claude.tool_checks import (
    INDEX,
    ROOT,
    MemoryToolError,
    checked,
    file_name_of,
    file_title,
    frontmatter_end,
    lines_added,
    made_description,
    name_of,
    need_markdown,
    renamed_fields,
    touch_modified,
    with_frontmatter,
)
from memsync.claude.tool_view import LIST_DEPTH, VIEW_MAX_CHARS, Pages, snippet
from memsync.context.config import Context, largest_file
from memsync.memory import index_links
from memsync.sync.mode import Mode
from memsync.sync.planner import too_many
from memsync.util.errors import (
    MemsyncError,
    UserError,
)
from memsync.util.fsutil import atomic_write, private_dir, read_text_if_there

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memsync.sync.engine import SyncResult

LOCK_TIMEOUT = 60.0
_INDEX_KEPT = (
    "/memories/MEMORY.md is the index Claude Code reads to find every memory file, so it "
    "cannot be {what} through this tool; memsync keeps its lines in step with the files you "
    "create, rename and delete. Edit its lines with str_replace if one is wrong."
)


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
        self.max_bytes = largest_file(ctx)
        self.pull_timeout = float(
            ctx.setting("pull_timeout") if pull_timeout is None else pull_timeout
        )
        self.refresh_after = refresh_after
        self.index = index
        self.pages = Pages(view_max_chars)
        self._lock = threading.RLock()
        self._pulled: float | None = None  # monotonic time of the last pull
        self._session_note = ""

    # --- paths ------------------------------------------------------------------------------

    name_of = staticmethod(name_of)
    file_name_of = staticmethod(file_name_of)

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
                result = self.engine.run(Mode.PULL, deadline=time.monotonic() + self.pull_timeout)
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
                    return _note(self.pages.listing(path, []), self._session_note)
                raise MemoryToolError(
                    f"The path {path} does not exist. View /memories to see what there is."
                ) from None
            if stat.S_ISDIR(st.st_mode):
                listing = self.pages.listing(path, self._entries(target, name), view_range)
                return _note(listing, self._session_note)
            if not stat.S_ISREG(st.st_mode):
                raise MemoryToolError(f"{path} is not a file or a directory.")
            text = self._read_text(target, path)
            return _note(self.pages.numbered(path, text, view_range), self._session_note)

    def create(self, path: str, file_text: str) -> str:
        with self._lock:
            self._start()
            name = self.file_name_of(path)
            need_markdown(name, path)
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
                text, added = with_frontmatter(name, file_text)
                if added:
                    notes.append(f"Added the frontmatter its name implies ({added}).")
                    notes.append(
                        "Its description was made from the file name; a real one-line "
                        "description (str_replace the description line) helps later sessions "
                        "find it."
                    )
                offset = lines_added(text, file_text)
                data = checked(name, path, text, self.max_bytes, offset=offset)
                private_dir(target.parent)
                self.engine.write_local(name, data)
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
                new_text = touch_modified(text.replace(old_str, new_str, 1))
                data = checked(name, path, new_text, self.max_bytes, before=text)
                self.engine.write_local(name, data)
            head = "The memory file has been edited. Here is the snippet showing the change:"
            shown = snippet(new_text, changed_line)
            return self._push([name], f"{head}\n{shown}", [], path)

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
                closing = frontmatter_end(text)
                if closing and insert_line == 0:
                    raise MemoryToolError(
                        f"Nothing was inserted: {path} starts with its frontmatter (lines "
                        f"1-{closing}), which must stay first; to add text at the top, use "
                        f"insert_line {closing} (after the frontmatter's closing ---)."
                    )
                lines.insert(insert_line, insert_text.rstrip("\n"))
                new_text = touch_modified("\n".join(lines) + "\n")
                data = checked(name, path, new_text, self.max_bytes, before=text)
                self.engine.write_local(name, data)
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
                    need_markdown(new, new_path)
                    moves = [(old, new)]
                else:
                    raise MemoryToolError(f"The path {old_path} does not exist.")
                staged = []
                for src, dst in moves:
                    text = self._read_existing(self.local(src), f"{ROOT}/{src}")
                    moved = renamed_fields(text, src, dst)
                    data = checked(dst, f"{ROOT}/{dst}", moved, self.max_bytes, before=text)
                    staged.append((src, dst, data))
                for src, dst, data in staged:
                    target = self._writable(dst)
                    private_dir(target.parent)
                    atomic_write(target, data, self.local(src).stat().st_mode & 0o777)
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
            return self.engine.run(Mode.PUSH, [str(self.root / n) for n in names])
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
        text = read_text_if_there(self.local(name), undecodable="none")
        with self._local_edit():
            added = self._index_add(name, text or "")
        if added:
            with contextlib.suppress(MemsyncError, TimeoutError):
                self.engine.run(Mode.PUSH, [str(self.root / INDEX)])

    def _current(self, name: str) -> str:
        text = read_text_if_there(self.local(name), unreadable="none")
        if text is None:
            return "(the file is gone)"
        return self.pages.numbered(f"{ROOT}/{name}", text, None, header=False)

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

    # --- the MEMORY.md index, so Claude Code sees what the agent writes -------------------

    def _index_text(self) -> str | None:
        """MEMORY.md's text; not UTF-8 counts as none."""
        return read_text_if_there(self.root / INDEX, undecodable="none")

    def _index_add(self, name: str, content: str) -> bool:
        """A new file's line, made from its frontmatter as Claude Code writes one."""
        if not self.index or name.rsplit("/", 1)[-1] == INDEX:
            return False
        current = self._index_text()
        if index_links.links_to(current, name):
            return False
        line = index_links.made_line(name, content)
        text = index_links.with_lines(current or "# Memory index\n", [line])
        self.engine.write_local(INDEX, text.encode("utf-8"))
        return True

    def _index_drop(self, names: list[str]) -> bool:
        if not self.index or INDEX in names:
            return False
        kept, removed = index_links.without_links(self._index_text() or "", set(names))
        if removed:
            self.engine.write_local(INDEX, kept.encode("utf-8"))
        return bool(removed)

    def _index_move(self, moves: dict[str, str]) -> bool:
        if not self.index:
            return False
        current = self._index_text()
        if current is None:
            return False
        text = current
        for src, dst in moves.items():
            old_titles = {file_title(src), src[:-3], src.rsplit("/", 1)[-1][:-3]}

            def relabel(
                m: re.Match[str], src: str = src, dst: str = dst, old_titles: set[str] = old_titles
            ) -> str:
                title = file_title(dst) if m.group(1) in old_titles else m.group(1)
                rest = m.group(2)
                if rest == f" — {made_description(src)}":
                    rest = f" — {made_description(dst)}"
                return f"[{title}]({dst}){rest}"

            pattern = r"\[([^\]\n]*)\]\(" + re.escape(src) + r"\)([^\n]*)"
            text = re.sub(pattern, relabel, text)
            text = text.replace(f"]({src})", f"]({dst})")
        if text == current:
            return False
        self.engine.write_local(INDEX, text.encode("utf-8"))
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


def _note(text: str, note: str) -> str:
    return f"{text}\n{note}" if note else text


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines, start = [], 0
    while (at := text.find(needle, start)) != -1:
        lines.append(text[:at].count("\n") + 1)
        start = at + 1
    return lines


def _remove_empty_dirs(folder: Path) -> None:
    for dirpath, _, _ in sorted(os.walk(folder), key=lambda x: -len(x[0])):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


__all__ = ["ROOT", "MemoryToolError", "ToolMemory"]
