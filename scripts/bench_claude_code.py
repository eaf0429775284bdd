#!/usr/bin/env python
"""What memsync costs inside the real Claude Code CLI (scripts/test.sh installs the pinned one).

    python scripts/bench_claude_code.py [--runs 5] [--files 50] [--memsync PATH]

--memsync runs an installed memsync (e.g. `VENV/bin/memsync` after `pip install .` into a fresh
venv): `install` through it, so the hooks Claude Code runs are that executable, as a user's are,
and no PYTHONPATH reaches them. Without it, this checkout runs through the current interpreter.

Each run is `claude -p` in a fresh HOME against the loopback fake Messages API (tests/), once
without memsync and once after `memsync install` with N memory files already synced to a folder
remote. Rows, median of --runs:
- session start: process start -> the model's first request (SessionStart hooks run in between);
- a memory Write: the model's Write reply -> its next request (PostToolUse's check, answer);
- a Write outside the memory dir: the same, for the hook's fast path;
- the whole `-p` run: process start -> exit (Stop, SessionEnd included).
`memsync install` starts the warm process (memsync/claude/warm.py), so hooks are answered warm,
as after any earlier hook within 8 hours; --cold turns warm hooks off: every hook starts
memsync anew, as the first hook after a restart (or 8 hours without one) does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.anthropic_server import AnthropicServer  # noqa: E402
from tests.claude_code import CLAUDE, ClaudeHome, Script, tool  # noqa: E402

FACT = "---\nname: n\ndescription: d\nmetadata:\n  type: feedback\n---\n\nA fact.\n"


class Timed(Script):
    """A Script that notes when each main request arrives."""

    def __init__(self, turns: list) -> None:
        super().__init__(turns)
        self.at: list[float] = []

    def __call__(self, body: object):  # a Reply
        if "Write" in {t.get("name") for t in (body or {}).get("tools") or []}:  # type: ignore[union-attr]
            self.at.append(time.perf_counter())
        return super().__call__(body)


class InstalledHome(ClaudeHome):
    """A ClaudeHome whose memsync is an installed executable, run without this checkout."""

    def __init__(self, root: Path, server: AnthropicServer, remote: Path, exe: Path) -> None:
        super().__init__(root, server, remote)
        self.exe = exe

    def env(self, **extra: str) -> dict[str, str]:
        env = super().env(**extra)
        env.pop("PYTHONPATH", None)
        return env

    def memsync(self, *args: str, cwd: Path | None = None, **env: str) -> str:
        proc = subprocess.run(
            [str(self.exe), *args],
            env=self.env(**env),
            cwd=cwd or self.project,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return proc.stdout


def one_run(
    server: AnthropicServer, memsync: bool, files: int, exe: Path | None = None, warm: bool = True
) -> dict[str, float]:
    # ignore_cleanup_errors: SessionEnd's detached flush may still be writing its log
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        if exe is not None:
            cc: ClaudeHome = InstalledHome(Path(tmp), server, Path(tmp) / "remote", exe)
        else:
            cc = ClaudeHome(Path(tmp), server, Path(tmp) / "remote")
        cc.extra_env = {} if warm else {"MEMSYNC_WARM_HOOKS": "0"}
        mem = cc.memory_dir()
        # both runs hold the same memory: Claude Code's own work grows with the memory dir
        mem.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            (mem / f"feedback_{i:03d}.md").write_text(FACT, encoding="utf-8")
        if memsync:
            cc.memsync("install")
            cc.memsync("push")
        inside, outside = mem / "feedback_new.md", cc.project / "notes.md"
        script = Timed(
            [
                [tool("Write", file_path=str(inside), content=FACT)],
                [tool("Write", file_path=str(outside), content="x\n")],
            ]
        )
        started = time.perf_counter()
        proc, _ = cc.claude("bench", script)
        ended = time.perf_counter()
        assert proc.returncode == 0, proc.stderr
        assert len(script.at) == 3, "expected three model requests"
        return {
            "session start (process start -> first request)": script.at[0] - started,
            "memory Write (reply -> next request)": script.at[1] - script.at[0],
            "Write outside the memory dir (reply -> next request)": script.at[2] - script.at[1],
            "whole -p run": ended - started,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--memsync", type=Path, help="an installed memsync executable to use")
    parser.add_argument(
        "--cold", action="store_true", help="no warm process: every hook starts memsync anew"
    )
    args = parser.parse_args()
    if not CLAUDE.exists():
        sys.exit(f"{CLAUDE} is missing: run scripts/test.sh once to install Claude Code")
    exe = args.memsync.absolute() if args.memsync else None
    if exe is not None and not os.access(exe, os.X_OK):
        sys.exit(f"{exe} is not an executable: give the memsync of a venv (VENV/bin/memsync)")
    server = AnthropicServer().start()
    try:
        rows: dict[str, dict[bool, list[float]]] = {}
        for _ in range(args.runs):
            for memsync in (False, True):
                for name, seconds in one_run(
                    server, memsync, args.files, exe, warm=not args.cold
                ).items():
                    rows.setdefault(name, {False: [], True: []})[memsync].append(seconds)
    finally:
        server.stop()
    which = exe or f"{sys.executable} -m memsync (this checkout)"
    print(f"Claude Code at {CLAUDE}, memsync {which}")
    print(
        f"median of {args.runs}, {args.files} memory files synced, "
        + ("hooks cold (MEMSYNC_WARM_HOOKS=0)" if args.cold else "hooks warm")
    )
    print("| what | without memsync | with memsync | added |")
    print("|---|---|---|---|")
    for name, by in rows.items():
        without, with_ = statistics.median(by[False]), statistics.median(by[True])
        print(
            f"| {name} | {without * 1000:.0f} ms | {with_ * 1000:.0f} ms "
            f"| {(with_ - without) * 1000:+.0f} ms |"
        )


if __name__ == "__main__":
    main()
