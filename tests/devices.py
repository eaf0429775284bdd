"""Simulated devices for end-to-end tests: each has its own MEMSYNC_HOME and memory dir and
runs the real `memsync` CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import python_path, write_memory

ROOT = Path(__file__).resolve().parent.parent

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Device:
    name: str
    root: Path
    remote: str
    env_extra: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "memsync-home"

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("MEMSYNC_") or k == "MEMSYNC_AZURITE"
        }
        env.update(
            HOME=str(self.root),
            MEMSYNC_HOME=str(self.home),
            MEMSYNC_MEMORY_DIR=str(self.memory),
            MEMSYNC_REMOTE=self.remote,
            MEMSYNC_PROJECT="e2e-project",
            MEMSYNC_DEVICE=self.name,
            CLAUDE_CONFIG_DIR=str(self.root / ".claude"),
            PYTHONPATH=python_path(REPO),
            # tests look at the remote as soon as a PostToolUse hook returns: it pushes before
            # it answers (tests/test_hooks.py covers the push after the answer, the default)
            MEMSYNC_HOOK_PUSH_WAIT="on",
            # each hook in a process of its own (tests/test_warm_hooks.py covers warm hooks)
            MEMSYNC_WARM_HOOKS="0",
        )
        env.update(self.env_extra)
        return env

    def run(
        self, *args: str, input: str | None = None, check: int | None = 0, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "memsync", *args],
            env=self.env(),
            cwd=self.root,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check is not None and proc.returncode != check:
            raise AssertionError(
                f"memsync {' '.join(args)} on {self.name} exited {proc.returncode}, "
                f"expected {check}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def start(self, *args: str) -> subprocess.Popen[str]:
        """`memsync ARGS` in the background, for a test that acts while it runs."""
        return subprocess.Popen(
            [sys.executable, "-m", "memsync", *args],
            env=self.env(),
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def post_tool_use(self, path: Path, tool: str = "Edit") -> subprocess.CompletedProcess[str]:
        """Claude Code's PostToolUse hook after a `tool` (Edit, Write) of `path` here."""
        payload = {
            "session_id": "s-1",
            "cwd": str(self.root),
            "hook_event_name": "PostToolUse",
            "tool_name": tool,
            "tool_input": {"file_path": str(path)},
            "tool_response": {"filePath": str(path), "success": True},
        }
        return self.run("hook", "post-tool-use", input=json.dumps(payload))

    def hook(self, hook: str, **fields: object) -> subprocess.CompletedProcess[str]:
        """Claude Code's hook `hook` (`stop`, `session-end`...) with a payload of `fields`."""
        payload = {"session_id": "s-1", "cwd": str(self.root), **fields}
        return self.run("hook", hook, input=json.dumps(payload))

    def file_changed(self, path: Path, event: str) -> subprocess.CompletedProcess[str]:
        """Claude Code's FileChanged hook: `event` (add, change, unlink) of `path`."""
        fields = {"hook_event_name": "FileChanged", "event": event, "file_path": str(path)}
        return self.hook("file-changed", **fields)

    def write(self, name: str, body: str = "", **meta: object) -> Path:
        return write_memory(self.memory, name, body, **meta)

    def append(self, name: str, text: str) -> Path:
        """Add `text` at the end of a memory file, as a person or an agent edits one."""
        path = self.memory / name
        path.write_text(path.read_text() + text)
        return path

    def imports(self, snippet: str, prefixes: tuple[str, ...]) -> tuple[str, list[str]]:
        """Run Python `snippet` in a fresh interpreter with this device's environment:
        (its stdout, the modules it loaded whose names start with one of `prefixes`). Start-up
        cost is checked by what gets imported, not by time: these machines are noisy. The
        interpreter runs without `site` (memsync from this checkout), so what a machine's .pth
        files load at start-up (an editable-install finder, a CA hook) is not counted as
        memsync's; a third-party import on the path fails the run."""
        code = (
            "import sys\n_before = set(sys.modules)\n"
            f"{snippet}\nimport json\n"
            "loaded = (m for m in sys.modules if m not in _before)\n"
            f"print(json.dumps(sorted(m for m in loaded if m.startswith({prefixes!r}))),"
            " file=sys.stderr)\n"
        )
        env = dict(self.env(), PYTHONPATH=str(ROOT))
        proc = subprocess.run(
            [sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout, json.loads(proc.stderr.strip().splitlines()[-1])

    def files(self) -> dict[str, bytes]:
        if not self.memory.is_dir():
            return {}
        return {
            p.relative_to(self.memory).as_posix(): p.read_bytes()
            for p in sorted(self.memory.rglob("*"))
            if p.is_file() and not p.name.startswith(".")
        }


def make_device(tmp_path: Path, name: str, remote: str, **env: str) -> Device:
    device = Device(name, tmp_path / name, remote, dict(env))
    device.memory.mkdir(parents=True)
    return device


def wait_until(condition: Callable[[], object], seconds: float = 20.0) -> bool:
    """Whether `condition()` became true within `seconds` (polled every 50 ms)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())
