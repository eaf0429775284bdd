"""`memsync hook <event>`: Claude Code's hooks. They read one JSON object on stdin and always
exit 0 — a hook must never break the agent's session. What goes wrong is logged under
MEMSYNC_HOME/logs, never printed where the agent would read it as context.

The post-tool-use fast path (a write outside the memory dir) resolves the memory dir and returns
before importing the sync engine, let alone the Azure SDK. A memory write is checked and
answered first, and pushed after the answer by a child Claude Code does not wait for
(`push_later`): the engine is imported in that child only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsync.claude.payload import read_payload
from memsync.context import config
from memsync.sync.mode import Mode

if TYPE_CHECKING:
    from collections.abc import Callable

    from memsync.claude.log import Log
from memsync.util import background
from memsync.util.errors import StoreError, UserError

EVENTS = (
    "session-start",
    "post-tool-use",
    "file-changed",
    "stop",
    "post-compact",
    "session-end",
    "pre-compact",
)
WRITE_TOOLS = ("Write", "Edit", "MultiEdit")


def _log(home: Path | None = None) -> Log:
    from memsync.claude.log import get_logger

    return get_logger(home or config.memsync_home())


def _context(payload: dict[str, Any]) -> config.Context:
    cwd = payload.get("cwd")
    path = Path(cwd) if isinstance(cwd, str) and cwd and Path(cwd).is_dir() else None
    return config.resolve(cwd=path)


def _aside(ctx: config.Context, event: str) -> str | None:
    """The sentence (logged) when Claude Code's own memory sync syncs this memory dir and
    memsync stands aside; None when memsync syncs it."""
    from memsync.context.builtin_sync import stand_aside

    said = stand_aside(ctx)
    if said:
        _log(ctx.home).warning("%s: nothing synced: %s", event, said)
    return said


def main(argv: list[str], stdin: Any = None, stdout: Any = None) -> int:
    """Run one hook event. Returns 0, always."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    event = argv[0] if argv else ""
    try:
        if event == "flush":  # the detached half of session-end, not a Claude Code event
            return _flush(argv[1:])
        if event not in EVENTS:
            _log().warning("hook: unknown event %r (expected one of %s)", event, ", ".join(EVENTS))
            return 0
        try:
            payload = read_payload(stdin)
        except (ValueError, UnicodeDecodeError) as exc:
            _log().warning("hook %s: %s; nothing done", event, exc)
            if event == "session-start":
                payload = {}
            else:
                return 0
        handler = {
            "session-start": session_start,
            "post-tool-use": post_tool_use,
            "file-changed": file_changed,
            "stop": push_unsynced,
            "post-compact": push_unsynced,
            "session-end": session_end,
            "pre-compact": pre_compact,
        }[event]
        handler(payload, stdout)
    except BaseException as exc:  # the one place that must catch everything
        if isinstance(exc, KeyboardInterrupt):
            return 0
        with contextlib.suppress(Exception):  # not even a broken log may fail the session
            if isinstance(exc, UserError):  # a refusal with its one sentence: no traceback
                _log().warning("hook %s: nothing synced: %s", event, exc)
            else:
                _log().exception("hook %s failed: %s", event, exc)
    return 0


# --- post-tool-use -------------------------------------------------------------------------


def memory_file_of(payload: dict[str, Any], ctx: config.Context) -> Path | None:
    """The written file, if the tool call wrote inside the memory dir."""
    if payload.get("tool_name") not in WRITE_TOOLS:
        return None
    tool_input = payload.get("tool_input")
    file_path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(file_path, str) or not os.path.isabs(file_path):
        _log(ctx.home).warning(
            "post-tool-use: %s payload without an absolute tool_input.file_path; nothing done",
            payload.get("tool_name"),
        )
        return None
    return inside_memory_dir(file_path, ctx)


def inside_memory_dir(file_path: str, ctx: config.Context) -> Path | None:
    """`file_path` as a path inside the memory dir, however it is spelled: ctx.memory_dir is
    the canonical (symlink-resolved) path, Claude Code's tool input may go through a symlink
    (~/.claude behind one). None for a file elsewhere."""
    root = os.path.normcase(str(ctx.memory_dir)) + os.sep  # Windows: case-insensitive
    normalised = os.path.normpath(file_path)
    if os.path.normcase(normalised).startswith(root):
        return Path(normalised)
    parent, name = os.path.split(normalised)
    real = os.path.join(os.path.realpath(parent), name)
    if os.path.normcase(real).startswith(root):
        return Path(real)
    return None


PUSH_BUDGET = 10.0  # seconds a post-tool-use push may spend on the network


def post_tool_use(payload: dict[str, Any], stdout: Any) -> None:
    """A Write or Edit: a memory file is checked as the push will check it, Claude is told at
    once what will not be synced and why (and what earlier pushes found, see `notices`), and
    the push runs after the answer, in a child Claude Code does not wait for (`push_later`).
    With `hook_push_wait` on, or where a process cannot fork (Windows), the push runs first
    and the answer says what it did."""
    ctx = _context(payload)
    told = take_notices(ctx)
    path = memory_file_of(payload, ctx)
    if path is not None and not _aside(ctx, "post-tool-use"):
        later = not ctx.setting("hook_push_wait") and hasattr(os, "fork")
        replaced: dict[str, str] = {}
        if later:
            problems = refused_here(ctx, path)
        else:
            problems, replaced = _push_one(ctx, path, "post-tool-use")
        told += tell(problems, replaced)
        if path.name == "MEMORY.md" and path.parent == ctx.memory_dir:  # the index as it is
            from memsync.memory.index_limit import warning_for

            past = warning_for(ctx.memory_dir)
            if past:
                told.append(f"memsync: {past}; keep index lines short, one a memory.")
        _answer(stdout, told)
        if later:
            push_later(ctx, path, set(problems), _stamp(path))
        return
    _answer(stdout, told)


def _answer(stdout: Any, told: list[str]) -> None:
    if told:
        doc = {
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": " ".join(told),
            }
        }
        stdout.write(json.dumps(doc) + "\n")
        stdout.flush()


def tell(problems: dict[str, str], replaced: dict[str, str]) -> list[str]:
    """What Claude is told about a push: files not synced (the reasons name a line and a kind,
    never the secret), and writes another device's version replaced."""
    told = []
    if problems:
        # the model wrote the file and would believe it synced: say it was not, and why
        said = "; ".join(f"{name} was NOT synced: {why}" for name, why in problems.items())
        told.append(
            f"memsync: {said}. It stays only on this machine until that is fixed; tell the user."
        )
    if replaced:
        # the push kept another device's version (a later edit of a fact file, an entry it
        # consumed or delivered): the model's write is no longer there
        said = "; ".join(
            f"your write to {name} was replaced by another device's version ({why}); "
            f"your version is in local history (`memsync history {name}`, `memsync restore "
            f"{name}`)"
            for name, why in replaced.items()
        )
        told.append(f"memsync: {said}. Read the file again before relying on it; tell the user.")
    return told


def refused_here(ctx: config.Context, path: Path) -> dict[str, str]:
    """{name: why} for what the push of `path` will refuse, found from this machine alone, the
    way the push finds it: a project without a name, and the scan's checks (secrets, size,
    frontmatter, names) of `path` and of the queued files the push takes along. What only the
    remote can tell (another device forgot the file, or replaced the write) the push finds."""
    if not ctx.project:
        from memsync.context.identity import unnamed_message

        return {path.name: unnamed_message(ctx.memory_dir)}
    if not ctx.sync_enabled:
        return {}
    from memsync.sync import scan
    from memsync.sync.state import State

    state = State(ctx.state_dir, int(ctx.setting("history_versions")))
    local = scan.scan(ctx.memory_dir, state, config.largest_file(ctx))
    refused, _ = local.split_refused()  # kept local by the user's choice: nothing to say
    refused.update(scan.refuse_colliding_names(local, state.records))
    name = path.relative_to(ctx.memory_dir).as_posix()
    only = {name, *state.pending}
    return {n: why for n, why in refused.items() if n in only}


def _stamp(path: Path) -> tuple[int, int] | None:
    """(size, mtime in ns) of `path`: whether it is still the write the hook answered for."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


# Work that follows the answer (a memory write's push), run by `after_answer` once the answer
# is out: the ordinary way in a forked child, since Claude Code waits for the hook's process to
# end; in a warm process's child (claude/warm.py) in that child itself, whose client has ended.
_AFTER: list[Callable[[], None]] = []


def push_later(
    ctx: config.Context, path: Path, told: set[str], stamp: tuple[int, int] | None
) -> None:
    """Push `path` after the hook has answered: Claude Code waits for the answer, not for the
    push. Nothing is lost if the push never finishes: the file is in the memory dir, and every
    later push (the next hook, Stop at the end of the turn, the session-end flush) scans for
    what is unsynced. The state lock keeps the push and those in turn. What the push finds
    that Claude was not told yet (a refusal only the remote could cause, a write replaced by
    another device's version) is kept as a notice for the next hook to tell (`take_notices`);
    unless Claude wrote the file again meanwhile: the hook of that write checks it and says
    what there is to say."""
    _AFTER.append(lambda: _push_after_answer(ctx, path, told, stamp))


def after_answer(detach: bool) -> None:
    """Run the work queued to follow the answer, at a lower priority (`nice` 10: the session's
    next request goes first). `detach`: in a forked child in a session of its own, with the
    hook's stdin, stdout and stderr closed, which Claude Code neither waits for nor kills at
    `-p` exit; else here."""
    work = _AFTER[:]
    _AFTER.clear()
    if not work:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    if detach:
        try:
            if os.fork():
                return
        except OSError as exc:  # no process to spare: here, after the answer all the same
            _log().warning("post-tool-use: pushing in the hook itself: %s", exc)
            detach = False
    try:
        if detach:  # the child: never returns into the hook
            os.setsid()  # out of Claude Code's process group: not killed with it
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # Claude Code reads the hook's output until these close
                os.dup2(null, fd)
        with contextlib.suppress(OSError):
            os.nice(10)
        for job in work:
            job()
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            _log().exception("post-tool-use: the push after the answer failed: %s", exc)
    finally:
        if detach:
            background.exit_now(0)


def _push_after_answer(
    ctx: config.Context, path: Path, told: set[str], stamp: tuple[int, int] | None
) -> None:
    """Push `path`; keep what Claude was not told yet as a notice for the next hook."""
    problems, replaced = _push_one(ctx, path, "post-tool-use")
    now = _stamp(path)  # None when the push set the file aside: that is no new write
    if now is not None and now != stamp:
        told = {*told, path.relative_to(ctx.memory_dir).as_posix()}
    later = tell({n: why for n, why in problems.items() if n not in told}, replaced)
    if later:
        keep_notices(ctx, later)


NOTICES = "hook_notices.json"


def keep_notices(ctx: config.Context, sentences: list[str]) -> None:
    """Add sentences for the next hook to tell Claude."""
    from memsync.util.fsutil import atomic_write, file_lock, private_dir

    private_dir(ctx.state_dir)
    path = ctx.state_dir / NOTICES
    with file_lock(ctx.state_dir / "hook_notices.lock", timeout=5):
        atomic_write(path, json.dumps([*_read_notices(path), *sentences]).encode())


def take_notices(ctx: config.Context) -> list[str]:
    """The sentences earlier pushes kept for Claude, each told once (one stat when none)."""
    path = ctx.state_dir / NOTICES
    if not path.exists():
        return []
    from memsync.util.fsutil import file_lock

    with file_lock(ctx.state_dir / "hook_notices.lock", timeout=5):
        found = _read_notices(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return found


def _read_notices(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [s for s in data if isinstance(s, str)] if isinstance(data, list) else []


def file_changed(payload: dict[str, Any], stdout: Any) -> None:
    """A file under the watched memory dir changed (Bash, an editor, another process): push it.
    Claude Code fires this for the `watchPaths` session-start returned."""
    file_path = payload.get("file_path")
    if not isinstance(file_path, str) or not os.path.isabs(file_path):
        return
    ctx = _context(payload)
    path = inside_memory_dir(file_path, ctx)
    if path is None or not path.name.endswith(".md") or path.name.startswith("."):
        return
    if _aside(ctx, "file-changed"):
        return
    _push_one(ctx, path, "file-changed")


def push_unsynced(payload: dict[str, Any], stdout: Any) -> None:
    """Stop (the end of every turn) and PostCompact: push whatever is still unsynced, so a write
    no other hook saw reaches the remote within the session. A no-op push only scans."""
    ctx = _context(payload)
    event = str(payload.get("hook_event_name") or "stop")
    if _aside(ctx, event):
        return
    engine, known = _engine(ctx)
    held_before = {q.get("path") for q in engine.state.meta.quarantined}
    result = engine.run(Mode.PUSH)
    _after(ctx, known, result)
    for name, why in _set_aside(engine, held_before).items():
        _log(ctx.home).warning("%s: %s not pushed: %s", event, name, why)
    for verb, names in (
        ("pushed", result.uploaded),
        ("merged with the remote's version", result.merged),
        ("deleted on the remote", result.deleted_remote),
    ):
        if names:
            _log(ctx.home).info("%s: %s %s", event, verb, ", ".join(names))
    if result.offline:
        _log(ctx.home).warning(
            "%s: %d change(s) queued, remote unreachable", event, len(result.queued)
        )


def _push_one(ctx: config.Context, path: Path, event: str) -> tuple[dict[str, str], dict[str, str]]:
    """Push one file; returns {name: why} for what was refused or failed (a file another
    device forgot, set aside, included), and {name: why} for a write a later edit from
    another device replaced."""
    log = _log(ctx.home)
    try:
        engine, known = _engine(ctx)  # only now: the fast path never pays for the engine
    except UserError as exc:  # e.g. a folder without a project name: nothing can go out
        log.warning("%s: %s not pushed: %s", event, path.name, exc)
        return {path.name: str(exc)}, {}
    name = engine.name_of(path)
    held_before = {q.get("path") for q in engine.state.meta.quarantined}
    # a stalled or trickling remote fails at the cutoff and the file is queued: the agent
    # waits for this hook after every memory write
    try:
        result = engine.run(Mode.PUSH, [str(path)], cutoff=time.monotonic() + PUSH_BUDGET)
    except (UserError, StoreError) as exc:
        # a lost memory dir (nothing goes out until it is pulled back), another project's
        # memory under this name, a purge, a credential the remote refuses: the model is
        # told, as for a refused file (an unreachable remote is not an error: it is queued)
        log.warning("%s: %s not pushed: %s", event, name, exc)
        return {name: str(exc)}, {}
    _after(ctx, known, result)
    if result.disabled:
        log.info("%s: %s not pushed, sync is off", event, name)
    elif result.offline:
        log.warning("%s: %s queued, the remote is unreachable: %s", event, name, result.offline)
    problems = {**result.refused, **result.errors, **_set_aside(engine, held_before)}
    for refused, reason in problems.items():
        log.warning("%s: %s not pushed: %s", event, refused, reason)
    for lost, why in result.replaced.items():
        log.warning(
            "%s: %s: this write was replaced by another device's version (%s); "
            "it is in local history",
            event,
            lost,
            why,
        )
    for conflict in result.conflicts:
        log.warning("%s: conflict: %s", event, conflict)
    if result.uploaded:
        log.info("%s: pushed %s", event, ", ".join(result.uploaded))
    if result.merged:
        log.info("%s: merged with the remote's version %s", event, ", ".join(result.merged))
    if result.deleted_remote:
        log.info("%s: deleted on the remote %s", event, ", ".join(result.deleted_remote))
    return problems, dict(result.replaced)


def _set_aside(engine: Any, before: set[Any]) -> dict[str, str]:
    """{name: why} for the edits this run set aside in quarantine: files another device
    forgot, which the push therefore did not upload (see sync/tombstones.py)."""
    return {
        q["file"]: (
            "it was forgotten on another device (`memsync forget`), so the edit was moved "
            f"out of the memory dir to quarantine at {q['path']}; write what is still needed "
            "into a new memory file"
        )
        for q in engine.state.meta.quarantined
        if q.get("path") not in before
    }


# --- session-start -------------------------------------------------------------------------


def pull_within(engine: Any, budget: float, mode: Mode = Mode.PULL) -> tuple[Any, str | None]:
    """Pull (draining the queue first; `Mode.SYNC` also pushes every unsynced local change)
    for at most `budget` seconds.

    The pull runs in a daemon thread (its transfers too) so a hung connection cannot hold the
    session, nor the process's exit: no action starts after 0.8 of the budget, no request runs
    past 0.9 of it, and whatever is still running at the end is abandoned, left for the next
    sync (every write it makes is atomic)."""
    import threading

    box: dict[str, Any] = {}
    started = time.monotonic()

    def work() -> None:
        try:
            box["result"] = engine.run(
                mode, deadline=started + budget * 0.8, cutoff=started + budget * 0.9
            )
        except BaseException as exc:  # reported to the caller
            box["error"] = exc

    thread = threading.Thread(target=work, name="memsync-pull", daemon=True)
    thread.start()
    thread.join(max(0.0, started + budget - time.monotonic()))
    if thread.is_alive():
        return None, f"the pull did not finish within {budget:g} s"
    if "error" in box:
        return None, str(box["error"])
    result = box["result"]
    if result.disabled:
        return result, "sync is off (MEMSYNC_SYNC=off)"
    if result.offline:
        return result, f"the remote is unreachable: {result.offline}"
    if result.skipped:
        return result, f"the pull ran out of time with {len(result.skipped)} file(s) left"
    return result, None


def _crash_note(result: Any, offline: str | None, ended: list[Any]) -> str:
    """What the primer says after an unclean end: only what the session-start sync did."""
    when = ", ".join(time.strftime("%Y-%m-%d %H:%M", time.localtime(e.started)) for e in ended)
    which = "a previous session" if len(ended) == 1 else f"{len(ended)} previous sessions"
    said = (
        f"{which} (started {when}) did not end cleanly: its process is gone and no session-end "
        "was recorded; "
    )
    if result is None:
        return said + "its unsynced memory writes could not be pushed yet; the next sync does it"
    if offline:
        return said + "its unsynced memory writes could not be pushed now and stay queued here"
    if result.restored:  # a pull, not a sync: what it wrote in the lost folder is lost with it
        return said + "its memory dir was lost since, and the synced files are restored (below)"
    pushed = len(result.uploaded) + len(result.merged) + len(result.deleted_remote)
    if pushed:
        return said + f"{pushed} memory file(s) it left unsynced were pushed now"
    return said + "every memory file it wrote had already been synced"


def _engine(ctx: config.Context) -> tuple[Any, str | None]:
    """An engine, and why it will not touch the network: a hook shortly before found the
    remote unreachable (see offline.py), so this one queues at once instead of retrying."""
    from memsync.sync import offline
    from memsync.sync.engine import Engine

    known = offline.known_offline(ctx.state_dir, ctx.remote) if ctx.sync_enabled else None
    if known is not None:
        return Engine(ctx, offline.OfflineStore(known, ctx.remote)), known
    engine = Engine(ctx)
    engine.creates_remote = False  # `memsync push` makes a missing remote, naming it
    return engine, None


def _after(ctx: config.Context, known: str | None, result: Any) -> None:
    """Keep the offline marker in step with a run that used the network."""
    from memsync.sync import offline

    if known is None and result is not None and not result.disabled:
        offline.after(ctx.state_dir, result.offline)


def primer_input(ctx: config.Context, engine: Any, source: str, offline: str | None) -> Any:
    from memsync.claude.primer import PrimerInput
    from memsync.memory.index_limit import warning_for

    state = engine.state
    refused = state.refused
    for q in state.meta.quarantined:  # see forget.py
        if Path(q["path"]).exists():
            refused[q["file"]] = (
                f"it was forgotten on another device; the unsynced edit is in {q['path']} "
                "(copy what is still needed into a new memory file, then delete that file)"
            )
    return PrimerInput(
        memory_dir=ctx.memory_dir,
        project=ctx.project,
        source=source,
        conflicts=state.conflicts.as_json(),
        refused=refused,
        queued=state.pending,
        offline=offline,
        last_sync=state.meta.last_sync,
        index_warning=warning_for(ctx.memory_dir),
        notices=take_notices(ctx),
    )


def session_start(payload: dict[str, Any], stdout: Any) -> None:
    from memsync.claude.primer import build
    from memsync.claude.sessions import Sessions

    source = payload.get("source")
    if not isinstance(source, str):
        source = "startup"
    session_id = str(payload.get("session_id") or "")
    try:
        ctx = _context(payload)
        engine, known = _engine(ctx)
    except Exception as exc:  # broken settings, an unnamed project: tell the agent
        _log().warning("session-start: %s", exc)
        _emit(stdout, f"memsync could not start: {exc}. Memory was not synced this session.")
        return
    log = _log(ctx.home)
    budget = float(ctx.setting("pull_timeout"))
    sessions = Sessions(ctx.state_dir)
    ended = sessions.ended_uncleanly(session_id)
    # after an unclean end a sync, not a pull: writes no hook pushed (a crash, a kill) go out
    # now; unless the memory dir is lost, which only a pull restores (a sync refuses)
    mode = Mode.SYNC if ended and not engine.memory_dir_lost(engine.scan_local()) else Mode.PULL
    aside = _aside(ctx, "session-start")
    result, offline = (None, aside) if aside else pull_within(engine, budget, mode)
    _after(ctx, known, result)
    if offline:
        log.warning("session-start: %s", offline)
    elif result is not None:
        if result.restored:
            log.warning("session-start: %s", result.restored)
        log.info(
            "session-start: pulled %d, merged %d, pushed %d",
            len(result.downloaded),
            len(result.merged),
            len(result.uploaded),
        )
    data = primer_input(ctx, _fresh(engine), source, offline)
    try:
        sessions.start(session_id, source)
        if ended and result is not None:  # pushed or queued; after a timeout, the next start
            sessions.forget([e.session_id for e in ended])
    except (OSError, TimeoutError) as exc:  # the primer matters more than the record
        log.warning("session-start: could not record the session: %s", exc)
    if ended:
        data.crashed = _crash_note(result, offline, ended)
    if result is not None:
        data.refused = {**data.refused, **result.refused_remote}
        data.restored = result.restored
    context = build(data, int(ctx.setting("primer_max_chars")))
    if os.environ.get("CLAUDE_PLUGIN_ROOT"):  # the plugin form names its skills /memsync:...
        from memsync.claude.install import skill_name

        context += (
            f"\n\nmemsync skills: {skill_name('digest-session', True)} at session end, "
            f"{skill_name('refresh-persona', True)} to pull what other machines wrote."
        )
    # watchPaths: Claude Code then fires FileChanged for writes no tool hook sees (Bash, editors)
    _emit(stdout, context, [str(ctx.memory_dir)])


def _fresh(engine: Any) -> Any:
    """An engine with state re-read from disk (the pull may still be writing in its thread)."""
    from memsync.sync.state import State

    engine.state = State(engine.ctx.state_dir, engine.state.history_versions)
    return engine


def _emit(stdout: Any, context: str, watch: list[str] | None = None) -> None:
    out: dict[str, Any] = {"hookEventName": "SessionStart", "additionalContext": context}
    if watch:
        out["watchPaths"] = watch
    doc = {"hookSpecificOutput": out}
    stdout.write(json.dumps(doc) + "\n")
    stdout.flush()


# --- session-end and the detached flush ----------------------------------------------------


def session_end(payload: dict[str, Any], stdout: Any) -> None:
    ctx = _context(payload)
    session_id = str(payload.get("session_id") or "")
    from memsync.claude.sessions import Sessions

    try:
        Sessions(ctx.state_dir).end(session_id, str(payload.get("reason") or ""))
    except (OSError, TimeoutError) as exc:  # the flush matters more than the record
        _log(ctx.home).warning("session-end: could not record the end: %s", exc)
    args = [sys.executable, "-m", "memsync", "hook", "flush", "--memory-dir", str(ctx.memory_dir)]
    if isinstance(payload.get("cwd"), str):
        args += ["--cwd", payload["cwd"]]
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str):
        args += ["--transcript", transcript, "--session", session_id]
    env = dict(os.environ, MEMSYNC_MEMORY_DIR=str(ctx.memory_dir))
    import subprocess

    from memsync.util.portable import detached_process_options

    subprocess.Popen(  # our own interpreter and module, no shell
        args,
        cwd=ctx.home,  # -m imports from the working folder first: never the user's project
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        **detached_process_options(),
    )
    _log(ctx.home).info("session-end: flush handed to a detached process")


def _flush(argv: list[str]) -> int:
    """Push everything that changed, then (if configured) write the session digest."""
    opts: dict[str, str] = {}
    for flag, value in zip(argv[::2], argv[1::2], strict=False):
        opts[flag.lstrip("-")] = value
    cwd = Path(opts["cwd"]) if "cwd" in opts and Path(opts["cwd"]).is_dir() else None
    try:
        ctx = config.resolve(memory_dir=opts.get("memory-dir"), cwd=cwd)
        log = _log(ctx.home)
        if _aside(ctx, "flush"):
            return 0
        from memsync.sync.engine import Engine

        result = Engine(ctx).run(Mode.PUSH)  # detached: it may wait out the retries
        _after(ctx, None, result)
        if result.offline:
            log.warning("flush: remote unreachable, %d change(s) queued", len(result.queued))
        else:
            log.info("flush: pushed %d file(s)", len(result.uploaded) + len(result.merged))
        if ctx.setting("digest_on_session_end") and opts.get("transcript"):
            _digest_after_flush(ctx, opts)
    except Exception as exc:  # detached: nobody to tell but the log
        _log().exception("flush failed: %s", exc)
    return 0


def _digest_after_flush(ctx: config.Context, opts: dict[str, str]) -> None:
    try:
        from memsync.claude import digest
    except ImportError:
        _log(ctx.home).info("flush: digest_on_session_end is set but digests are not available")
        return
    digest.on_session_end(ctx, Path(opts["transcript"]), opts.get("session", ""))


# --- pre-compact ---------------------------------------------------------------------------


def pre_compact(payload: dict[str, Any], stdout: Any) -> None:
    ctx = _context(payload)
    _log(ctx.home).info(
        "pre-compact: session %s (%s); nothing to block",
        payload.get("session_id"),
        payload.get("trigger", "?"),
    )
