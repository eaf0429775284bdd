#!/usr/bin/env python
"""Time the paths Claude Code waits on: whole processes, median of 10.

    python scripts/bench_hooks.py [--azurite]

Rows: `memsync --help`; the post-tool-use hook for a file outside the memory dir (the fast path
run after every Write/Edit); post-tool-use for a memory file (validate + one conditional PUT);
session-start with 50 unchanged files (one listing, then the primer). Folder remote by default;
--azurite repeats the network rows against a fresh Azurite (.tools/, see scripts/test.sh).
memsync runs from a fresh venv with `pip install .`, as in scripts/bench.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "scripts"))

from bench import install  # noqa: E402

from tests.azurite import start_azurite  # noqa: E402


def median_seconds(cmd: list[str], env: dict[str, str], stdin: str = "", runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def rows(
    tmp: Path, remote: str, extra_env: dict[str, str], python: Path
) -> list[tuple[str, float]]:
    mem = tmp / "memory"
    mem.mkdir()
    for i in range(50):
        (mem / f"project_{i:02}.md").write_text(
            f"---\nname: p{i}\ndescription: d{i}\ntype: project\n---\n\nFact {i}.\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
    env.update(
        MEMSYNC_HOME=str(tmp / "home"),
        MEMSYNC_MEMORY_DIR=str(mem),
        MEMSYNC_REMOTE=remote,
        MEMSYNC_PROJECT="bench",
        **extra_env,
    )
    cmd = [str(python), "-m", "memsync"]
    subprocess.run([*cmd, "push"], env=env, check=True, capture_output=True)
    outside = json.dumps(
        {
            "tool_name": "Write",
            "cwd": str(tmp),
            "tool_input": {"file_path": str(tmp / "src" / "main.py")},
        }
    )
    target = mem / "project_00.md"
    inside = json.dumps(
        {"tool_name": "Edit", "cwd": str(tmp), "tool_input": {"file_path": str(target)}}
    )
    start = json.dumps({"session_id": "b", "cwd": str(tmp), "source": "startup"})

    def edit_and_push() -> float:
        times = []
        for i in range(10):
            target.write_text(target.read_text() + f"- edit {i}\n")
            started = time.perf_counter()
            subprocess.run(
                [*cmd, "hook", "post-tool-use"],
                env=env,
                input=inside,
                capture_output=True,
                text=True,
                check=True,
            )
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    return [
        (
            "python -c pass (interpreter start-up, for reference)",
            median_seconds([str(python), "-c", "pass"], env),
        ),
        ("memsync --help", median_seconds([*cmd, "--help"], env)),
        (
            "hook post-tool-use, file outside the memory dir",
            median_seconds([*cmd, "hook", "post-tool-use"], env, outside),
        ),
        ("hook post-tool-use, memory file edited (validate + 1 PUT)", edit_and_push()),
        (
            "hook session-start, 50 unchanged files",
            median_seconds([*cmd, "hook", "session-start"], env, start),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--azurite", action="store_true")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="memsync-hooks-") as t:
        tmp = Path(t)
        python = install(tmp) / "python"
        (tmp / "folder" / "remote").mkdir(parents=True)
        for name, secs in rows(tmp / "folder", (tmp / "folder" / "remote").as_uri(), {}, python):
            results.append(("folder", name, secs))
        if args.azurite:
            server = start_azurite(tmp / "azurite")
            try:
                (tmp / "az").mkdir()
                env = {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}
                for name, secs in rows(tmp / "az", server.url(), env, python)[2:]:
                    results.append(("Azurite", name, secs))
            finally:
                server.stop()
    print("| remote | path | median of 10 |")
    print("|---|---|---|")
    for remote, name, secs in results:
        print(f"| {remote} | {name} | {secs * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
