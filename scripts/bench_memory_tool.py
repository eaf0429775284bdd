#!/usr/bin/env python
"""What one memory tool call costs through claude.memory_tool: remote requests and latency, per
command, on the folder remote and on Azurite.

    python scripts/bench_memory_tool.py [--files 50] [--repeats 20]

The backend runs in this process, as in an agent: one ToolMemory, warm, on a memory dir that
already holds `--files` synced memory files. Each command runs `--repeats` times; requests are
counted by the store (by kind), latency is the median wall time of the call (the model's
round trip is not included). Azurite comes from .tools/ (scripts/test.sh installs it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memsync.claude.tool_backend import ToolMemory  # noqa: E402
from memsync.context import config  # noqa: E402
from tests.azurite import start_azurite  # noqa: E402
from tests.conftest import write_memory  # noqa: E402


def device(work: Path, name: str, remote: str) -> ToolMemory:
    ctx = config.resolve(work / name / "memory", remote, "bench")
    return ToolMemory(ctx._replace(home=work / name / "home", device=name))


def end(memory: ToolMemory) -> int:
    """The insert_line that appends to voice_calibration.md (after its last line)."""
    return len((memory.root / "voice_calibration.md").read_text().splitlines())


def measure(memory: ToolMemory, call, repeats: int) -> tuple[Counter, list[float]]:
    """(requests by kind per call, seconds of each call) of `call(i)` over `repeats` runs."""
    stats = memory.engine.store.stats
    before = Counter(stats.requests)
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - started)
    spent = Counter(stats.requests)
    spent.subtract(before)
    per_call = Counter({k: v / repeats for k, v in spent.items() if v})
    return per_call, times


def bench(
    remote: str, work: Path, files: int, repeats: int
) -> list[tuple[str, Counter, list[float]]]:
    seed = device(work, "seed", remote)
    seed.root.mkdir(parents=True)
    for i in range(files):
        write_memory(seed.root, f"project_{i:04d}.md", f"Fact {i}.\n", type="project")
    seed.engine.run("push")
    agent = device(work, "agent", remote)
    other = device(work, "other", remote)
    rows = []

    rows.append(
        (
            "session start (first view: bounded pull)",
            *measure(agent, lambda i: agent.view("/memories"), 1),
        )
    )
    agent.create("/memories/voice_calibration.md", "## Notes\n- start\n")
    rows.append(
        ("view a file", *measure(agent, lambda i: agent.view("/memories/project_0001.md"), repeats))
    )
    rows.append(("view /memories", *measure(agent, lambda i: agent.view("/memories"), repeats)))
    rows.append(
        (
            "create (file + MEMORY.md index)",
            *measure(
                agent,
                lambda i: agent.create(f"/memories/user_fact_{i}.md", f"Fact {i}.\n"),
                repeats,
            ),
        )
    )
    rows.append(
        (
            "str_replace",
            *measure(
                agent,
                lambda i: agent.str_replace(
                    "/memories/voice_calibration.md",
                    f"- start{'+' * i}\n",
                    f"- start{'+' * (i + 1)}\n",
                ),
                repeats,
            ),
        )
    )
    rows.append(
        (
            "insert",
            *measure(
                agent,
                lambda i: agent.insert("/memories/voice_calibration.md", end(agent), f"- note {i}"),
                repeats,
            ),
        )
    )
    rows.append(
        (
            "rename (file + index)",
            *measure(
                agent,
                lambda i: agent.rename(
                    f"/memories/user_fact_{i}.md", f"/memories/user_moved_{i}.md"
                ),
                repeats,
            ),
        )
    )
    rows.append(
        (
            "delete (file + index)",
            *measure(agent, lambda i: agent.delete(f"/memories/user_moved_{i}.md"), repeats),
        )
    )
    other.view("/memories")

    def lost_race(i: int) -> None:
        other.insert("/memories/voice_calibration.md", end(other), f"- other {i}")  # lands first
        agent.insert("/memories/voice_calibration.md", end(agent), f"- agent {i}")  # stale: merges

    per_call, _ = measure(agent, lost_race, repeats)  # the agent's store counts its requests
    times = []  # the agent's call alone, without the other device's write before it
    for i in range(repeats, repeats * 2):
        other.insert("/memories/voice_calibration.md", end(other), f"- other {i}")
        started = time.perf_counter()
        agent.insert("/memories/voice_calibration.md", end(agent), f"- agent {i}")
        times.append(time.perf_counter() - started)
    rows.append(("insert that loses a race (merged, retried)", per_call, times))
    return rows


def render(name: str, rows: list[tuple[str, Counter, list[float]]]) -> str:
    out = [f"| {name} | requests per call | median ms | fastest ms |", "|---|---|---:|---:|"]
    for label, requests, times in rows:
        kinds = ", ".join(f"{v:g} {k}" for k, v in sorted(requests.items())) or "none"
        median, fastest = statistics.median(times) * 1000, min(times) * 1000
        out.append(
            f"| {label} | {sum(requests.values()):g} ({kinds}) | {median:.1f} | {fastest:.1f} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"load average before the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["MEMSYNC_HOME"] = str(work / "home")
        folder = work / "remote"
        folder.mkdir()
        print(
            render(
                "folder remote", bench(folder.as_uri(), work / "folder", args.files, args.repeats)
            )
        )
        print()
        server = start_azurite(work / "azurite")
        try:
            os.environ["AZURE_STORAGE_CONNECTION_STRING"] = server.connection_string
            url = server.url()
            print(render("Azurite", bench(url, work / "azure", args.files, args.repeats)))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
