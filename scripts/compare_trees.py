"""Two versions of memsync against each other on what a user waits for at start-up.

    python scripts/compare_trees.py BASE [HEAD] [--pairs 40] [--azure]

Each revision is exported with `git archive`, installed with pip into its own venv (compiled,
as a user gets it) and given its own memory dir of 50 files, synced once to its own remote: a
folder, or with --azure a container of one local Azurite (memsync's own REST client, as a
connection string selects). Then each command runs A, B, A, B ... and the report is the median
of the pair ratios HEAD/BASE (pairing keeps the ratio honest when the machine's speed drifts):
wall time and the children's CPU time. The commands: a no-op `memsync sync`, the hook fast path
(`hook post-tool-use` for a file outside the memory dir), `hook post-tool-use` for a memory file
just edited (one push), `hook session-start` with nothing changed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FILES = 50
PAYLOADS = {
    "post-tool-use": {
        "session_id": "s",
        "cwd": "/tmp",
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "/tmp/elsewhere.txt"},
    },
    "session-start": {
        "session_id": "s",
        "cwd": "/tmp",
        "hook_event_name": "SessionStart",
        "source": "startup",
    },
}


class Tree:
    """One revision, installed, with its own memory dir, home and folder remote."""

    def __init__(self, rev: str, work: Path, azure: tuple[str, str] | None) -> None:
        self.rev = rev
        self.dir = work / rev.replace("/", "_")
        src = self.dir / "src"
        src.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
        ).stdout
        archive_path = self.dir / "src.tar"
        archive_path.write_bytes(archive)
        with tarfile.open(archive_path) as tar:
            tar.extractall(src, filter="data")
        venv.create(self.dir / "venv", with_pip=True)
        self.bin = self.dir / "venv" / "bin"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([str(self.bin / "pip"), "install", "-q", str(src)], check=True, env=env)
        mem = self.dir / "mem"
        mem.mkdir()
        for i in range(FILES):
            body = f"fact {i}\n" * 20
            text = f"---\nname: f{i}\ndescription: d{i}\ntype: project\n---\n{body}"
            (mem / f"project_f{i:02}.md").write_text(text)
        self.memory = mem
        if azure is None:
            (self.dir / "remote").mkdir()
            remote = (self.dir / "remote").as_uri()
        else:
            endpoint, connection = azure
            remote = f"{endpoint}/t{abs(hash(rev)) % 10**8}/mem"
            env["AZURE_STORAGE_CONNECTION_STRING"] = connection
        self.env = {
            **env,
            "MEMSYNC_HOME": str(self.dir / "home"),
            "MEMSYNC_MEMORY_DIR": str(mem),
            "MEMSYNC_REMOTE": remote,
            "MEMSYNC_PROJECT": "bench",
            "MEMSYNC_DEVICE": "bench",
        }
        self.run(["sync"])

    def run(self, args: list[str], stdin: bytes = b"") -> tuple[float, float]:
        """Wall and CPU seconds of one whole `memsync ARGS` process. A stdin naming a memory
        file (`MEMORY_FILE`) is about that tree's file, edited just before."""
        if b"MEMORY_FILE" in stdin:
            edited = self.memory / "project_f00.md"
            with edited.open("a") as f:
                f.write("one more line\n")
            stdin = stdin.replace(b"MEMORY_FILE", str(edited).encode())
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [str(self.bin / "memsync"), *args],
            input=stdin,
            env=self.env,
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return wall, cpu


def compare(base: Tree, head: Tree, args: list[str], stdin: bytes, pairs: int) -> str:
    base.run(args, stdin), head.run(args, stdin)  # warm the page cache
    walls, cpus = [], []
    for _ in range(pairs):
        a_wall, a_cpu = head.run(args, stdin)
        b_wall, b_cpu = base.run(args, stdin)
        walls.append(a_wall / b_wall)
        cpus.append(a_cpu / b_cpu if b_cpu else 1.0)
    return f"{statistics.median(walls):.2f}x wall, {statistics.median(cpus):.2f}x CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("head", nargs="?", default="HEAD")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--azure", action="store_true", help="an Azurite remote, not a folder")
    args = parser.parse_args()
    if sys.platform == "win32":
        sys.exit("compare_trees.py needs a POSIX machine (it reads the children's CPU time)")
    with tempfile.TemporaryDirectory(prefix="memsync-trees-") as tmp:
        server = None
        if args.azure:
            from tests.azurite import start_azurite

            os.environ.setdefault("CI", "")
            server = start_azurite(Path(tmp) / "azurite")
        try:
            azure = None if server is None else (server.endpoint, server.connection_string)
            base, head = Tree(args.base, Path(tmp), azure), Tree(args.head, Path(tmp), azure)
            where = "Azurite" if azure else "a folder remote"
            print(f"{args.head} against {args.base} on {where}, median of {args.pairs} pairs")
            rows = [("no-op sync", ["sync"], b"")]
            rows += [
                (f"hook {e}", ["hook", e], json.dumps(p).encode()) for e, p in PAYLOADS.items()
            ]
            edit = dict(PAYLOADS["post-tool-use"], tool_input={"file_path": "MEMORY_FILE"})
            rows.insert(
                2, ("hook push (memory)", ["hook", "post-tool-use"], json.dumps(edit).encode())
            )
            for label, cmd, stdin in rows:
                print(f"  {label:<20} {compare(base, head, cmd, stdin, args.pairs)}", flush=True)
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
