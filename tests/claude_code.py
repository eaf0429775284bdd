"""The real Claude Code CLI, driven against the fake Messages API for end-to-end tests.

`scripts/test.sh` installs `@anthropic-ai/claude-code` at the pinned version into .tools/ and
exports MEMSYNC_CLAUDE. A `ClaudeHome` is a fresh HOME with a git project, `memsync install`
done (hooks by absolute path, so the Claude process's PATH holds no memsync), a folder remote,
and a scripted model: each request of the main agent (the one offered the Write tool) gets the
next scripted turn, anything else (titles, summaries) a short text. Loopback only: telemetry,
auto-update and non-essential traffic are off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.anthropic_server import AnthropicServer, Reply, message, text_message
from tests.conftest import python_path

REPO = Path(__file__).resolve().parent.parent
CLAUDE = Path(
    os.environ.get("MEMSYNC_CLAUDE") or REPO / ".tools" / "node_modules" / ".bin" / "claude"
)


def claude_or_skip() -> Path:
    if CLAUDE.exists():
        return CLAUDE
    reason = f"the Claude Code CLI is not installed at {CLAUDE} (scripts/test.sh installs it)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Claude Code is required in CI and {reason}", pytrace=False)
    pytest.skip(reason)


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    """A tool_use block; ids are filled in when the turn is sent."""
    return {"type": "tool_use", "name": name, "input": tool_input}


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def request_text(body: Any) -> str:
    """Everything the model was sent (system prompt and messages) as one string."""
    return json.dumps(body, ensure_ascii=False) if body is not None else ""


class Script:
    """The main agent's turns, in order; after the last, the model just says it is done."""

    def __init__(
        self, turns: list[list[dict[str, Any]]], observe: Callable[[], Any] | None = None
    ) -> None:
        self.turns = list(turns)
        self.observe = observe  # called at each main request; results in `seen`
        self.seen: list[Any] = []
        self.main: list[Any] = []  # the main agent's requests, as sent
        self.others: list[Any] = []
        self._ids = 0

    def __call__(self, body: Any) -> Reply:
        tools = {t.get("name") for t in (body or {}).get("tools") or [] if isinstance(t, dict)}
        if "Write" not in tools:
            self.others.append(body)
            return Reply(200, text_message("ok"))
        self.main.append(body)
        if self.observe is not None:
            self.seen.append(self.observe())
        if not self.turns:
            return Reply(200, text_message("Done."))
        blocks = []
        for block in self.turns.pop(0):
            if block["type"] == "tool_use":
                self._ids += 1
                block = {**block, "id": f"toolu_e2e_{self._ids:03d}"}
            blocks.append(block)
        return Reply(200, message(blocks))


class ClaudeHome:
    """A fresh HOME with one git project and memsync installed into Claude Code."""

    def __init__(self, root: Path, server: AnthropicServer, remote: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = self.home / "proj"
        self.remote = remote
        self.server = server
        self.extra_env: dict[str, str] = {}  # for every process this home runs
        self.project.mkdir(parents=True)
        self.remote.mkdir(parents=True, exist_ok=True)
        git(self.project, "init", "-q")

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            # no memsync (and no venv) on the Claude process's PATH: hooks must not need it
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "MEMSYNC_HOME": str(self.home / ".memsync"),
            "MEMSYNC_REMOTE": self.remote.as_uri(),
            "MEMSYNC_PROJECT": "e2e",
            "ANTHROPIC_BASE_URL": self.server.url,
            "ANTHROPIC_API_KEY": "sk-ant-test-not-real",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            # hooks are answered warm, as a user's are; the warm process leaves soon after
            "MEMSYNC_WARM_IDLE": "10",
        }
        # the hooks Claude Code runs import this checkout's memsync (not whichever copy the
        # interpreter has installed) and, without fcntl, take the same lock as the tests' memsync
        env["PYTHONPATH"] = python_path(REPO)
        env.update(self.extra_env)
        env.update(extra)
        return env

    def memsync(self, *args: str, cwd: Path | None = None, **env: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "memsync", *args],
            # the PATH a test passes, else the Claude process's own: never the runner's, so a
            # test's outcome does not depend on whether its venv is on the caller's PATH
            env={**self.env(**env), "PYTHONPATH": python_path(REPO)},
            cwd=cwd or self.project,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return proc.stdout

    def memory_dir(self, cwd: Path | None = None) -> Path:
        status = json.loads(self.memsync("status", "--json", cwd=cwd))
        data = status.get("data", status)
        return Path(data["memory_dir"])

    def claude(
        self,
        prompt: str,
        turns: list[list[dict[str, Any]]] | Script,
        *args: str,
        cwd: Path | None = None,
        timeout: float = 90,
        **env: str,
    ) -> tuple[subprocess.CompletedProcess[str], Script]:
        script = turns if isinstance(turns, Script) else Script(turns)
        self.server.responder = script
        proc = subprocess.run(
            [str(claude_or_skip()), "-p", prompt, "--output-format", "json", *args],
            env=self.env(**env),
            cwd=cwd or self.project,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return proc, script

    def remote_files(self) -> dict[str, str]:
        """{name: text} of the memory files on the folder remote."""
        found = {}
        for path in self.remote.rglob("*.md"):
            if not any(part.startswith(".") for part in path.relative_to(self.remote).parts):
                found[path.name] = path.read_text(encoding="utf-8")
        return found

    def log(self) -> str:
        path = self.home / ".memsync" / "logs" / "memsync.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
