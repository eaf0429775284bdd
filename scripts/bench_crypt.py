#!/usr/bin/env python
"""Encryption on vs off: the paths issue 40 bounds, whole processes, median of N.

    python scripts/bench_crypt.py [--runs 11] [--azurite]

Rows, each on a remote without and with `memsync keys init`: the post-tool-use hook for an
edited memory file (validate + one conditional PUT), a no-op sync of 500 files, and a fresh
pull of 500 files into an empty memory dir (a second device joining). The two sides run
alternately (off, on, on, off, ...), so the machine's changing load falls on both. Folder remote by
default; --azurite adds the same rows against a fresh Azurite (.tools/, see scripts/test.sh).
memsync runs from this checkout (PYTHONPATH), so the figures compare the two modes of one
build; scripts/bench_hooks.py has the absolute figures of an installed memsync.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


CPU: list[float] = []  # the CPU time (user + system) of each process _run ran, in order


def _run(args: list[str], env: dict[str, str], stdin: str = "") -> float:
    """Wall time of one memsync process; its CPU time is appended to CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memsync", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return took


def _write(mem: Path, count: int) -> None:
    mem.mkdir(parents=True)
    for i in range(count):
        (mem / f"project_{i:03}.md").write_text(
            f"---\nname: p{i}\ndescription: d{i}\ntype: project\n---\n\nFact {i}.\n"
        )


class Side:
    """One remote, encryption off or on, with 500 files pushed: the three paths timed."""

    def __init__(self, tmp: Path, remote: str, extra: dict[str, str], encrypted: bool) -> None:
        self.tmp, self.remote, self.extra, self.encrypted = tmp, remote, extra, encrypted
        mem = tmp / "memory"
        _write(mem, 500)
        self.env = _env(tmp, remote, mem, "home", extra)
        _run(["push"], self.env)
        if encrypted:
            _run(["keys", "init"], self.env)
        self.target = mem / "project_000.md"
        self.hook = json.dumps(
            {"tool_name": "Edit", "cwd": str(tmp), "tool_input": {"file_path": str(self.target)}}
        )
        _run(["sync"], self.env)  # a warm-up: the byte code of every module it imports is written
        self.pulls = 0

    def edit_hook(self) -> float:
        self.target.write_text(self.target.read_text() + f"- edit {time.time()}\n")
        return _run(["hook", "post-tool-use"], self.env, self.hook)

    def noop(self) -> float:
        return _run(["sync"], self.env)

    def fresh_pull(self) -> float:
        self.pulls += 1
        other = self.tmp / f"fresh-{self.pulls}"
        fresh = _env(self.tmp, self.remote, other, f"home-{self.pulls}", self.extra)
        if self.encrypted:  # the joining device: its key made and added, as a user would
            out = _run_out(["keys", "init"], fresh, check=False).split()
            _run(["keys", "add", next(k for k in out if k.startswith("age1"))], self.env)
        # kept until the end: ext4 passes over inodes freed in the last minutes when it
        # makes a file, so a pull right after deleting 500 files makes its files slower, by
        # as much as encryption adds and unevenly between the sides (docs/benchmarks.md)
        return _run(["pull"], fresh)


PATHS = {
    "hook post-tool-use, memory file edited": Side.edit_hook,
    "no-op sync, 500 files": Side.noop,
    "fresh pull, 500 files": Side.fresh_pull,
}


def compare(off: Side, on: Side, runs: int) -> dict[str, tuple[float, float, float, float]]:
    """Medians (off, on) per path of wall time and of CPU time, the two sides run
    alternately (off, on, on, off, ...), so a change in the machine's load falls on both."""
    out = {}
    for name, path in PATHS.items():
        times: dict[bool, list[float]] = {False: [], True: []}
        cpu: dict[bool, list[float]] = {False: [], True: []}
        for i in range(runs):
            for side in (off, on) if i % 2 == 0 else (on, off):
                times[side.encrypted].append(path(side))
                cpu[side.encrypted].append(CPU[-1])
        wall = statistics.median(times[False]), statistics.median(times[True])
        out[name] = (*wall, statistics.median(cpu[False]), statistics.median(cpu[True]))
    return out


def _run_out(args: list[str], env: dict[str, str], check: bool = True) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memsync", *args],
        env=env,
        capture_output=True,
        text=True,
        check=check,
    )
    return done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--azurite", action="store_true")
    args = parser.parse_args()
    table: list[tuple[str, str, float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="memsync-crypt-") as t:
        tmp = Path(t)
        remotes = [("folder", None)]
        if args.azurite:
            remotes.append(("Azurite", start_azurite(tmp / "azurite")))
        try:
            for label, server in remotes:
                sides = []
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
                    sides.append(Side(where, remote, extra, encrypted))
                for name, got in compare(sides[0], sides[1], args.runs).items():
                    table.append((label, name, *got))
        finally:
            for _, server in remotes:
                if server is not None:
                    server.stop()
    print("| remote | path | off | on | on/off | CPU off | CPU on | on/off |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, name, off, on, cpu_off, cpu_on in table:
        print(
            f"| {label} | {name} | {off * 1000:.0f} ms | {on * 1000:.0f} ms | {on / off:.2f} "
            f"| {cpu_off * 1000:.0f} ms | {cpu_on * 1000:.0f} ms | {cpu_on / cpu_off:.2f} |"
        )


if __name__ == "__main__":
    main()
