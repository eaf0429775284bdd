"""The command line's parts that need neither Typer nor Rich: output, the engine for the
common options, and pull/push/sync themselves. `memsync pull|push|sync` with only the common
options runs from here without importing Typer (as much start-up as a whole no-op sync's own
work, docs/benchmarks.md); anything else (--help, a typo, other commands) goes through Typer."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memsync.context import config, identity
from memsync.context.config import Context
from memsync.sync.mode import Mode
from memsync.util.errors import (
    ConfigError,
    Interrupted,
    MemsyncError,
    UsageError,
    UserError,
    describe_os_error,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, NoReturn, TextIO

    from rich.console import Console

    from memsync.sync.engine import Engine, SyncResult

JSON_VERSION = 1


class LazyConsole:
    """Rich's Console, made on first use. Plain lines go straight to the stream: importing
    Rich costs as much as a no-op sync's own work (docs/benchmarks.md)."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    @property
    def file(self) -> TextIO:
        return sys.stderr if self._stderr else sys.stdout

    @property
    def rich(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, highlight=False, soft_wrap=True)
        return self._console

    @property
    def is_terminal(self) -> bool:
        return self.file.isatty() and self.rich.is_terminal

    def print(self, *objects: Any, markup: bool | None = None, end: str = "\n", **kw: Any) -> None:
        plain = all(isinstance(o, str) for o in objects)
        if plain and set(kw) <= {"highlight"} and (markup is False or "[" not in "".join(objects)):
            self.file.write(" ".join(objects) + end)
        else:
            self.rich.print(*objects, markup=markup, end=end, **kw)


out = LazyConsole()
err = LazyConsole(stderr=True)


def context(memory_dir: Path | None, remote: str | None, project: str | None = None) -> Context:
    """The resolved settings, checked before a command does anything with them."""
    ctx = config.resolve(memory_dir=memory_dir, remote=remote, project=project)
    if ctx.memory_dir.exists() and not ctx.memory_dir.is_dir():
        raise ConfigError(
            f"the memory dir {ctx.memory_dir} is a file, not a folder; point --memory-dir "
            "(or MEMSYNC_MEMORY_DIR) at a folder"
        )
    return ctx


def engine_for(memory_dir: Path | None, remote: str | None, project: str | None = None):
    """The sync engine for these options; imported here so `--help` stays light."""
    from memsync.sync.engine import Engine

    return Engine(context(memory_dir, remote, project))


def fail(message: str, code: int = 1) -> NoReturn:
    from memsync.privacy.scanner import mask

    err.print(f"memsync: {mask(message)}", markup=False)
    sys.exit(code)


INTERRUPTED = "interrupted; what was done is kept, run the command again to finish"


@contextlib.contextmanager
def outcome() -> Iterator[None]:
    """Every failure leaving a command, as one sentence and the README's exit code: a
    MemsyncError carries its own; Ctrl-C (and SIGTERM, which entry.py makes one) is 130; an
    operating-system error the core did not translate is a user error (1) naming the file.
    A closed pipe (`memsync ls | head`) ends quietly."""
    try:
        yield
    except MemsyncError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail(INTERRUPTED, Interrupted.exit_code)
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes it at exit
        sys.exit(1)
    except OSError as exc:
        fail(describe_os_error(exc), 1)


def emit_json(command: str, data: dict[str, Any]) -> None:
    """The versioned envelope scripts can rely on."""
    from memsync.privacy.scanner import mask

    doc = {"version": JSON_VERSION, "command": command, "data": data}
    sys.stdout.write(mask(json.dumps(doc, indent=2, sort_keys=True, default=str)) + "\n")


def progress_bar(label: str):  # (progress callback or None, context manager)
    """A Rich progress bar on a terminal for jobs of 20 files or more; a no-op otherwise."""
    if not err.is_terminal:
        return None, contextlib.nullcontext()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), console=err.rich, transient=True
    )
    task = None

    def tick(done: int, total: int) -> None:
        nonlocal task
        if total < 20:
            return
        if task is None:
            task = bar.add_task(label, total=total)
        bar.update(task, completed=done)

    return tick, bar


def progress_runner(engine: Engine, **kwargs) -> SyncResult:
    """Run a sync with a progress bar when there are many files and a terminal."""
    tick, bar = progress_bar(str(kwargs.get("mode", Mode.SYNC)))
    with bar:
        return engine.run(progress=tick, **kwargs)


DONE = (
    ("forgotten", "forgotten here (another device ran `memsync forget`)"),
    ("uploaded", "pushed"),
    ("downloaded", "pulled"),
    ("merged", "merged"),
    ("deleted_remote", "deleted on the remote"),
    ("deleted_local", "deleted here (kept in history)"),
)


def done_lines(result: SyncResult) -> None:
    """One line a file for what the run did; also for a run cut short by Ctrl-C or SIGTERM."""
    # one plain write: Rich per line costs a pull of thousands of files whole seconds
    lines = [f"{verb}: {name}\n" for attr, verb in DONE for name in getattr(result, attr)]
    if lines:
        out.file.write("".join(lines))
        out.file.flush()


def _nothing_done(
    result: SyncResult, memory_dir: Path | None, names: list[str] | None = None
) -> str:
    """The one line of a run that changed nothing: "in sync" only when nothing waits. A
    `push FILE` of files unchanged since their last sync asks the remote nothing, so it
    cannot say the rest is in sync."""
    if memory_dir is not None and not memory_dir.is_dir():
        return (
            f"Nothing to sync yet: the memory dir {memory_dir} does not exist (Claude Code "
            "creates it with its first memory; to sync another folder, pass --memory-dir)."
        )
    waiting = _waiting(result)
    if waiting:
        return f"Nothing to {result.mode}; {waiting}"
    if result.kept_local:
        from memsync.privacy.gate import shown_name

        kept = ", ".join(shown_name(name) for name in sorted(result.kept_local))
        return f"Nothing else to {result.mode}: {kept} stays on this device (see above)."
    if names and result.mode is Mode.PUSH:
        return (
            f"Nothing to push: {', '.join(names)} unchanged since the last sync (`memsync "
            "sync` looks for changes on the remote)."
        )
    return "Everything is in sync."


def _waiting(result: SyncResult) -> str | None:
    """What a push or pull left for the other direction, in one clause (None: nothing)."""
    if not result.other_way:
        return None
    count = len(result.other_way)
    if result.mode is Mode.PUSH:
        return (
            f"{count} file(s) changed on the remote (written or deleted) since this device last "
            "pulled: `memsync pull` or `memsync sync` brings any change here."
        )
    return f"{count} file(s) changed here wait for `memsync push` or `memsync sync`."


def report(
    result: SyncResult,
    stats: bool,
    memory_dir: Path | None = None,
    names: list[str] | None = None,
) -> None:
    """Print what happened and exit with the contract's code."""
    if result.disabled:
        err.print("memsync: sync is off (MEMSYNC_SYNC=off); nothing was sent or fetched.")
        return
    done_lines(result)
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    for conflict in result.conflicts:
        err.print(f"conflict: {conflict}", markup=False)
    from memsync.privacy.gate import shown_name

    for name, reason in sorted(result.refused.items()):
        err.print(f"refused: {shown_name(name)}: {reason}", markup=False)
    for name in sorted(result.kept_local):
        err.print(f"kept local (sensitivity: high, no consent): {shown_name(name)}", markup=False)
    for name, reason in sorted(result.refused_remote.items()):
        # a key may hold a newline or a tab: one line each, escaped
        printable = name if name.isprintable() else name.encode("unicode_escape").decode()
        err.print(f"refused from the remote: {shown_name(printable)}: {reason}", markup=False)
    for listed, reason in group_by_reason(result.errors):
        err.print(f"error: {listed}: {reason}", markup=False)
    if result.skipped:
        err.print(f"not done in time: {len(result.skipped)} file(s); run `memsync sync`.")
    for sentence in result.quarantined:
        err.print(f"note: {sentence}.", markup=False)
    attention = (
        result.refused
        or result.refused_remote
        or result.errors
        or result.offline
        or result.quarantined
    )
    if not result.changes and not attention:
        out.print(_nothing_done(result, memory_dir, names), markup=False)
    elif (waiting := _waiting(result)) is not None:
        err.print(f"note: {waiting}", markup=False)
    if stats:
        s = result.stats
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(s.requests.items())) or "none"
        err.print(
            f"requests: {s.total()} ({kinds}); up {s.bytes_up} B, down {s.bytes_down} B; "
            f"{result.seconds:.2f} s",
            markup=False,
        )
    if result.offline:
        queued = (
            f"{len(result.queued)} change(s) queued, they go out with the next pull, push or sync"
            if result.queued
            else "nothing here needed sending"
        )
        fail(
            f"the remote is unreachable ({result.offline}); {queued}",
            3,
        )
    if result.refused or result.refused_remote or result.errors:
        count = len(result.refused) + len(result.refused_remote) + len(result.errors)
        fail(f"{count} file(s) were not synced; see the lines above", 1)


def group_by_reason(problems: dict[str, str], shown: int = 5) -> list[tuple[str, str]]:
    """One line per distinct reason: a read-only credential refuses every file for the same
    reason, which the user needs to read once, with the files it stopped."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in sorted(problems.items()):
        by_reason.setdefault(reason, []).append(name)
    lines = []
    for reason, names in by_reason.items():
        listed = ", ".join(names[:shown])
        if len(names) > shown:
            listed += f" and {len(names) - shown} more"
        if len(names) > 1:
            listed = f"{len(names)} files ({listed})"
        lines.append((listed, reason))
    return sorted(lines, key=lambda line: min(by_reason[line[1]]))


def pushable(engine: Engine, path: Path) -> str:
    """The memory-dir name of a file given to `push`, or a UserError when it cannot be one: a
    typo must not print "Everything is in sync." A file deleted here still counts while the
    last sync knows it (pushing the name sends the deletion)."""
    if not str(path).endswith(".md"):
        raise UserError(f"{path} is not a memory file: memory files end in .md")
    from memsync.sync.walk import ignored_why

    name = engine.name_of(path)
    why = ignored_why(name)
    if why:
        raise UserError(f"{path} is not synced: {why}")
    if not engine.local_path(name).exists() and name not in engine.state.records:
        held = [
            q["path"]
            for q in engine.state.meta.quarantined
            if q.get("file") == name and not q.get("lines") and Path(q["path"]).exists()
        ]
        if held:  # set aside for a forget: say where, not "no such file"
            raise UserError(
                f"{path} was set aside in quarantine, as {held[-1]}, because it was forgotten "
                "on another device; it is not synced: copy what you still need into a new "
                "memory file"
            )
        raise UserError(
            f"{path}: no such file in the memory dir {engine.ctx.memory_dir}; check the name "
            "(`memsync status` lists the files)"
        )
    return name


def transfer(
    mode: Mode,
    memory_dir: Path | None = None,
    remote: str | None = None,
    project: str | None = None,
    force: bool = False,
    stats: bool = False,
    paths: list[Path] | None = None,
    allow: list[str] | None = None,
) -> None:
    """`memsync pull|push|sync`: run, print what happened, exit with the contract's code."""
    if allow:
        from memsync.cli.checks import secret_kinds

        secret_kinds(allow)
        if not paths:
            raise UsageError("--allow needs its file(s): memsync push --allow KIND FILE")
    engine = engine_for(memory_dir, remote, project)
    from memsync.context.builtin_sync import refuse

    refuse(engine.ctx)  # Claude Code's own memory sync syncs this folder: one syncer a folder
    engine.on_wait = lambda sentence: err.print(f"memsync: {sentence}", markup=False)
    names = [pushable(engine, p) for p in paths] if paths else None
    allowed = {name: set(allow) for name in names or ()} if allow else {}
    paths_in_dir = [str(engine.ctx.memory_dir / n) for n in names] if names else None
    try:
        result = progress_runner(engine, mode=mode, paths=paths_in_dir, force=force, allow=allowed)
    except KeyboardInterrupt as stop:
        done = getattr(stop, "done", None)  # set by Engine.run
        if done is not None:
            done_lines(done)
        raise
    finally:
        engine.close()
    if "MEMORY.md" in (*result.downloaded, *result.merged):  # the index this run changed
        from memsync.memory.index_limit import warning_for

        past = warning_for(engine.ctx.memory_dir)
        if past:
            result.notes.append(f"after this {mode.value}, {past}")
    said = {identity.origin_note(engine.ctx.identity, shared) for shared in (False, True)}
    if engine.ctx.other_origin and said & set(result.notes):
        identity.noted(engine.ctx.home, engine.ctx.memory_dir, engine.ctx.identity)
    report(result, stats, engine.ctx.memory_dir, names)


_VALUES = {"--memory-dir": "memory_dir", "--remote": "remote", "--project": "project"}
_FLAGS = {"--force": "force", "--stats": "stats"}


def parse_transfer(argv: list[str]) -> dict[str, Any] | None:
    """`transfer`'s arguments for `pull|push|sync` with only the options those commands take,
    each at most once; None for anything else, which Typer then parses (and explains)."""
    if not argv or argv[0] not in ("pull", "push", "sync"):
        return None
    mode, args = Mode(argv[0]), argv[1:]
    parsed: dict[str, Any] = {"mode": mode}
    paths: list[Path] = []
    allow: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        option, eq, inline = arg.partition("=")
        if option in _VALUES or (mode is Mode.PUSH and option == "--allow"):
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                return None
            if not value or value.startswith("-"):
                return None
            if option == "--allow":
                allow.append(value)
            elif _VALUES[option] in parsed:
                return None
            else:
                parsed[_VALUES[option]] = Path(value) if option == "--memory-dir" else value
        elif arg in _FLAGS and _FLAGS[arg] not in parsed:
            parsed[_FLAGS[arg]] = True
        elif mode is Mode.PUSH and arg and not arg.startswith("-"):
            paths.append(Path(arg))
        else:
            return None
        i += 1
    if paths:
        parsed["paths"] = paths
    if allow:
        parsed["allow"] = allow
    return parsed


def run_plain(argv: list[str]) -> int | None:
    """Run `argv` here if it is a plain pull/push/sync; None when Typer has to parse it."""
    parsed = parse_transfer(argv)
    if parsed is None:
        return None
    with outcome():
        transfer(**parsed)
    return 0
