"""memsync inside the real Claude Code CLI (pinned in scripts/test.sh), against the fake Messages
API: what a user gets from `memsync install` or the plugin, seen from the model's requests, the
memory dir, the remote and memsync's own CLI. Each `claude -p` here takes ~0.5-1.5 s."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.anthropic_server import AnthropicServer
from tests.claude_code import REPO, ClaudeHome, Script, claude_or_skip, git, tool, wait_for

CARRY = "Ask Sam about the ZEBRA-42 migration."
CARRY_FORWARD = f"""---
name: carry-forward
description: What to raise at the next session
metadata:
  node_type: memory
  type: carry_forward
---

## Pending
- {CARRY}

## Consumed
"""
FACT = """---
name: Tests first
description: The user wants a failing test before every fix
metadata:
  type: feedback
---

Write the failing test first.
"""


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    claude_or_skip()
    srv = AnthropicServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def cc(tmp_path: Path, server: AnthropicServer) -> ClaudeHome:
    home = ClaudeHome(tmp_path, server, tmp_path / "remote")
    home.memsync("install")
    return home


def seed_carry_forward(cc: ClaudeHome, cwd: Path | None = None) -> Path:
    mem = cc.memory_dir(cwd)
    mem.mkdir(parents=True, exist_ok=True)
    (mem / "carry_forward.md").write_text(CARRY_FORWARD, encoding="utf-8")
    cc.memsync("push", cwd=cwd)
    return mem


def said(body: object) -> str:
    return json.dumps(body, ensure_ascii=False)


def memory_dir_in_prompt(body: object) -> str:
    """The memory dir Claude Code tells the model about in its system prompt."""
    found = re.search(r"persistent file-based memory at `([^`]+)`", said(body))
    assert found, "the system prompt names no memory dir"
    return found.group(1).rstrip("/")


def test_a_session_primes_and_every_write_reaches_the_remote_before_it_exits(cc: ClaudeHome):
    mem = seed_carry_forward(cc)
    fact = mem / "feedback_tests.md"
    bash_file = mem / "bash_note.md"
    # Bash writes a memory file, then waits (10 s at most) until it is on the remote: only the
    # FileChanged hook (SessionStart's watchPaths) can push it while the tool still runs
    bash = (
        f"printf -- '---\\nname: n\\ndescription: d\\n---\\nby bash\\n' > {bash_file}; "
        f'for i in $(seq 100); do [ -n "$(find {cc.remote} -name bash_note.md)" ] && break; '
        "sleep 0.1; done"
    )
    script = Script(
        [
            [tool("Write", file_path=str(fact), content=FACT)],
            [tool("Edit", file_path=str(fact), old_string="first.", new_string="first, always.")],
            [tool("Bash", command=bash, description="write a note")],
        ],
        observe=cc.remote_files,
    )
    proc, _ = cc.claude("Remember that I want tests first.", script, "--allowedTools", "Bash")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["is_error"] is False

    # the SessionStart primer's carry-forward item is in the very first model request
    assert CARRY in said(script.main[0])
    # the Write and the Edit reached the remote before the session ended: each hook answers
    # first and its push follows (a child Claude Code does not wait for); Stop, at the end of
    # the turn, waits for that push and pushes what is left
    assert "first, always." in cc.remote_files()["feedback_tests.md"]
    # Claude Code rewrote the frontmatter into its own shape; memsync types it from there
    written = fact.read_text(encoding="utf-8")
    assert "metadata:\n  node_type: memory\n  type: feedback" in written
    assert "originSessionId:" in written and "name: tests-first" in written
    listing = json.loads(cc.memsync("ls", "--json"))
    files = {f["name"]: f for f in listing.get("data", listing)["files"]}
    assert files["feedback_tests.md"]["type"] == "feedback"
    assert files["carry_forward.md"]["type"] == "carry_forward"
    # the file Bash wrote was pushed while the session ran, by FileChanged
    assert script.seen[3]["bash_note.md"].endswith("by bash\n")
    assert "file-changed: pushed bash_note.md" in cc.log()
    # and SessionEnd handed the final flush to a process that ran
    assert wait_for(lambda: "flush: pushed" in cc.log(), 20), cc.log()


@pytest.mark.parametrize("skill", ["digest-session", "refresh-persona"])
def test_both_skills_inject_their_context_in_the_default_permission_mode(cc, skill):
    seed_carry_forward(cc)
    proc, script = cc.claude(f"/{skill}", [])
    assert proc.returncode == 0, proc.stderr
    assert script.main, "the model was never called"
    sent = said(script.main[-1])
    marker = "Memory as it stands" if skill == "digest-session" else "Memory after a fresh pull"
    assert marker in sent
    after = sent[sent.index(marker) :]
    assert CARRY in after and "permission check failed" not in sent
    # "Work in the memory directory shown above": the injected context names it
    assert f"in the memory directory {cc.memory_dir()}" in after


def test_the_digest_skill_may_push_in_the_default_permission_mode(cc: ClaudeHome):
    """The skill tells the model to run `memsync push`; its allowed-tools let that run."""
    from memsync.claude.install import hook_command

    mem = seed_carry_forward(cc)
    (mem / "self_observations.md").write_text(FACT.replace("feedback", "self_observations"))
    push = " ".join([*hook_command(), "push"])
    proc, script = cc.claude("/digest-session", [[tool("Bash", command=push, description="push")]])
    assert proc.returncode == 0, proc.stderr
    result = said(script.main[1]["messages"][-1])
    assert "requires approval" not in result and '"is_error": true' not in result, result
    assert "self_observations.md" in cc.remote_files()


def test_the_plugin_form_loads_hooks_and_skills(tmp_path: Path, server: AnthropicServer):
    cc = ClaudeHome(tmp_path, server, tmp_path / "remote")  # no `memsync install`
    mem = seed_carry_forward(cc)
    venv_bin = os.path.dirname(sys.executable)
    path = f"{venv_bin}:/usr/local/bin:/usr/bin:/bin"  # the plugin's hooks run `memsync`
    plugin = ("--plugin-dir", str(REPO))
    proc, script = cc.claude("/memsync:refresh-persona", [], *plugin, PATH=path)
    assert proc.returncode == 0, proc.stderr
    sent = said(script.main[0])
    assert CARRY in sent  # the SessionStart primer, from the plugin's hooks
    assert "/memsync:digest-session" in sent  # the primer names the plugin's skills
    assert "Memory after a fresh pull" in sent and "permission check failed" not in sent
    # the other skill, and a memory write pushed by the plugin's PostToolUse in the session
    fact = mem / "feedback_plugin.md"
    script = Script([[tool("Write", file_path=str(fact), content=FACT)]], observe=cc.remote_files)
    proc, _ = cc.claude("/memsync:digest-session", script, *plugin, PATH=path)
    assert proc.returncode == 0, proc.stderr
    assert "Memory as it stands" in said(script.main[0])
    assert "permission check failed" not in said(script.main[0])
    # pushed in the session by the plugin's hooks: PostToolUse after its answer (or Stop, at
    # the end of the turn, had that push not started yet)
    assert "feedback_plugin.md" in cc.remote_files()
    assert wait_for(lambda: "pushed feedback_plugin.md" in cc.log(), 20), cc.log()


def test_a_worktree_session_uses_and_syncs_the_main_repository_memory(cc: ClaudeHome):
    (cc.project / "README").write_text("x\n")
    git(cc.project, "add", "README")
    git(cc.project, "commit", "-qm", "init")
    worktree = cc.home / "proj-feature"
    git(cc.project, "worktree", "add", "-q", str(worktree))
    main_mem = cc.memory_dir()
    assert cc.memory_dir(worktree) == main_mem
    script = Script([])
    proc, _ = cc.claude("hi", script, cwd=worktree)
    assert Path(memory_dir_in_prompt(script.main[0])) == main_mem  # what Claude Code uses
    fact = main_mem / "feedback_worktree.md"
    proc, _ = cc.claude(
        "remember", [[tool("Write", file_path=str(fact), content=FACT)]], cwd=worktree
    )
    assert proc.returncode == 0, proc.stderr
    assert "feedback_worktree.md" in cc.remote_files()


def test_memsync_finds_the_memory_dir_claude_code_uses(cc: ClaudeHome, server):
    """Claude Code names its memory dir in the system prompt: memsync must resolve the same one
    for a long path (cut + hash), odd characters, and each autoMemoryDirectory rule."""
    long_dir = cc.home / ("a-very-long-folder-name-" * 9) / "Ünïcødé proj (2)"
    long_dir.mkdir(parents=True)
    settings = cc.home / ".claude" / "settings.json"
    base = json.loads(settings.read_text(encoding="utf-8"))
    cases = [(long_dir, None), (cc.project, "relative/memory"), (cc.project, "~/notes/memory")]
    cases.append((cc.project, str(cc.home / "abs-memory")))
    for cwd, auto in cases:
        settings.write_text(
            json.dumps({**base, **({"autoMemoryDirectory": auto} if auto else {})}),
            encoding="utf-8",
        )
        script = Script([])
        proc, _ = cc.claude("hi", script, cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        assert cc.memory_dir(cwd) == Path(memory_dir_in_prompt(script.main[0])), (cwd, auto)
    # the project scope comes before the user's (with -p, the workspace counts as trusted)
    (cc.project / ".claude").mkdir()
    project_setting = {"autoMemoryDirectory": str(cc.home / "project-memory")}
    (cc.project / ".claude" / "settings.json").write_text(json.dumps(project_setting))
    script = Script([])
    proc, _ = cc.claude("hi", script)
    assert Path(memory_dir_in_prompt(script.main[0])) == cc.home / "project-memory"
    assert cc.memory_dir() == cc.home / "project-memory"
    # CLAUDE_CODE_PROJECT_DIR_NAME pins the slug when CLAUDE_CONFIG_DIR is set
    (cc.project / ".claude" / "settings.json").unlink()
    settings.write_text(json.dumps(base), encoding="utf-8")
    pinned = {"CLAUDE_CONFIG_DIR": str(cc.home / ".claude"), "CLAUDE_CODE_PROJECT_DIR_NAME": "pin"}
    script = Script([])
    proc, _ = cc.claude("hi", script, **pinned)
    assert Path(memory_dir_in_prompt(script.main[0])) == cc.home / ".claude/projects/pin/memory"
    status = json.loads(cc.memsync("status", "--json", **pinned))
    assert Path(status.get("data", status)["memory_dir"]) == cc.home / ".claude/projects/pin/memory"


def test_with_claude_config_behind_a_symlink_every_hook_uses_one_state(
    tmp_path: Path, server: AnthropicServer
):
    cc = ClaudeHome(tmp_path, server, tmp_path / "remote")
    real = tmp_path / "dotfiles" / "claude"
    real.mkdir(parents=True)
    (cc.home / ".claude").symlink_to(real)
    cc.memsync("install")
    mem = seed_carry_forward(cc)
    script = Script([])
    cc.claude("hi", script)
    spelled = Path(memory_dir_in_prompt(script.main[0]))  # Claude Code's spelling: the symlink
    assert spelled != mem and spelled.resolve() == mem
    fact = spelled / "feedback_linked.md"
    proc, script = cc.claude(
        "remember",
        Script([[tool("Write", file_path=str(fact), content=FACT)]], observe=cc.remote_files),
    )
    assert proc.returncode == 0, proc.stderr
    assert "feedback_linked.md" in cc.remote_files()  # pushed in the session
    assert wait_for(lambda: "flush: pushed" in cc.log(), 20)
    states = list((cc.home / ".memsync" / "state").iterdir())
    assert len(states) == 1, states  # one state dir, one lock, one queue for the one folder


def test_a_project_scope_install_runs_memsync_by_name_from_path(
    tmp_path: Path, server: AnthropicServer
):
    """Project scope writes the bare `memsync` (the files are committed and shared): with it on
    the PATH Claude Code runs with, hooks and skills work; doctor checks the name resolves. The
    session-start records the Claude Code process itself as the live session."""
    cc = ClaudeHome(tmp_path, server, tmp_path / "remote")
    cc.memsync("install", "--scope", "project")
    assert sys.executable not in (cc.project / ".claude" / "settings.json").read_text()
    seed_carry_forward(cc)
    path = f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin"

    def live_sessions() -> list[str]:
        states = cc.home / ".memsync" / "state"
        found = []
        for sessions in states.glob("*/sessions.json"):
            for record in json.loads(sessions.read_text())["live"].values():
                cmdline = Path(f"/proc/{record['pid']}/cmdline")
                found.append(
                    cmdline.read_bytes().decode(errors="replace") if cmdline.exists() else ""
                )
        return found

    script = Script([], observe=live_sessions)
    proc, _ = cc.claude("/refresh-persona", script, PATH=path)
    assert proc.returncode == 0, proc.stderr
    sent = said(script.main[0])
    assert CARRY in sent and "Memory after a fresh pull" in sent
    assert "permission check failed" not in sent
    # the live record names the running Claude Code process (not a shell, not the hook)
    assert len(script.seen[0]) == 1 and "claude" in script.seen[0][0], script.seen
    assert wait_for(lambda: live_sessions() == [], 10)  # session-end removed it
    doctor = json.loads(cc.memsync("doctor", "--json", PATH=path))
    checks = {c["name"]: c for c in doctor.get("data", doctor)["checks"]}
    assert checks["hooks"]["ok"] and "project scope, by name" in checks["hooks"]["detail"]


def test_a_write_refused_for_a_secret_is_reported_to_the_model_without_the_secret(cc: ClaudeHome):
    mem = cc.memory_dir()
    secret = "hunter2-Secret9"
    leaky = FACT.replace("Write the failing test first.", f"password: {secret}")
    script = Script([[tool("Write", file_path=str(mem / "feedback_leak.md"), content=leaky)]])
    proc, _ = cc.claude("remember my password", script)
    assert proc.returncode == 0, proc.stderr
    # the model's next request carries PostToolUse's additionalContext: not synced, and why
    after_write = said(script.main[1]["messages"][-1])
    assert "feedback_leak.md was NOT synced" in after_write, after_write
    assert "looks like a secret" in after_write
    assert after_write.count(secret) == said(script.main[0]).count(secret)  # only the tool input
    assert "feedback_leak.md" not in cc.remote_files()


def test_two_sessions_at_once_then_a_kill_the_primer_says_only_what_is_true(cc: ClaudeHome):
    """Session 1 runs while session 2 starts and ends cleanly: no "unclean end" for session 2.
    Then session 1 writes a memory file with Bash and is killed -9 before any hook pushes it:
    session 3 says so and pushes the file at start."""
    import signal
    import subprocess

    from tests.claude_code import claude_or_skip

    mem = seed_carry_forward(cc)
    go, written = cc.root / "go", cc.root / "written"
    killed = mem / "feedback_killed.md"
    bash = (
        f"while [ ! -f {go} ]; do sleep 0.05; done; "
        "printf -- '---\\nname: k\\ndescription: d\\n---\\nfrom the killed session\\n' "
        f"> {killed}; "
        f"touch {written}; sleep 60"
    )
    first = Script([[tool("Bash", command=bash, description="write, then wait")]])
    cc.server.responder = first
    one = subprocess.Popen(
        [str(claude_or_skip()), "-p", "SESSION-ONE", "--output-format", "json"]
        + ["--allowedTools", "Bash"],
        env=cc.env(),
        cwd=cc.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill takes its Bash with it
    )
    try:
        assert wait_for(lambda: len(first.main) >= 1, 30)  # session 1 started and runs
        two = Script([])
        proc, _ = cc.claude("hi", two)  # session 1 sends nothing while its Bash waits
        assert proc.returncode == 0, proc.stderr
        assert CARRY in said(two.main[0])  # the primer arrived
        assert "did not end cleanly" not in said(two.main[0])  # session 1 still runs
        assert wait_for(lambda: "flush:" in cc.log(), 20)
        go.touch()
        assert wait_for(written.exists, 30)
        os.killpg(one.pid, signal.SIGKILL)
    finally:
        if one.poll() is None:
            os.killpg(one.pid, signal.SIGKILL)
        one.wait(10)
    assert "feedback_killed.md" not in cc.remote_files()  # no hook saw it
    three = Script([])
    proc, _ = cc.claude("hi", three)
    assert proc.returncode == 0, proc.stderr
    primer = said(three.main[0])
    assert "did not end cleanly" in primer
    assert "1 memory file(s) it left unsynced were pushed now" in primer
    assert "feedback_killed.md" in cc.remote_files()


def test_after_compact_index_a_memory_past_line_200_is_reachable_by_claude(cc: ClaudeHome):
    """An index past 200 lines: Claude Code loads its start only (and says so), the primer says
    how many memories Claude cannot see; after `memsync compact --index` the index in the
    system prompt links the sub-index holding the late memory, and Claude reads it there."""
    mem = cc.memory_dir()
    mem.mkdir(parents=True, exist_ok=True)
    lines = ["# Memory index", ""]
    for i in range(262):
        kind = ("project", "feedback", "user", "reference")[i % 4]
        name = f"{kind}_fact{i:03d}.md"
        body = "The LATE-MARKER-77 fact.\n" if i == 261 else f"Fact {i}.\n"
        (mem / name).write_text(
            f"---\nname: fact{i:03d}\ndescription: fact {i}\nmetadata:\n  type: {kind}\n---\n"
            + body,
            encoding="utf-8",
        )
        lines.append(f"- [Fact {i:03d}]({name}) — fact number {i}")
    (mem / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    late = "feedback_fact261.md"
    cc.memsync("push")
    proc, script = cc.claude("What do you remember?", [])
    assert proc.returncode == 0, proc.stderr
    before = said(script.main[0])
    assert late not in before  # cut off by Claude Code
    assert "Claude cannot see 64 memories" in before  # memsync's primer says so

    out = cc.memsync("compact", "--index")
    assert "index_feedback.md" in out
    sub = mem / "index_feedback.md"
    script = Script(
        [[tool("Read", file_path=str(sub))], [tool("Read", file_path=str(mem / late))]]
    )
    proc, _ = cc.claude("What do you remember?", script, "--allowedTools", "Read")
    assert proc.returncode == 0, proc.stderr
    first = said(script.main[0])
    assert "(index_feedback.md)" in first and "Claude cannot see" not in first
    assert "Only part of it was loaded" not in first
    assert late in said(script.main[1])  # the sub-index, as Claude read it
    assert "LATE-MARKER-77" in said(script.main[2])
    assert cc.remote_files()["index_feedback.md"] == sub.read_text(encoding="utf-8")


def test_with_claude_codes_own_memory_sync_on_memsync_stands_aside(cc: ClaudeHome):
    """CLAUDE_MEMORY_STORES with a "scope": "user" store (how Claude Code is told to sync the
    auto-memory itself): memsync's hooks sync nothing, exit 0 and say why in the primer."""
    stores = json.dumps([{"path": "/memories/me", "scope": "user"}])
    mem = cc.memory_dir()
    fact = mem / "feedback_tests.md"
    script = Script([[tool("Write", file_path=str(fact), content=FACT)]])
    proc, _ = cc.claude("Remember tests first.", script, CLAUDE_MEMORY_STORES=stores)
    assert proc.returncode == 0, proc.stderr
    assert "Claude Code's own memory sync is on for" in said(script.main[0])
    assert fact.exists() and "feedback_tests.md" not in cc.remote_files()
    assert "post-tool-use: nothing synced: Claude Code's own memory sync" in cc.log()
    # off again: the next session syncs as before
    proc, _ = cc.claude("Hello.", [])
    assert proc.returncode == 0, proc.stderr
    assert wait_for(lambda: "feedback_tests.md" in cc.remote_files(), 20), cc.log()


def test_the_index_limits_are_the_ones_the_cli_under_test_uses():
    """memsync's limits (memory/index_limit.py) are the constants beside the name MEMORY.md in
    the bundle of the Claude Code under test; a CLI that moved them fails here, by name."""
    import mmap

    from memsync.memory import index_limit

    binary = claude_or_skip().resolve()
    with binary.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        found = set(re.findall(rb'var [\w$]+="MEMORY\.md",[\w$]+=(\d+),[\w$]+=(\d+)', data))
    assert found == {(str(index_limit.MAX_LINES).encode(), str(index_limit.MAX_CHARS).encode())}, (
        f"{binary}: the index limits beside MEMORY.md are {found or 'not found'}; read them "
        "again (docs/claude-code.md) and update memory/index_limit.py"
    )
