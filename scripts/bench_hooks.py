#!/usr/bin/env python
"""Time the paths Claude Code waits on: whole hook processes, median of --runs.

    python scripts/bench_hooks.py [--runs 10] [--azurite] [--memsync VENV/bin/memsync]

Rows: `memsync --help`; the post-tool-use hook for a file outside the memory dir (the fast path
run after every Write/Edit); post-tool-use for a memory file Claude Code wrote (its frontmatter
shape), which answers and then pushes in a child Claude Code does not wait for (the row times
the hook's own process, which is what Claude Code waits for); session-start with 50 unchanged
files (one listing, then the primer); each hook cold (MEMSYNC_WARM_HOOKS=0: a process that
imports memsync) and warm (answered by the warm process, memsync/claude/warm.py; the CPU column
then counts only the hook's own process, not the warm process's child). Each row gives the
wall time and the hook process's CPU time (user + system): on a shared machine the first moves
with the load, the second far less.
Folder remote by default; --azurite repeats the network rows against a fresh Azurite (.tools/,
see scripts/test.sh). memsync runs as Claude Code runs it, through the `memsync` console script
of a venv: a fresh one with `pip install .` (as in scripts/bench.py), or the one --memsync names.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "scripts"))

from bench import install  # noqa: E402

from memsync.claude.install import HOOK_LAUNCH  # noqa: E402
from tests.azurite import start_azurite  # noqa: E402

# what Claude Code leaves in a memory file after its Write (docs/claude-code.md)
WRITTEN = (
    "---\nname: tests-first\ndescription: The user wants a failing test before every fix\n"
    "metadata:\n  node_type: memory\n  type: feedback\n"
    "  originSessionId: 2b587376-1917-43c7-8bee-9a04c019d008\n"
    "  modified: 2026-11-24T05:47:59.752Z\n---\n\nWrite the failing test first. ({n})\n"
)


def timed(
    cmd: list[str], env: dict[str, str], stdin: str, runs: int, before: Callable[[], None]
) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of `cmd` as a whole process."""
    wall, cpu = [], []
    for _ in range(runs):
        before()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, check=True)
        wall.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
    return statistics.median(wall), statistics.median(cpu)


def rows(
    tmp: Path, remote: str, extra_env: dict[str, str], exe: Path, runs: int
) -> list[tuple[str, tuple[float, float]]]:
    mem = tmp / "memory"
    mem.mkdir()
    for i in range(50):
        (mem / f"project_{i:02}.md").write_text(
            f"---\nname: p{i}\ndescription: d{i}\ntype: project\n---\n\nFact {i}.\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
    env.pop("PYTHONPATH", None)
    env.update(
        MEMSYNC_HOME=str(tmp / "home"),
        MEMSYNC_MEMORY_DIR=str(mem),
        MEMSYNC_REMOTE=remote,
        MEMSYNC_PROJECT="bench",
        CLAUDE_CONFIG_DIR=str(tmp / "claude"),  # install's hooks: a warm process serves them
        **extra_env,
    )
    cmd = [str(exe)]
    subprocess.run([*cmd, "push"], env=env, check=True, capture_output=True)
    subprocess.run([*cmd, "install"], env=env, check=True, capture_output=True)
    outside = json.dumps(
        {
            "tool_name": "Write",
            "cwd": str(tmp),
            "tool_input": {"file_path": str(tmp / "src" / "main.py")},
        }
    )
    target = mem / "feedback_tests.md"
    inside = json.dumps(
        {"tool_name": "Write", "cwd": str(tmp), "tool_input": {"file_path": str(target)}}
    )
    start = json.dumps({"session_id": "b", "cwd": str(tmp), "source": "startup"})
    writes = iter(range(10**6))

    def write_memory() -> None:
        time.sleep(0.3)  # the previous write's push has finished
        target.write_text(WRITTEN.format(n=next(writes)))

    def nothing() -> None:
        pass

    python = exe.parent / "python"
    hook = [str(python), "-c", HOOK_LAUNCH, "hook"]  # as `memsync install` writes it
    found = [
        (
            "python -c pass (interpreter start-up, for reference)",
            timed([str(python), "-c", "pass"], env, "", runs, nothing),
        ),
        ("memsync --help", timed([*cmd, "--help"], env, "", runs, nothing)),
    ]
    for how in ("cold", "warm"):
        hook_env = dict(env, MEMSYNC_WARM_HOOKS="0" if how == "cold" else "1")
        if how == "cold":
            subprocess.run([*cmd, "uninstall"], env=env, capture_output=True)  # no warm process
            subprocess.run([*cmd, "install"], env=hook_env, check=True, capture_output=True)
        if how == "warm":
            subprocess.run(
                [*hook, "session-start"],
                env=hook_env,
                input=start,
                text=True,
                check=True,
                capture_output=True,
            )
            wait_warm(tmp / "home" / "run" / "hooks.sock")
        found += [
            (
                f"{how}: hook post-tool-use, file outside the memory dir",
                timed([*hook, "post-tool-use"], hook_env, outside, runs, nothing),
            ),
            (
                f"{how}: hook post-tool-use, memory file written (checked, answered; push follows)",
                timed([*hook, "post-tool-use"], hook_env, inside, runs, write_memory),
            ),
            (
                f"{how}: hook session-start, 50 unchanged files",
                timed([*hook, "session-start"], hook_env, start, runs, nothing),
            ),
        ]
    subprocess.run([*cmd, "uninstall"], env=env, capture_output=True)  # the warm process leaves
    return found


def wait_warm(sock: Path) -> None:
    """Until the warm process the first hook started takes calls (it answers `+`)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(1)
            probe.connect(str(sock))
            if probe.recv(1) == b"+":
                return
        except OSError:
            time.sleep(0.05)
        finally:
            probe.close()
    raise SystemExit(f"no warm process answered on {sock}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--azurite", action="store_true")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--memsync", type=Path, help="an installed memsync executable to use")
    args = parser.parse_args()
    results = []
    # ignore_cleanup_errors: a push after the answer or the leaving warm process may still write
    with tempfile.TemporaryDirectory(prefix="memsync-hooks-", ignore_cleanup_errors=True) as t:
        tmp = Path(t)
        exe = args.memsync.absolute() if args.memsync else install(tmp) / "memsync"
        (tmp / "folder" / "remote").mkdir(parents=True)
        folder = (tmp / "folder" / "remote").as_uri()
        for name, secs in rows(tmp / "folder", folder, {}, exe, args.runs):
            results.append(("folder", name, secs))
        if args.azurite:
            server = start_azurite(tmp / "azurite")
            try:
                (tmp / "az").mkdir()
                env = {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}
                for name, secs in rows(tmp / "az", server.url(), env, exe, args.runs)[2:]:
                    results.append(("Azurite", name, secs))
            finally:
                server.stop()
    print(f"memsync {exe}, median of {args.runs}")
    print("| remote | path | wall | CPU |")
    print("|---|---|---|---|")
    for remote, name, (wall, cpu) in results:
        print(f"| {remote} | {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
