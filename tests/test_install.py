"""install/uninstall against settings.json files that already hold other hooks and settings."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memsync.claude.install import (
    BEGIN,
    END,
    PLUGIN_COMMAND,
    hook_command,
    hook_launcher,
    hooks_config,
    is_ours,
)
from memsync.cli import _register
from memsync.cli.common import app

runner = CliRunner()
_register()

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "/usr/local/bin/audit-bash"}],
            },
            {
                "matcher": "Write|Edit|MultiEdit",
                "hooks": [{"type": "command", "command": "prettier", "args": ["--write"]}],
            },
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def claude_dir(home):
    return home / ".claude"


def test_install_keeps_everything_else_is_idempotent_and_reversible(_isolated_home):
    settings = claude_dir(_isolated_home) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(USER_SETTINGS, indent=2))
    claude_md = claude_dir(_isolated_home) / "CLAUDE.md"
    claude_md.write_text("# My rules\n\nBe brief.\n")

    output = invoke("install")
    assert "added hook PostToolUse" in output and "backup:" in output
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == USER_SETTINGS["permissions"]
    assert data["hooks"]["Stop"][:1] == USER_SETTINGS["hooks"]["Stop"]
    post = data["hooks"]["PostToolUse"]
    assert post[:2] == USER_SETTINGS["hooks"]["PostToolUse"]
    ours = [h for g in post for h in g["hooks"] if is_ours(h)]
    assert ours == [
        {
            "type": "command",
            "command": hook_launcher()[0],
            "args": [*hook_launcher()[1:], "hook", "post-tool-use"],
            "timeout": 30,
        }
    ]
    # exec form with the installed executable's absolute path: no shell, no PATH lookup
    assert Path(ours[0]["command"]).is_absolute() and Path(ours[0]["command"]).is_file()
    for event in ("SessionStart", "FileChanged", "Stop", "PostCompact", "SessionEnd", "PreCompact"):
        assert any(is_ours(h) for g in data["hooks"][event] for h in g["hooks"])
    skills = claude_dir(_isolated_home) / "skills"
    assert (skills / "digest-session" / "SKILL.md").exists()
    assert (skills / "refresh-persona" / "SKILL.md").exists()
    text = claude_md.read_text()
    assert text.startswith("# My rules\n\nBe brief.\n") and BEGIN in text and END in text
    assert "voice_calibration.md" in text and "carry_forward.md" in text
    assert not list(settings.parent.glob("*backup*"))  # backups stay out of the user's tree
    backups = list((_isolated_home / ".memsync" / "backups").glob("settings.json.*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == USER_SETTINGS

    snapshot = {p: p.read_bytes() for p in claude_dir(_isolated_home).rglob("*") if p.is_file()}
    assert "Already installed" in invoke("install")
    after = {p: p.read_bytes() for p in claude_dir(_isolated_home).rglob("*") if p.is_file()}
    assert after == snapshot

    invoke("uninstall")
    assert json.loads(settings.read_text()) == USER_SETTINGS
    assert claude_md.read_text() == "# My rules\n\nBe brief.\n"
    assert not (skills / "digest-session").exists()
    assert "Nothing of memsync's" in invoke("uninstall")


def test_dry_run_changes_nothing(_isolated_home):
    output = invoke("install", "--dry-run")
    assert "would change" in output
    assert not claude_dir(_isolated_home).exists()


def test_install_into_a_fresh_home_then_uninstall_leaves_no_hooks(_isolated_home):
    invoke("install")
    settings = json.loads((claude_dir(_isolated_home) / "settings.json").read_text())
    assert settings == hooks_config()
    invoke("uninstall")
    assert not claude_dir(_isolated_home).exists()  # install made it all; uninstall removes it


def test_project_scope_writes_into_the_repository(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    monkeypatch.chdir(repo / "src")
    invoke("install", "--scope", "project")
    assert (repo / ".claude" / "settings.json").exists()
    assert (repo / ".claude" / "skills" / "refresh-persona" / "SKILL.md").exists()
    assert BEGIN in (repo / "CLAUDE.md").read_text()


def test_a_broken_settings_file_is_named_and_left_alone(_isolated_home):
    settings = claude_dir(_isolated_home) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{not json")
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "memsync", "install"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert "settings.json" in result.stderr and "not valid JSON" in result.stderr
    assert settings.read_text() == "{not json"


def test_edited_skill_is_left_in_place_on_uninstall(_isolated_home):
    invoke("install")
    skill = claude_dir(_isolated_home) / "skills" / "digest-session" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nMy own addition.\n")
    assert "left in place" in invoke("uninstall")
    assert skill.exists()


def test_plugin_hooks_file_matches_what_install_writes():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    assert json.loads((root / "hooks" / "hooks.json").read_text()) == hooks_config(PLUGIN_COMMAND)
    plugin = json.loads((root / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == "memsync"


def test_settings_example_is_a_valid_settings_file(tmp_path):
    import shutil
    from pathlib import Path

    from memsync.context.config import load_settings

    root = Path(__file__).resolve().parent.parent
    shutil.copy(root / "settings.example.json", tmp_path / "settings.json")
    settings = load_settings(tmp_path)
    assert settings["remote"].startswith("https://")


def test_project_scope_writes_the_portable_bare_name_a_team_can_commit(tmp_path, monkeypatch):
    """.claude/settings.json and the skills are committed: no machine's absolute path in them."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    output = invoke("install", "--scope", "project")
    assert "SessionStart → memsync hook session-start" in output  # what it writes, said
    written = [
        repo / ".claude" / "settings.json",
        repo / ".claude" / "skills" / "digest-session" / "SKILL.md",
        repo / ".claude" / "skills" / "refresh-persona" / "SKILL.md",
    ]
    for path in written:
        text = path.read_text()
        assert hook_command()[0] not in text and str(tmp_path) not in text, path
    data = json.loads(written[0].read_text())
    commands = {h["command"] for g in data["hooks"].values() for x in g for h in x["hooks"]}
    assert commands == {"memsync"}
    assert "allowed-tools: Bash(memsync context" in written[1].read_text()
    # a second machine installing into the same checkout changes nothing
    assert "added hook" not in invoke("install", "--scope", "project")


def test_user_scope_says_the_absolute_command_it_writes(_isolated_home):
    output = invoke("install")
    import shlex

    assert f"SessionStart → {shlex.join([*hook_launcher(), 'hook', 'session-start'])}" in output


def test_hooks_in_shell_form_are_recognised_as_memsync_s_own(_isolated_home):
    """Hand-written `"command": "memsync hook ..."` entries: install replaces rather than
    duplicates them, uninstall removes them."""
    settings = claude_dir(_isolated_home) / "settings.json"
    settings.parent.mkdir(parents=True)
    shell = {
        "hooks": {
            "SessionStart": [
                {"hooks": [{"type": "command", "command": "memsync hook session-start"}]}
            ],
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "notify-send done"},
                        {"type": "command", "command": "/opt/v/bin/memsync hook stop"},
                    ]
                }
            ],
        }
    }
    settings.write_text(json.dumps(shell))
    invoke("install")
    data = json.loads(settings.read_text())
    for event in ("SessionStart", "Stop"):
        ours = [h for g in data["hooks"][event] for h in g["hooks"] if is_ours(h)]
        assert len(ours) == 1 and ours[0]["command"] == hook_launcher()[0], ours
    assert "notify-send done" in settings.read_text()
    settings.write_text(json.dumps(shell))
    invoke("uninstall")
    text = settings.read_text()
    assert "memsync" not in text and "notify-send done" in text


def test_a_windows_settings_file_keeps_its_crlf_and_byte_order_mark(_isolated_home):
    """Notepad's settings.json (a byte-order mark, CRLF) is read, written back in its own
    line endings and mark, and uninstall gives back its exact bytes; a hook written by hand
    is said to be replaced, not added."""
    settings = claude_dir(_isolated_home) / "settings.json"
    settings.parent.mkdir(parents=True)
    hand = {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "memsync.exe hook stop"}]}]}
    }
    original = ("\ufeff" + json.dumps(hand, indent=2).replace("\n", "\r\n") + "\r\n").encode()
    settings.write_bytes(original)
    dry = invoke("install", "--dry-run")
    assert "replaced hook Stop" in dry and "added hook Stop" not in dry, dry
    invoke("install")
    written = settings.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") and b"\r\n" in written
    assert b"\n" not in written.replace(b"\r\n", b"")
    invoke("uninstall")
    assert settings.read_bytes() == original


def test_hooks_never_import_a_folder_named_memsync_in_the_users_project(tmp_path):
    """`python -c` puts the working folder first on sys.path: a project holding a `memsync`
    folder would be imported in place of memsync, and the hook would fail the session."""
    import os
    import subprocess
    import sys

    from memsync.claude.install import HOOK_LAUNCH
    from tests.conftest import python_path

    project = tmp_path / "project"
    (project / "memsync").mkdir(parents=True)
    (project / "memsync" / "__init__.py").write_text("raise SystemExit(7)\n")
    payload = {"tool_name": "Write", "cwd": str(project),
               "tool_input": {"file_path": str(project / "main.py")}}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", HOOK_LAUNCH, "hook", "post-tool-use"],
        env={**os.environ, "PYTHONPATH": python_path(Path(__file__).resolve().parent.parent)},
        cwd=project,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
