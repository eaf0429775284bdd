#!/usr/bin/env python
"""An agent that remembers a user across runs, on two simulated machines.

    pip install "memsync[api]"
    export ANTHROPIC_API_KEY=sk-ant-...
    python examples/remember_user.py --machine laptop "I'm Sam. Keep answers short, please."
    python examples/remember_user.py --machine server "What do you remember about me?"

Each machine has its own memsync home and memory dir under --demo-dir; both share one remote (a
folder in --demo-dir, or pass --remote https://ACCOUNT.blob.core.windows.net/CONTAINER/PREFIX
with AZURE_STORAGE_CONNECTION_STRING set). The agent's memory tool writes on the laptop are
conditional writes to the remote; the server's first look at /memories pulls them. Point
`memsync sync --memory-dir DEMO/laptop/memory --remote ... --project remember-user-demo` at it
and Claude Code's side of memsync sees the same files.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anthropic

from memsync.claude.memory_tool import MemsyncMemoryTool

PROJECT = "remember-user-demo"
SYSTEM = (
    "You are a helpful assistant with a persistent memory directory, /memories, shared by every "
    "machine you run on. Look at it before answering. Keep one file per lasting fact about the "
    "user, named user_<topic>.md (for example user_preferences.md), and update a file rather "
    "than adding a second one on the same topic. Never store passwords, keys or card numbers."
)


def converse(prompt: str, machine: str, demo_dir: Path, remote: str | None, model: str) -> str:
    """One run of the agent on `machine`: the memory tool through the SDK's tool runner."""
    os.environ["MEMSYNC_HOME"] = str(demo_dir / machine / "memsync-home")  # this machine's state
    memory = MemsyncMemoryTool(
        memory_dir=demo_dir / machine / "memory",
        remote=remote or (demo_dir / "remote").as_uri(),
        project=PROJECT,
    )
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model=model,
        max_tokens=1024,
        system=SYSTEM,
        tools=[memory],
        messages=[{"role": "user", "content": prompt}],
    )
    answer = ""
    for message in runner:
        for block in message.content:
            if block.type == "tool_use":
                shown = {k: v for k, v in block.input.items() if k != "command"}
                print(f"[{machine}] memory {block.input.get('command')} {shown}")
            elif block.type == "text":
                answer = block.text
    return answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="An agent that remembers you across machines.")
    parser.add_argument("prompt")
    parser.add_argument("--machine", default="laptop", help="a name: each has its own state")
    parser.add_argument("--demo-dir", type=Path, default=Path("memsync-demo"))
    parser.add_argument("--remote", help="a memsync remote URL (default: a folder in demo-dir)")
    parser.add_argument("--model", default=os.environ.get("MEMSYNC_MODEL", "claude-sonnet-5-5"))
    args = parser.parse_args(argv)
    demo_dir = args.demo_dir.resolve()
    (demo_dir / "remote").mkdir(parents=True, exist_ok=True)
    print(converse(args.prompt, args.machine, demo_dir, args.remote, args.model))


if __name__ == "__main__":
    main()
