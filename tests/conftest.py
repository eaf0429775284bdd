"""Shared fixtures. No test touches the real home: MEMSYNC_HOME and friends point at tmp dirs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# MEMSYNC_TEST_NO_FCNTL=1 runs the suite as on a system without `fcntl` (Windows): the module
# is hidden here, before memsync is imported, and in every memsync subprocess the tests start
# (python_path puts tests/nofcntl, whose fcntl.py raises ImportError, first on PYTHONPATH).
# scripts/test.sh runs part of the suite this way; see README "Platforms".
NO_FCNTL = os.environ.get("MEMSYNC_TEST_NO_FCNTL") == "1"
NO_FCNTL_DIR = Path(__file__).resolve().parent / "nofcntl"
if NO_FCNTL:
    sys.modules["fcntl"] = None  # type: ignore[assignment]  # `import fcntl` now fails


def python_path(*entries: str | os.PathLike[str]) -> str:
    """A PYTHONPATH for a memsync subprocess: `entries`, after the no-fcntl shim when the
    suite runs without fcntl."""
    shim = [NO_FCNTL_DIR] if NO_FCNTL else []
    return os.pathsep.join(str(e) for e in (*shim, *entries))


_ENV_TO_CLEAR = (
    "MEMSYNC_MEMORY_DIR",
    "MEMSYNC_REMOTE",
    "MEMSYNC_PROJECT",
    "MEMSYNC_SYNC",
    "MEMSYNC_DEVICE",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_KEY",
    "ANTHROPIC_API_KEY",
    "MEMSYNC_MODEL",
)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("home")
    for name in _ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMSYNC_HOME", str(home / ".memsync"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    # no warm hook process outlives a test: tests that want one say so (test_warm_hooks.py)
    monkeypatch.setenv("MEMSYNC_WARM_HOOKS", "0")
    yield home


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("HYPOTHESIS_PROFILE", "default")
    # A suite started in the background by a non-interactive shell (`cmd &`) ignores SIGINT,
    # and so would every memsync it starts: Python installs its Ctrl-C handler only where
    # SIGINT is not ignored, and the tests that press Ctrl-C would wait in vain. Restore it.
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(params=["folder", pytest.param("azure", marks=pytest.mark.azure)])
def remote_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh remote: a folder, and (marked azure) a container on the shared Azurite."""
    if request.param == "folder":
        folder = tmp_path / "remote"
        folder.mkdir(exist_ok=True)
        return folder.as_uri()
    return request.getfixturevalue("azure_url")


def write_memory(directory: Path, name: str, body: str = "", **meta: object) -> Path:
    """Write a valid memory file (frontmatter + body) for tests."""
    from memsync.memory.frontmatter import render

    fields = {"name": name.removesuffix(".md"), "description": f"test file {name}", **meta}
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(fields, body), encoding="utf-8")
    return path


pytest_plugins = [
    "tests.azurite",
    "tests.s3server",
    "tests.s3server_others",
    "tests.cephrgw",
    "tests.anthropic_server",
]
