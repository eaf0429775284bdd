"""Three devices, one remote, and the edits people and agents make, per memory type.

Rules: add, reword and remove an entry (sections, commitments, carry-forward items, index
lines); move an item to Consumed/Delivered; two devices add a commitment with the same id;
edit an index line's description; edit a fact file (on any device, so on both sides between
syncs); forget a file and forget --match an entry; purge; compaction; SIGTERM in the middle of
a sync; losing the memory dir; moving to another folder remote as docs/migrate.md tells the
user (`memsync migrate --from OLD --to NEW` on one device, the same command on each other, then
their remote setting), with unsynced edits and forgets not yet learned on board; and syncs of
every kind.

Checked:
- every merge any engine makes, by the general no-silent-loss oracle (tests/oracle.py);
- once every device has synced: the devices hold identical bytes; every entry added and not
  removed, reworded away or forgotten by anyone is on every device exactly once (a reworded
  or finalised item's lineage is still there, and a consumed or delivered one is not back in
  Pending/Open); every fact version memsync saw and no user replaced is current, or in local
  history with a conflict reported; no entry text appears twice;
- forgotten and purged text is nowhere under any MEMSYNC_HOME, memory dir or the remote
  (tests/privacy_oracle.py; the quarantine folder aside); a remote the devices moved away
  from is left as migrate found it, so it is held to what was forgotten before the move;
- a SIGTERM leaves state every later run can read, and loses nothing; a lost memory dir is
  refused by sync and restored by pull.

Each entry carries a unique token (`k00042z`); a reword gives it a new token in the same
lineage. The token is the machine's handle, not what the entry is about: each lineage also has
four subject words of its own (`subject`), kept across rewords, and a reword changes one more
word (`reworded`), as a person's reword changes a few words and keeps most; two lineages share
less than half their words. Before, a reword
only swapped the token and put "reworded" before "note", so a reworded line shared nothing
with its old self but the words every entry has: a merge (which pairs a reword with the removed
entry it resembles most) could not tell it from another device's similar entry removed on the
same side, and what no reader could tell apart was reported as lost. The sequences found
before that replay with the old wording (`DevicesMachine(subjects=False)`).

CI runs a bounded search (MEMSYNC_MACHINE_EXAMPLES, default 60 examples of up to 40 steps);
MEMSYNC_HUNT=1 runs the long hunt (1000 examples of up to 60 steps) whose figures are in
docs/reliability.md.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memsync.admin.migrate import RemoteMigration, migrate_remote
from memsync.context.config import Context, resolve
from memsync.memory import merge as merge_mod
from memsync.memory.frontmatter import render
from memsync.stores.folder import FolderStore
from memsync.sync.engine import Engine
from memsync.sync.state import State
from memsync.util.errors import GuardError
from tests import oracle
from tests.privacy_oracle import leaks, quarantine_dir

DEVICES = 3
PROJECT = "machine"
MOVES = 2  # `move_remote` at most this many times an example
HUNT = os.environ.get("MEMSYNC_HUNT") == "1"
EXAMPLES = int(os.environ.get("MEMSYNC_MACHINE_EXAMPLES", "1000" if HUNT else "60"))
STEPS = 60 if HUNT else 40

INDEX = "MEMORY.md"
VOICE = "voice_calibration.md"
COMMITMENTS = "running_commitments.md"
CARRY = "carry_forward.md"
FACT = "user_pat.md"
ENTRY_FILES = {
    VOICE: ("voice_calibration", ("Rules learned", "2026-10-01", "2026-10-02", "2026-11-20")),
    COMMITMENTS: ("commitments", ("Open", "Delivered")),
    CARRY: ("carry_forward", ("Pending", "Consumed")),
}
FINAL = {COMMITMENTS: ("Open", "Delivered"), CARRY: ("Pending", "Consumed")}
TOKEN = re.compile(r"k\d{5}z")
_tokens = itertools.count()
# what the runs did, printed at the end of the module (run with -s to see it)
TALLY: dict[str, int] = {}


ONLY = {r for r in os.environ.get("MEMSYNC_MACHINE_RULES", "").split(",") if r}


def on(rule_name: str) -> bool:
    """Whether a rule runs: all do, unless MEMSYNC_MACHINE_RULES=a,b limits a run to some
    rules (for a hunt after one defect)."""
    return not ONLY or rule_name in ONLY


def gated(func):
    return precondition(lambda self: on(func.__name__))(func)


def heavy(func):
    """A rule that syncs every device (or most of them): it waits for a few edits since the
    last one, so that edits pile up on several devices between syncs, where merges happen."""

    def ready(self) -> bool:
        return self.edits >= (8 if func.__name__ == "purge_everywhere" else 3)

    wrapped = precondition(ready)(func)
    return wrapped


def tally(key: str, n: int = 1) -> None:
    TALLY[key] = TALLY.get(key, 0) + n


def new_token() -> str:
    return f"k{next(_tokens) % 100000:05d}z"


# what an entry is about: one word from each list, by the lineage's number. The lengths are
# coprime, so lineages fewer than 19 * 23 apart share no two words, and those fewer than 19
# apart none at all; none holds a secret scanner's needle ("pass", "api", "token", ...). Two
# lineages' lines share less than half their words (merge.SIMILAR), a reword and its lineage
# more: the same-words-as-most rules (merge.pair_rewords, compaction's reworded rule) then
# read them as a person's entries would be read
_SUBJECT_WORDS = (
    "budget launch hiring roadmap invoice offsite pricing survey release audit onboarding "
    "migration contract training backlog forecast outage rollout partner vendor demo "
    "newsletter quarter campaign license workshop benchmark retro sprint charter handbook",
    "alice bruno chen dana emeka farah greta hiro ingrid jonas kemal lena mateo nadia oscar "
    "priya quinn rosa sven tara umar vera wendell ximena yusuf zoe amara bastian ines",
    "monday tuesday wednesday thursday friday weekend morning evening noon january february "
    "march april june july august september october november december spring summer winter",
    "berlin lisbon oslo porto quito lima cairo dakar accra nairobi seoul osaka hanoi manila perth "
    "hobart denver boston austin",
)
SUBJECTS = tuple(tuple(words.split()) for words in _SUBJECT_WORDS)
# the word a reword changes, each to the next (the subject words stay)
DETAILS = ("note", "reminder", "caveat", "followup", "remark")
_DETAIL = re.compile(r"\b(" + "|".join(DETAILS) + r")\b")


def subject(lineage: str) -> str:
    n = int(lineage[1:-1])
    return " ".join(words[n % len(words)] for words in SUBJECTS)


def reworded(line: str, old: str, new: str) -> str:
    """`line` reworded: its token becomes `new` and its detail word the next one; the rest,
    its subject words included, stays."""
    line = line.replace(old, new)
    found = _DETAIL.search(line)
    if found is None:  # an index line's edited description ("k00042z edited")
        return f"{line} {DETAILS[1]}"
    following = DETAILS[(DETAILS.index(found.group(1)) + 1) % len(DETAILS)]
    return line[: found.start()] + following + line[found.end() :]


class Interrupting:
    """The shared store, as one device sees it: `arm(n)` makes the n-th call from now raise
    KeyboardInterrupt, which is what SIGTERM becomes in the CLI (memsync/entry.py)."""

    def __init__(self, inner: FolderStore) -> None:
        self._inner = inner
        self._left: int | None = None

    def arm(self, n: int | None) -> None:
        self._left = n

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if name not in ("list", "get", "create", "replace", "delete"):
            return attr

        def call(*args, **kwargs):
            if self._left is not None:
                self._left -= 1
                if self._left <= 0:
                    self._left = None
                    raise KeyboardInterrupt
            return attr(*args, **kwargs)

        return call


# --- reading and writing the files as a person or an agent would -----------------------------


def sections_of(text: str) -> list[tuple[str, list[str]]]:
    """[(heading, [entry lines])] of a section file's body (entries: '- ' lines)."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            out.append((line[3:].strip(), []))
        elif line.startswith("- ") and out:
            out[-1][1].append(line)
    return out


def render_sections(name: str, parts: list[tuple[str, list[str]]]) -> str:
    mtype = ENTRY_FILES[name][0]
    body = "".join(f"\n## {h}\n" + "".join(f"{e}\n" for e in entries) for h, entries in parts)
    # name and type differ: tests/oracle.py tells frontmatter fields apart by their values
    return render({"name": f"my {mtype}", "description": f"the {mtype} file", "type": mtype}, body)


class DevicesMachine(RuleBasedStateMachine):
    def __init__(self, subjects: bool = True) -> None:
        super().__init__()
        self.subjects = subjects  # False: the template wording the first finds were made with
        # in memory where there is a tmpfs: the runs are mostly fsyncs otherwise
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.tmp = Path(tempfile.mkdtemp(prefix="memsync-devices-", dir=shm))
        self.edits = 0  # edits since the last rule that syncs every device
        self.remote = self.tmp / "remote"  # the folder remote every device syncs with
        self.remote.mkdir()
        self.shared = FolderStore(self.remote, PROJECT)
        # remotes the devices moved away from (`move_remote`), each with the needles forgotten
        # while it was in use
        self.retired: list[tuple[Path, frozenset[str]]] = []
        self.engines: list[Engine] = []
        self.stores: list[Interrupting] = []
        self.home_before = os.environ.get("MEMSYNC_HOME")
        for i in range(DEVICES):
            (self.tmp / f"mem{i}").mkdir()
            store = Interrupting(self.shared)
            self.stores.append(store)
            self.engines.append(Engine(self._context(i), store))  # type: ignore[arg-type]
        self.added: set[str] = set()  # every entry token written
        self.gone: set[str] = set()  # tokens a user removed, reworded away or forgot
        self.lineage: dict[str, str] = {}  # token -> the token its item started as
        self.finalised: set[str] = set()  # lineages moved to Consumed/Delivered somewhere
        self.forgotten: set[str] = set()  # needles that must be nowhere once all synced
        self.fact_seen: set[str] = set()  # fact versions a sync has read from a memory dir
        self.fact_replaced: set[str] = set()  # fact versions a user edited away
        self.conflicted: set[str] = set()  # files a sync reported a conflict for
        # lineages whose consumed or delivered entry a user removed from Consumed/Delivered
        self.final_removed: set[str] = set()
        # files forgotten on another device since this device last listed the remote: an
        # edit made here meanwhile is quarantined on its next sync, not lost (forget.py)
        self.stale: list[set[str]] = [set() for _ in range(DEVICES)]
        self.quarantined: set[str] = set()  # entry tokens written into such a file
        self.merge_problems: list[str] = []
        self._real_merge = merge_mod.merge
        merge_mod.merge = self._checked_merge
        self._seed()

    def _context(self, device: int) -> Context:
        """Device `device`'s context for the remote it syncs with now (`self.remote`)."""
        os.environ["MEMSYNC_HOME"] = str(self.tmp / f"home{device}")
        mem = self.tmp / f"mem{device}"
        ctx = resolve(memory_dir=mem, remote=self.remote.as_uri(), project=PROJECT)
        ctx.settings["concurrency"] = 1
        ctx.settings.update(device=f"device{device}")
        return ctx

    def _seed(self) -> None:
        """Every file starts from one device and reaches the others (as `memsync new` and a
        sync do), so the merges that follow have a base."""
        for name in ENTRY_FILES:
            self.write_parts(0, name, self.parts(0, name))
        self.path(0, INDEX).write_text("# Memory\n")
        self.edit_fact(0)
        for device in range(DEVICES):
            self.run(device, "sync")

    def teardown(self) -> None:
        merge_mod.merge = self._real_merge
        if self.home_before is not None:
            os.environ["MEMSYNC_HOME"] = self.home_before
        tally("examples")
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- the oracle on every merge ------------------------------------------------------------

    def _checked_merge(self, path, base, ours, theirs, *args, **kwargs):
        outcome = self._real_merge(path, base, ours, theirs, *args, **kwargs)
        conflicts = [outcome.conflict] if outcome.conflict else []
        kept = [outcome.discarded] if outcome.discarded is not None else []
        problems = oracle.violations(path, base, ours, theirs, outcome.content, conflicts, kept)
        self.merge_problems += [f"{path}: {p}" for p in problems]
        tally("merges")
        return outcome

    # --- helpers ------------------------------------------------------------------------------

    def path(self, device: int, name: str) -> Path:
        return self.engines[device].ctx.memory_dir / name

    def read(self, device: int, name: str) -> str | None:
        path = self.path(device, name)
        return path.read_text(encoding="utf-8") if path.exists() else None

    def parts(self, device: int, name: str) -> list[tuple[str, list[str]]]:
        text = self.read(device, name)
        headings = ENTRY_FILES[name][1]
        parts = sections_of(text) if text is not None else []
        have = {h for h, _ in parts}
        return parts + [(h, []) for h in headings if h not in have]

    def write_parts(self, device: int, name: str, parts: list[tuple[str, list[str]]]) -> None:
        self.path(device, name).write_text(render_sections(name, parts), encoding="utf-8")

    def entries_on(self, device: int) -> list[tuple[str, str, int, str]]:
        """(file, heading, index, line) of every entry on a device, index lines included."""
        out = []
        for name in ENTRY_FILES:
            for heading, entries in self.parts(device, name):
                out += [(name, heading, i, e) for i, e in enumerate(entries)]
        index = self.read(device, INDEX) or ""
        out += [(INDEX, "", i, ln) for i, ln in enumerate(index.splitlines()) if ln[:2] == "- "]
        return [e for e in out if TOKEN.search(e[3])]

    def _added(
        self, token: str, lineage: str | None = None, where: tuple[int, str] | None = None
    ) -> str:
        if where is not None and where[1] in self.stale[where[0]]:
            self.quarantined.add(token)
        self.edits += 1
        self.added.add(token)
        self.lineage[token] = lineage or token
        tally("entries")
        return token

    def about(self, token: str) -> str:
        """The words a new entry of `token`'s lineage starts with after the token."""
        return f"{subject(self.lineage.get(token, token))} " if self.subjects else ""

    def reword(self, line: str, old: str, new: str) -> str:
        if not self.subjects:
            return line.replace(old, new).replace("note", "reworded note")
        return reworded(line, old, new)

    def run(self, device: int, mode: str, **kwargs) -> object:
        fact = self.read(device, FACT)
        if fact and FACT not in self.stale[device]:
            self.fact_seen.update(TOKEN.findall(fact))
        result = self.engines[device].run(mode, **kwargs)
        self.stale[device] = set()
        tally(f"run_{mode}")
        assert not result.errors, result.errors
        assert not result.refused, result.refused
        for conflict in result.conflicts:
            name, _, sentence = conflict.partition(": ")
            assert sentence, f"a conflict without a sentence: {conflict!r}"
            self.conflicted.add(name)
            tally("conflicts")
        self._assert_merges_kept_everything()
        return result

    def _assert_merges_kept_everything(self) -> None:
        problems, self.merge_problems = self.merge_problems, []
        assert not problems, "a merge lost or doubled an entry:\n" + "\n".join(problems)

    # --- rules: entries -----------------------------------------------------------------------

    @rule(
        device=st.integers(0, DEVICES - 1),
        name=st.sampled_from(sorted(ENTRY_FILES)),
        where=st.integers(0, 3),
    )
    @gated
    def add_entry(self, device: int, name: str, where: int) -> None:
        parts = self.parts(device, name)
        heading = ENTRY_FILES[name][1][0 if name != VOICE else 1 + where % 3]
        token = self._added(new_token(), where=(device, name))
        about = self.about(token)
        line = (
            f"- [c-2026-11-25-{token[1:-1]}] {token} ship it"
            + (f", the {about}note" if self.subjects else "")
            if name == COMMITMENTS
            else (
                f"- {token} {about}note"
                if self.subjects
                else f"- {token} note from device {device}"
            )
        )
        for h, entries in parts:
            if h == heading:
                entries.append(line)
        self.write_parts(device, name, parts)

    @precondition(lambda self: any(self.entries_on(d) for d in range(DEVICES)))
    @rule(
        device=st.integers(0, DEVICES - 1),
        pick=st.integers(0, 10**6),
        action=st.sampled_from(["reword", "remove"]),
    )
    @gated
    def change_entry(self, device: int, pick: int, action: str) -> None:
        entries = self.entries_on(device)
        if not entries:
            return
        if action == "reword" and not on("reword"):
            action = "remove"
        name, heading, i, line = entries[pick % len(entries)]
        old = TOKEN.search(line).group(0)  # type: ignore[union-attr]
        self.gone.add(old)
        if action == "remove" and name in FINAL and heading == FINAL[name][1]:
            # a consumed item removed takes a rewording folded into it, now or by a later merge
            self.gone |= self._absorbed_into({old})
            self.final_removed.add(self.lineage.get(old, old))
        if action == "reword":
            new = self._added(new_token(), self.lineage.get(old, old), (device, name))
            line = self.reword(line, old, new)
        tally(action)
        if name == INDEX:
            lines = (self.read(device, INDEX) or "").splitlines()
            at = [j for j, ln in enumerate(lines) if ln == entries[pick % len(entries)][3]][0]
            lines[at : at + 1] = [line] if action == "reword" else []
            self.path(device, INDEX).write_text("".join(f"{ln}\n" for ln in lines))
            return
        parts = self.parts(device, name)
        for h, items in parts:
            if h == heading:
                items[i : i + 1] = [line] if action == "reword" else []
        self.write_parts(device, name, parts)

    @rule(
        device=st.integers(0, DEVICES - 1),
        name=st.sampled_from(sorted(FINAL)),
        pick=st.integers(0, 10**6),
    )
    @gated
    def finalise(self, device: int, name: str, pick: int) -> None:
        """Consume a carry-forward item or deliver a commitment (a move, same text)."""
        first, final = FINAL[name]
        parts = self.parts(device, name)
        sources = [items for h, items in parts if h == first][0]
        if not sources:
            return
        line = sources.pop(pick % len(sources))
        [items for h, items in parts if h == final][0].append(line)
        token = TOKEN.search(line).group(0)  # type: ignore[union-attr]
        self.finalised.add(self.lineage.get(token, token))
        tally("finalise")
        self.write_parts(device, name, parts)

    @rule(first=st.integers(0, DEVICES - 1), second=st.integers(0, DEVICES - 1))
    @gated
    def same_id_on_two_devices(self, first: int, second: int) -> None:
        """Two devices mint the same commitment id for different promises."""
        if first == second:
            return
        ident = f"c-2026-11-25-same{next(_tokens)}"
        for device in (first, second):
            parts = self.parts(device, COMMITMENTS)
            token = self._added(new_token(), where=(device, COMMITMENTS))
            promise = f"- [{ident}] {token} promise" + (
                f", {self.about(token)}note" if self.subjects else ""
            )
            [items for h, items in parts if h == "Open"][0].append(promise)
            self.write_parts(device, COMMITMENTS, parts)
        tally("same_id")

    @rule(device=st.integers(0, DEVICES - 1))
    @gated
    def add_index_line(self, device: int) -> None:
        token = self._added(new_token())
        text = self.read(device, INDEX) or "# Memory\n"
        topic = f"n{next(_tokens)}"  # names the link, never taken for an entry token
        about = f" {self.about(token)}note" if self.subjects else ""
        line = f"- [Topic {topic}](topic_{topic}.md) — {token}{about}\n"
        self.path(device, INDEX).write_text(text + line)

    @precondition(lambda self: any(self.read(d, INDEX) for d in range(DEVICES)))
    @rule(device=st.integers(0, DEVICES - 1), pick=st.integers(0, 10**6))
    @gated
    def edit_index_description(self, device: int, pick: int) -> None:
        lines = (self.read(device, INDEX) or "").splitlines()
        links = [j for j, ln in enumerate(lines) if ln.startswith("- [") and " — " in ln]
        if not links:
            return
        at = links[pick % len(links)]
        head, _, desc = lines[at].partition(" — ")
        old = TOKEN.search(desc)
        lineage = self.lineage.get(old.group(0), old.group(0)) if old else None
        new = self._added(new_token(), lineage, (device, INDEX))
        if old:
            self.gone.add(old.group(0))
        lines[at] = f"{head} — {new} edited"
        self.path(device, INDEX).write_text("".join(f"{ln}\n" for ln in lines))
        tally("index_edit")

    # --- rules: facts -------------------------------------------------------------------------

    @rule(device=st.integers(0, DEVICES - 1))
    @gated
    def edit_fact(self, device: int) -> None:
        current = self.read(device, FACT)
        if FACT in self.stale[device] and current is not None:
            return  # an edit of a file forgotten elsewhere: quarantined, tried by forget's trials
        if current:
            self.fact_replaced.update(TOKEN.findall(current))
        self.edits += 1
        token = new_token()
        meta = {"name": "pat", "description": "who Pat is", "type": "user"}
        self.path(device, FACT).write_text(render(meta, f"\nPat, version {token}.\n"))
        tally("fact_edit")

    # --- rules: syncs, interruptions, loss -------------------------------------------------------

    @rule(device=st.integers(0, DEVICES - 1), mode=st.sampled_from(["sync", "push", "pull"]))
    @gated
    def sync(self, device: int, mode: str) -> None:
        self.run(device, mode)

    @rule(device=st.integers(0, DEVICES - 1), after=st.integers(1, 6))
    @gated
    def sigterm_mid_sync(self, device: int, after: int) -> None:
        self.stores[device].arm(after)
        try:
            self.run(device, "sync")
        except KeyboardInterrupt:
            tally("sigterm")
        finally:
            self.stores[device].arm(None)
        engine = self.engines[device]
        State(engine.ctx.state_dir)  # whatever was saved can be read again
        self._assert_merges_kept_everything()

    @rule(device=st.integers(0, DEVICES - 1))
    @gated
    @heavy
    def lose_memory_dir(self, device: int) -> None:
        self.edits = 0
        self.run(device, "sync")
        mem = self.engines[device].ctx.memory_dir
        before = {p.name: p.read_bytes() for p in mem.iterdir() if p.is_file()}
        if not before:
            return
        shutil.rmtree(mem)
        with pytest.raises(GuardError, match="run `memsync pull`"):
            self.engines[device].run("sync", force=True)
        self.run(device, "pull")
        after = {p.name: p.read_bytes() for p in mem.iterdir() if p.is_file()}
        assert after == before, "a pull did not restore the lost memory dir"
        tally("dir_lost")

    # --- rules: compaction, forget, purge --------------------------------------------------------

    @rule(device=st.integers(0, DEVICES - 1))
    @gated
    @heavy
    def compact(self, device: int) -> None:
        self.edits = 0
        from datetime import date

        from memsync.retention import compact as core

        engine = self.engines[device]
        self.run(device, "sync")
        root = engine.ctx.memory_dir
        files = {p.name: p.read_bytes() for p in root.glob("*.md")}
        actions = core.plan(files, date(2026, 11, 30))
        for action in actions:  # Delivered trimmed to the most recent: removed on purpose
            if action.name == COMMITMENTS and action.content is not None:
                before = set(TOKEN.findall(files[COMMITMENTS].decode()))
                self.gone |= before - set(TOKEN.findall(action.content.decode()))
        result = core.apply(engine, actions)
        for pushed in result.pushes:
            assert not pushed.errors, pushed.errors
        self._assert_merges_kept_everything()
        tally("compactions")

    def _everyone_synced(self) -> None:
        for _ in range(2):
            for device in range(DEVICES):
                self.run(device, "sync")

    @rule(device=st.integers(0, DEVICES - 1), name=st.sampled_from([VOICE, CARRY, FACT]))
    @gated
    @heavy
    def forget_file(self, device: int, name: str) -> None:
        self.edits = 0
        from memsync.admin.forget import forget_files

        self._everyone_synced()
        text = self.read(device, name)
        if text is None:
            return
        tokens = set(TOKEN.findall(text))
        forget_files(self.engines[device], [name])
        for other in range(DEVICES):
            if other != device:
                self.stale[other].add(name)
        if name == FACT:  # its history goes whole: the older versions kept there too
            tokens |= self.fact_seen
        self.forgotten |= tokens
        self.gone |= tokens | self._absorbed_into(tokens)
        self.fact_replaced |= tokens
        tally("forget_file")

    def _absorbed_into(self, tokens: set[str]) -> set[str]:
        """Tokens held nowhere whose lineage one of `tokens` carried: a reword the merge
        folded into the same item's consume or delivery lived on only in that entry, so it
        goes when that entry is forgotten."""
        lineages = {self.lineage.get(t, t) for t in tokens}
        held = {t for d in range(DEVICES) for e in self.entries_on(d) for t in TOKEN.findall(e[3])}
        return {
            t
            for t in self.added - self.gone - held
            if self.lineage.get(t, t) in lineages and self.lineage.get(t, t) in self.finalised
        }

    @precondition(lambda self: any(self.entries_on(d) for d in range(DEVICES)))
    @rule(device=st.integers(0, DEVICES - 1), pick=st.integers(0, 10**6))
    @gated
    def forget_match(self, device: int, pick: int) -> None:
        from memsync.admin.forget import apply_match, plan_match

        entries = self.entries_on(device)
        if not entries:
            return
        token = TOKEN.search(entries[pick % len(entries)][3]).group(0)  # type: ignore[union-attr]
        engine = self.engines[device]
        apply_match(engine, plan_match(engine, token))
        self.forgotten.add(token)
        self.gone |= {token} | self._absorbed_into({token})
        # a rewording of it that no longer holds the token is not found (docs/forget.md): it
        # stays, like any other entry
        tally("forget_match")

    @rule(device=st.integers(0, DEVICES - 1))
    @gated
    @heavy
    def purge_everywhere(self, device: int) -> None:
        """`purge --all --yes` here, then on the other devices as purge tells the user to, who
        also deletes the memory files purge leaves in place."""
        self.edits = 0
        from memsync.admin import forget
        from memsync.admin.forget import purge

        tokens: set[str] = set()
        for d in [device, *(x for x in range(DEVICES) if x != device)]:
            mem = self.engines[d].ctx.memory_dir
            for p in mem.glob("*.md"):
                tokens |= set(TOKEN.findall(p.read_text()))
            purge(self.engines[d])
            self.engines[d].state = State(self.engines[d].ctx.state_dir)
            shutil.rmtree(mem)
            mem.mkdir()
        for d in range(DEVICES):  # and starts again: `memsync push --republish`
            republish = getattr(forget, "republish", None)  # from i16-forget's purge marks
            if republish is not None:
                republish(self.engines[d])
        self.forgotten |= tokens
        self.gone |= self.added
        self.fact_replaced |= self.fact_seen | tokens
        tally("purge")

    @precondition(lambda self: len(self.retired) < MOVES)
    @rule(first=st.integers(0, DEVICES - 1))
    @gated
    def move_remote(self, first: int) -> None:
        """`memsync migrate --from OLD --to NEW` on device `first`, then what docs/migrate.md
        tells the user to do on each other device: run the same command once, and point it
        at NEW (the `remote` setting); every device then syncs as before. Nobody syncs first:
        each device moves with what it held, unsynced edits and forgets it has not learned of
        included. migrate copies and never changes its source, so OLD is left as it was: it
        must not hold what was forgotten while it was in use, and a forget or purge made after
        the move belongs to NEW alone (docs/forget.md, case 43), so `_check_forgotten` holds
        OLD to the needles forgotten before the move only."""
        old = self._new_remote()
        for device in [first, *(d for d in range(DEVICES) if d != first)]:
            moved = self._move(device, old)
            said = f"device{device}: {moved}"
            assert not moved.different, said
            assert not (moved.forgotten or moved.scrubbed), said  # NEW holds no forget of its own
            if device != first:
                assert not moved.copied, f"the same command again copied something: {said}"
        self.retired.append((old, frozenset(self.forgotten)))
        tally("moves")

    @precondition(lambda self: len(self.retired) < MOVES)
    @rule(
        first=st.integers(0, DEVICES - 1),
        late=st.integers(1, DEVICES - 1),
        mode=st.sampled_from(["push", "sync"]),
    )
    @gated
    def move_remote_while_one_syncs_the_old(self, first: int, late: int, mode: str) -> None:
        """`move_remote`, but device `late` (counted on from `first`) syncs with OLD after
        `first` moved and before it moves itself, as a hook in a session left open does:
        migrate then leaves the files it changed on OLD alone on NEW (said), and its next sync
        merges them from the first move's copy (docs/migrate.md)."""
        old = self._new_remote()
        late = (first + late) % DEVICES
        self._move(first, old)
        self.run(late, mode)  # still on OLD
        for device in (d for d in range(DEVICES) if d != first):
            moved = self._move(device, old)  # copies what `late` added to OLD, whoever runs it
            assert not (moved.forgotten or moved.scrubbed), f"device{device}: {moved}"
        self.retired.append((old, frozenset(self.forgotten)))
        tally("moves")

    def _new_remote(self) -> Path:
        """Make a new, empty folder remote the one devices move to; the old one."""
        old = self.remote
        self.remote = self.tmp / f"remote{len(self.retired) + 1}"
        self.remote.mkdir()  # a folder remote that is not there is never made
        self.shared = FolderStore(self.remote, PROJECT)
        return old

    def _move(self, device: int, old: Path) -> RemoteMigration:
        """`memsync migrate --from OLD --to NEW` on `device`, then its remote setting NEW."""
        ctx = self._context(device)
        moved = migrate_remote(ctx, old.as_uri(), self.remote.as_uri())
        assert not moved.refused, f"device{device}: {moved}"
        self.engines[device].state.bases.close()
        self.stores[device] = Interrupting(self.shared)
        self.engines[device] = Engine(ctx, self.stores[device])  # type: ignore[arg-type]
        return moved

    # --- convergence --------------------------------------------------------------------------

    @rule()
    @heavy
    def converge(self) -> None:
        self.edits = 0
        for _ in range(3):
            for device in range(DEVICES):
                result = self.run(device, "sync")
                assert not result.offline
        snapshots = [self._snapshot(d) for d in range(DEVICES)]
        for device in range(1, DEVICES):
            assert snapshots[device] == snapshots[0], "devices must converge to identical bytes"
        self._check_entries(snapshots[0])
        self._check_facts(snapshots[0])
        self._check_forgotten()
        tally("converged")

    def _snapshot(self, device: int) -> dict[str, bytes]:
        root = self.engines[device].ctx.memory_dir
        return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}

    def _check_entries(self, files: dict[str, bytes]) -> None:
        text = {n: d.decode() for n, d in files.items()}
        everything = "".join(v for n, v in text.items() if n != FACT)
        counts: dict[str, int] = {}
        for token in TOKEN.findall(everything):
            counts[token] = counts.get(token, 0) + 1
        doubled = sorted(t for t, c in counts.items() if c > 1)
        assert not doubled, f"entries appear twice: {doubled}"
        alive = self.added - self.gone - self.quarantined
        set_aside = "".join(
            p.read_text(errors="replace")
            for i in range(DEVICES)
            for p in quarantine_dir(self.tmp / f"home{i}").rglob("*")
            if p.is_file()
        )
        for token in sorted(self.quarantined - self.gone):
            assert token in set_aside or token in counts, f"{token} neither kept nor set aside"
        present_lineages = {self.lineage.get(t, t) for t in counts}
        history = "".join(
            p.read_text(errors="replace")
            for p in self.tmp.glob("home*/state/*/history/**/*")
            if p.is_file()
        )
        for token in sorted(alive):
            if token in counts:
                continue
            lineage = self.lineage.get(token, token)
            # a rewording a merge folded into the item's consume or delivery is in history
            # (with a conflict); gone from the files when a user then removed that entry
            removed = lineage in self.final_removed and token in history
            assert lineage in self.finalised and (lineage in present_lineages or removed), (
                f"entry {token} was lost: added, never removed, reworded or forgotten"
            )
        for name, (first, _final) in FINAL.items():
            pending = dict(sections_of(text.get(name, ""))).get(first, [])
            for line in pending:
                # a never-reworded item: a reword made together with other changes in the same
                # section cannot be told from a removal and an addition, by the merge or anyone
                token = TOKEN.search(line)
                if token and token.group(0) in self.finalised:
                    raise AssertionError(f"{line!r} is back in {first} after it was finalised")

    def _check_facts(self, files: dict[str, bytes]) -> None:
        current = files.get(FACT, b"").decode()
        kept = "".join(
            p.read_text(errors="replace")
            for p in self.tmp.glob("home*/state/*/history/**/*")
            if p.is_file()
        )
        for version in sorted(self.fact_seen - self.fact_replaced):
            if version in current:
                continue
            assert version in kept, f"fact version {version} was lost: not current, not kept"
            # reported: by a run's result, or in a device's state (`status`, the primer), where
            # an interrupted run's conflicts are too
            reported = self.conflicted | {
                c.file for e in self.engines for c in State(e.ctx.state_dir).conflicts
            }
            assert FACT in reported, f"fact version {version} went to history silently"

    def _check_forgotten(self) -> None:
        if not self.forgotten:
            return
        roots = [self.tmp / f"home{i}" for i in range(DEVICES)]
        roots += [e.ctx.memory_dir for e in self.engines] + [self.remote]
        allowed = [quarantine_dir(self.tmp / f"home{i}") for i in range(DEVICES)]
        found = leaks(sorted(self.forgotten), roots, allowed)
        for old, needles in self.retired:  # as the move left it (`move_remote`)
            found += leaks(sorted(needles), [old])
        assert not found, "forgotten text is still stored:\n" + "\n".join(
            f"  {n} in {p}" for n, p in found
        )
        # the conflict descriptions too (the byte scan above reads them as well; this says
        # which one): the remote record, each device's own, and so its primer
        record = self.remote / PROJECT / "_memsync" / "conflicts.json"
        described = [record.read_text()] if record.exists() else []
        described += [json.dumps(State(e.ctx.state_dir).conflicts.as_json()) for e in self.engines]
        for token in sorted(self.forgotten):
            assert not any(token in d for d in described), f"{token} in a conflict description"

    @invariant()
    def records_point_at_existing_bases(self) -> None:
        for engine in self.engines:
            for name in engine.state.records:
                assert engine.state.base(name) is not None, f"record for {name} has no base"


TestDevicesMachine = DevicesMachine.TestCase
TestDevicesMachine.settings = settings(
    max_examples=EXAMPLES,
    phases=list(Phase)
    if os.environ.get("MEMSYNC_MACHINE_SHRINK", "1") == "1"
    else [Phase.generate],
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    print("\nDEVICES " + " ".join(f"{k}={v}" for k, v in sorted(TALLY.items())))


def test_a_reworded_promise_delivered_on_the_other_device_under_an_id_once_minted_twice():
    """Found by the machine: after an id minted on two devices had come down to one promise,
    one device reworded that promise while the other delivered it. The merge keeps it
    delivered and reports the conflict (one id held once in the base and once on a side is
    one promise, however reworded); the oracle had read the rewording as a second promise
    under the id and called it lost."""
    machine = DevicesMachine(subjects=False)
    try:
        machine.add_index_line(device=0)
        machine.add_index_line(device=0)
        machine.converge()
        machine.same_id_on_two_devices(first=1, second=0)
        machine.add_index_line(device=0)
        machine.converge()
        machine.add_index_line(device=0)
        machine.forget_match(device=0, pick=0)
        machine.edit_fact(device=0)
        machine.add_index_line(device=0)
        machine.converge()
        machine.add_index_line(device=0)
        machine.finalise(device=0, name="running_commitments.md", pick=0)
        machine.add_index_line(device=0)
        machine.change_entry(action="reword", device=1, pick=0)
        machine.converge()
    finally:
        machine.teardown()


def test_a_new_item_added_while_another_device_forgot_a_similar_one_is_kept():
    """Found by the machine: while one device forgot a carry-forward item, another added a
    new item and a third consumed a new one of its own. The forgotten item, still in the
    merge's base, paired the two new items as one item reworded on one side and consumed on
    the other, and the added item was dropped with a conflict that called it a change."""
    machine = DevicesMachine(subjects=False)
    try:
        machine.finalise(device=0, name="carry_forward.md", pick=0)
        machine.add_entry(device=0, name="carry_forward.md", where=0)
        machine.converge()
        machine.add_entry(device=0, name="carry_forward.md", where=0)
        machine.forget_match(device=2, pick=0)
        machine.add_entry(device=1, name="carry_forward.md", where=0)
        machine.finalise(device=0, name="carry_forward.md", pick=435)
        machine.converge()
    finally:
        machine.teardown()


def test_an_id_minted_twice_on_one_device_after_a_lost_folder_merges_by_promise():
    """Found by the machine: a device that lost its memory dir minted one id twice; the other
    removed the id's old promise. The merge kept the new promise and dropped the old one,
    as it should; the oracle had read the kept promise as the old one (the result holds the
    id once, like the base) and called the removal undone."""
    machine = DevicesMachine(subjects=False)
    try:
        machine.finalise(device=0, name="carry_forward.md", pick=64)
        machine.add_entry(device=0, name="carry_forward.md", where=0)
        machine.converge()
        machine.same_id_on_two_devices(first=1, second=0)
        machine.finalise(device=0, name="carry_forward.md", pick=113)
        machine.change_entry(action="reword", device=0, pick=13647)
        machine.lose_memory_dir(device=1)
        machine.same_id_on_two_devices(first=1, second=1)
        machine.finalise(device=0, name="carry_forward.md", pick=0)
        machine.add_index_line(device=0)
        machine.change_entry(action="remove", device=1, pick=0)
        machine.converge()
    finally:
        machine.teardown()


def test_a_promise_reworded_after_its_delivery_is_not_back_open_after_a_reword_elsewhere():
    """Found by the machine once a reword kept the entry's subject: one device delivered a
    promise and then reworded it in Delivered, another reworded it in Open. The merge asked
    that the delivered text continue the base's, read the two as different promises and kept
    the promise Open as well as Delivered (tests/test_merge.py has the merge on its own)."""
    machine = DevicesMachine()
    try:
        machine.same_id_on_two_devices(first=1, second=0)
        machine.sync(device=0, mode="sync")
        machine.finalise(device=0, name="running_commitments.md", pick=0)
        machine.change_entry(action="reword", device=0, pick=0)
        machine.lose_memory_dir(device=2)
        machine.sync(device=0, mode="sync")
        machine.change_entry(action="reword", device=2, pick=0)
        machine.lose_memory_dir(device=2)
        machine.converge()
    finally:
        machine.teardown()


def test_a_new_promise_is_kept_when_another_device_forgets_one_this_device_removed():
    """Found by the machine: one device removed a promise and wrote a new one under another id,
    and another device forgot the old one with forget --match. The new promise does not hold
    the forgotten text, so it stays."""
    machine = DevicesMachine()
    try:
        machine.add_index_line(device=0)
        machine.same_id_on_two_devices(first=0, second=1)
        machine.change_entry(action="remove", device=0, pick=0)
        machine.add_index_line(device=1)
        machine.add_index_line(device=0)
        machine.sigterm_mid_sync(after=3, device=1)
        machine.forget_match(device=1, pick=362881)
        machine.lose_memory_dir(device=0)
        machine.change_entry(action="remove", device=0, pick=3959)
        machine.same_id_on_two_devices(first=0, second=2)
        machine.change_entry(action="remove", device=0, pick=1011)
        machine.forget_match(device=1, pick=25576)
        machine.converge()
    finally:
        machine.teardown()


def test_an_index_line_edited_before_the_device_learned_of_its_forget():
    """One device forgot an index line with forget --match; another, not yet synced, then
    edited that line's description. Its next sync learns of the forget and takes the line
    out where it still holds the text; nothing else of its index is lost."""
    machine = DevicesMachine()
    try:
        machine.add_index_line(device=0)
        machine.converge()
        machine.forget_match(device=2, pick=0)
        machine.edit_index_description(device=1, pick=0)
        machine.converge()
    finally:
        machine.teardown()


def test_moved_devices_with_unsynced_edits_and_an_unlearned_forget_converge_on_the_new_remote():
    """A move (`memsync migrate` on one device, the same command on the others, then their
    setting) while two devices hold unsynced edits and one has not learned of a forget: the
    edits reach every device through the new remote, the forget is applied once by the
    device that had not learned of it, and neither remote nor any device holds its text."""
    machine = DevicesMachine()
    try:
        machine.add_entry(device=0, name=CARRY, where=0)
        machine.add_index_line(device=1)
        machine.converge()
        machine.forget_match(device=0, pick=0)
        machine.add_entry(device=1, name=CARRY, where=0)
        machine.edit_fact(device=2)
        machine.move_remote(first=2)
        machine.add_entry(device=0, name=VOICE, where=1)
        machine.converge()
        machine.move_remote(first=1)
        machine.forget_match(device=1, pick=0)
        machine.converge()
    finally:
        machine.teardown()


def test_a_purge_after_a_move_leaves_no_purged_text_on_the_devices():
    """README: purge erases the project's remote prefix and local state. After a move, each
    device also keeps its state of the project for the remote it moved from: purge erases
    that one too."""
    machine = DevicesMachine()
    try:
        machine.move_remote(first=0)
        machine.purge_everywhere(device=0)
        machine.converge()
    finally:
        machine.teardown()


def test_an_edit_synced_with_the_old_remote_while_the_others_moved_is_kept():
    """docs/migrate.md: one device migrates, then each other device runs the same command and
    points at the destination. Here device 0 is not there yet when its hook pushes a new
    commitment to the old remote; it then moves, and migrate leaves the destination's copy of
    the file alone (exit 1): the destination still holds the first move's copy, so that copy
    is the merge base and device 0's later version the edit its next sync sends."""
    machine = DevicesMachine()
    try:
        machine.add_entry(device=0, name=COMMITMENTS, where=0)
        old = machine._new_remote()
        machine._move(1, old)
        machine.sync(device=0, mode="push")  # still on the old remote
        assert machine._move(0, old).different == [COMMITMENTS]
        machine._move(2, old)
        machine.retired.append((old, frozenset(machine.forgotten)))
        machine.converge()
    finally:
        machine.teardown()


def test_a_reworded_promise_sharing_an_id_with_a_delivered_one_stays_open():
    """Two promises share an id (minted on two devices); one is forgotten with `--match`
    while another device rewords it, and the other is delivered: the base then holds the id
    once, for the delivered promise, and the rewording shares no words with it. It is the
    other promise (the id minted twice), left open, the collision said."""
    machine = DevicesMachine()
    try:
        machine.same_id_on_two_devices(first=1, second=2)
        machine.sigterm_mid_sync(after=3, device=1)
        machine.sigterm_mid_sync(after=6, device=2)
        machine.change_entry(action="reword", device=1, pick=631)
        machine.forget_match(device=2, pick=101)
        machine.compact(device=0)
        machine.finalise(device=2, name="running_commitments.md", pick=128)
        machine.change_entry(action="remove", device=0, pick=335)
        machine.converge()
    finally:
        machine.teardown()
