"""`memsync pull|push|sync` with the common options run without Typer; the plain parser must
read every command line it accepts exactly as Typer would, and hand the rest to Typer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.main import get_command

from memsync.cli import _register
from memsync.cli.common import app
from memsync.cli.plain import parse_transfer
from tests.devices import make_device

VALUES = ["x", "file:///tmp/r", "-x", "", "a=b", "--stats", "my proj", "ü.md"]
TOKENS = st.one_of(
    st.sampled_from(
        ["--memory-dir", "--remote", "--project", "--allow", "--force", "--stats", "--help"]
        + ["-h", "--", "--bogus", "--force=1", "--json"]
    ),
    st.sampled_from(VALUES),
    st.builds(
        lambda o, v: f"{o}={v}",
        st.sampled_from(["--remote", "--memory-dir"]),
        st.sampled_from(VALUES),
    ),
)


def typer_params(argv: list[str]) -> dict[str, Any] | None:
    """What Typer's command would be called with, or None if it refuses the line."""
    _register()
    command = get_command(app).commands[argv[0]]  # type: ignore[attr-defined]
    try:
        return command.make_context(argv[0], list(argv[1:])).params
    except (typer.TyperException, typer.Exit):  # a usage error; --help
        return None


def normal(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "memory_dir": None if params.get("memory_dir") is None else str(Path(params["memory_dir"])),
        "remote": params.get("remote"),
        "project": params.get("project"),
        "force": bool(params.get("force")),
        "stats": bool(params.get("stats")),
        "paths": [str(Path(p)) for p in params.get("paths") or []],
        "allow": list(params.get("allow") or []),
    }


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["pull", "push", "sync"]), st.lists(TOKENS, max_size=6))
@example("push", ["--allow", "aws", "user_role.md", "--stats"])
@example("sync", ["--remote=file:///tmp/r", "--memory-dir", "m", "--force"])
def test_the_plain_parser_reads_a_line_as_typer_does_or_declines_it(mode, args):
    fast = parse_transfer([mode, *args])
    if fast is None:
        return
    assert fast.pop("mode") == mode
    slow = typer_params([mode, *args])
    assert slow is not None, f"Typer refuses {[mode, *args]} but the plain parser took it"
    assert normal(fast) == normal(slow)


def test_help_typos_and_other_commands_go_to_typer():
    for argv in (["sync", "--help"], ["pull", "--remot", "x"], ["status"], ["sync", "extra"]):
        assert parse_transfer(argv) is None
    assert parse_transfer(["push", "a.md", "--allow=aws"]) == {
        "mode": "push",
        "paths": [Path("a.md")],
        "allow": ["aws"],
    }


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_printed_and_exits_0(flag):
    import re
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "memsync", flag], capture_output=True, text=True, timeout=60
    )
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    wanted = re.search(r'^version = "(.+)"$', pyproject.read_text(), re.M)[1]
    assert (done.returncode, done.stdout, done.stderr) == (0, f"memsync {wanted}\n", "")


@pytest.mark.parametrize("verb", ["sync", "pull", "push"])
def test_a_plain_sync_imports_neither_typer_nor_rich(tmp_path, verb):
    device = make_device(tmp_path, "laptop", (tmp_path / "remote").as_uri())
    (tmp_path / "remote").mkdir()
    device.write("user_role.md", "Staff engineer.\n", type="user")
    snippet = (
        "import sys\nfrom memsync.entry import main\n"
        f"sys.argv = ['memsync', {verb!r}, '--stats']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
    )
    costly = (
        "dataclasses",
        "inspect",
        "http",
        "email",
        "ssl",
    )  # see test_azure_sync (datetime comes with sqlite3 when merge bases are written)
    out, loaded = device.imports(snippet, ("typer", "rich", "click", "yaml", *costly))
    assert loaded == []
    assert ("pushed: user_role.md" in out) == (verb != "pull")
