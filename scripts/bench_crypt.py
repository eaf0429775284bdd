#!/usr/bin/env python
"""Encryption on vs off: the paths issue 40 bounds, whole processes, median of N.

    python scripts/bench_crypt.py [--runs 11] [--azurite]

Rows, each on a remote without and with `memsync keys init`: the post-tool-use hook for an
edited memory file (validate + one conditional PUT), a no-op sync of 50 files, and a fresh
pull of 500 files into an empty memory dir (a second device joining). Folder remote by
default; --azurite adds the same rows against a fresh Azurite (.tools/, see scripts/test.sh).
memsync runs from this checkout (PYTHONPATH), so the figures compare the two modes of one
build; scripts/bench_hooks.py has the absolute figures of an installed memsync.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.azurite import start_azurite  # noqa: E402


def _env(tmp: Path, remote: str, mem: Path, home: str, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled once, as an installed memsync is
    env.update(
        MEMSYNC_HOME=str(tmp / home),
        MEMSYNC_MEMORY_DIR=str(mem),
        MEMSYNC_REMOTE=remote,
        MEMSYNC_PROJECT="bench",
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str], stdin: str = "") -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memsync", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started


def _write(mem: Path, count: int) -> None:
    mem.mkdir(parents=True)
    for i in range(count):
        (mem / f"project_{i:03}.md").write_text(
            f"---\nname: p{i}\ndescription: d{i}\ntype: project\n---\n\nFact {i}.\n"
        )


def rows(
    tmp: Path, remote: str, extra: dict[str, str], encrypted: bool, runs: int
) -> dict[str, float]:
    mem = tmp / "memory"
    _write(mem, 500)
    env = _env(tmp, remote, mem, "home", extra)
    _run(["push"], env)
    if encrypted:
        _run(["keys", "init"], env)
    target = mem / "project_000.md"
    hook = json.dumps(
        {"tool_name": "Edit", "cwd": str(tmp), "tool_input": {"file_path": str(target)}}
    )
    _run(["sync"], env)  # a warm-up: the byte code of every module it imports is written
    out: dict[str, float] = {}
    times = []
    for i in range(runs):
        target.write_text(target.read_text() + f"- edit {i}\n")
        times.append(_run(["hook", "post-tool-use"], env, hook))
    out["hook post-tool-use, memory file edited"] = statistics.median(times)
    out["no-op sync, 500 files"] = statistics.median(_run(["sync"], env) for _ in range(runs))
    pulls = []
    for i in range(max(3, runs // 3)):
        other = tmp / f"fresh-{i}"
        home = f"home-{i}"
        fresh = _env(tmp, remote, other, home, extra)
        if encrypted:  # the joining device: its key made and added, as a user would
            key = _run_out(["keys", "init"], fresh).splitlines()
            _run(["keys", "add", next(k for k in key if k.startswith("age1"))], env)
        pulls.append(_run(["pull"], fresh))
        shutil.rmtree(other)
    out["fresh pull, 500 files"] = statistics.median(pulls)
    return out


def _run_out(args: list[str], env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-m", "memsync", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--azurite", action="store_true")
    args = parser.parse_args()
    table: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="memsync-crypt-") as t:
        tmp = Path(t)
        remotes = [("folder", None)]
        if args.azurite:
            remotes.append(("Azurite", start_azurite(tmp / "azurite")))
        try:
            for label, server in remotes:
                got = {}
                for encrypted in (False, True):
                    where = tmp / f"{label}-{encrypted}"
                    where.mkdir()
                    if server is None:
                        (where / "remote").mkdir()
                        remote, extra = (where / "remote").as_uri(), {}
                    else:
                        remote = server.url()
                        extra = {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}
                        extra["MEMSYNC_PROJECT"] = f"bench-{encrypted}".lower()
                    got[encrypted] = rows(where, remote, extra, encrypted, args.runs)
                for name in got[False]:
                    table.append((label, name, got[False][name], got[True][name]))
        finally:
            for _, server in remotes:
                if server is not None:
                    server.stop()
    print("| remote | path | off | on | on/off |")
    print("|---|---|---:|---:|---:|")
    for label, name, off, on in table:
        print(f"| {label} | {name} | {off * 1000:.0f} ms | {on * 1000:.0f} ms | {on / off:.2f} |")


if __name__ == "__main__":
    main()
