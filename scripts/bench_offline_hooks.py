#!/usr/bin/env python
"""What each hook costs while the remote is unreachable (connection refused), median of N.

    python scripts/bench_offline_hooks.py [--runs 5]

Rows: session-start, post-tool-use (a memory Write) and stop, each timed as a whole process
(a) with no offline marker, the first hook of an outage, which waits out the client's retries,
and (b) within the marker's TTL, when the hook queues without touching the network. Uses this
interpreter's memsync (run it from the venv).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FACT = "---\nname: n\ndescription: d\nmetadata:\n  type: feedback\n---\n\nA fact.\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mem = root / "memory"
        mem.mkdir()
        env = {
            **os.environ,
            "HOME": str(root),
            "MEMSYNC_HOME": str(root / ".memsync"),
            "MEMSYNC_MEMORY_DIR": str(mem),
            "MEMSYNC_REMOTE": f"http://127.0.0.1:{port}/devstoreaccount1/memsync",
            "MEMSYNC_PROJECT": "bench",
            "AZURE_STORAGE_CONNECTION_STRING": (
                "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
            ),
        }
        fact = mem / "feedback_x.md"
        base = {"session_id": "s", "cwd": str(root)}
        payloads = {
            "session-start": {**base, "hook_event_name": "SessionStart", "source": "startup"},
            "post-tool-use": {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Write",
                "tool_input": {"file_path": str(fact), "content": FACT},
            },
            "stop": {**base, "hook_event_name": "Stop"},
        }

        def timed(event: str) -> float:
            fact.write_text(FACT + str(time.time()))  # something to queue each time
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "memsync", "hook", event],
                input=json.dumps(payloads[event]),
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            return time.perf_counter() - start

        markers = lambda: list((root / ".memsync" / "state").glob("*/offline.json"))  # noqa: E731
        print(f"{'hook':<15} {'no marker (s)':>14} {'marker (s)':>11}")
        for event in payloads:
            cold, warm = [], []
            for _ in range(runs):
                for m in markers():
                    m.unlink()
                cold.append(timed(event))
                warm.append(timed(event))
            print(f"{event:<15} {statistics.median(cold):>14.2f} {statistics.median(warm):>11.2f}")


if __name__ == "__main__":
    main()
