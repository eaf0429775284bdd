"""Claude Code's rules as memsync applies them, as pure functions: both frontmatter shapes in
validation and in every merge, the slug and memory-dir rules for Linux, macOS and Windows paths
(expected slugs computed with Claude Code 2.1.330's own function), `autoMemoryDirectory`,
worktrees, and hook commands by absolute path. The real CLI agrees in test_claude_code_e2e.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsync.claude.install import hook_args, is_ours
from memsync.context import config
from memsync.memory import frontmatter as memory
from memsync.memory import memtypes
from memsync.memory.memtypes import type_of
from memsync.memory.merge import merge
from memsync.util.errors import RefusedFile

# --- frontmatter: both shapes -----------------------------------------------------------------


def frontmatter(shape: str, mtype: str, **extra: str) -> str:
    fields = {"type": mtype, **extra}
    if shape == "top":
        lines = [f"{k}: {v}" for k, v in fields.items()]
    else:
        lines = ["metadata:", "  node_type: memory", *(f"  {k}: {v}" for k, v in fields.items())]
    return "---\nname: a-name\ndescription: what it holds\n" + "\n".join(lines) + "\n---\n"


# (type, base body, ours body, theirs body, what the merge must keep from each side)
CASES = [
    (
        "voice_calibration",
        "## 2026-01-01\n- base\n",
        "## 2026-01-01\n- base\n- ours\n",
        "## 2026-01-01\n- base\n- theirs\n",
        ["- ours", "- theirs"],
    ),
    (
        "carry_forward",
        "## Pending\n- a\n\n## Consumed\n",
        "## Pending\n- a\n- ours\n\n## Consumed\n",
        "## Pending\n\n## Consumed\n- a\n",
        ["- ours", "## Consumed\n- a"],
    ),
    (
        "commitments",
        "## Open\n- [c-1] one\n\n## Delivered\n",
        "## Open\n- [c-1] one\n- [c-2] two\n\n## Delivered\n",
        "## Open\n\n## Delivered\n- [c-1] one\n",
        ["[c-2] two", "## Delivered\n- [c-1] one"],
    ),
    (
        "session_digest",
        "",
        "## Session s1\n- ours\n",
        "## Session s2\n- theirs\n",
        ["Session s1", "Session s2"],
    ),
    ("user", "Old fact.\n", "Ours.\n", "Theirs.\n", []),
    # unknown type: line merge of the whole file; both sides changed `modified`, so the newer
    ("mystery", "l1\nl2\nl3\n", "l0\nl1\nl2\nl3\n", "l1\nl2\nl3\nl4\n", ["l4"]),
]


@pytest.mark.parametrize("shape", ["top", "nested"])
@pytest.mark.parametrize(("mtype", "base", "ours", "theirs", "kept"), CASES)
def test_every_merge_reads_the_type_from_either_shape_and_keeps_the_shape(
    shape, mtype, base, ours, theirs, kept
):
    # a file name that says nothing: the type can only come from the frontmatter
    name = "notes-from-claude.md"
    b = frontmatter(shape, mtype, modified="2026-01-01T00:00:00.000Z") + base
    o = frontmatter(shape, mtype, modified="2026-02-01T00:00:00.000Z", originSessionId="s-o")
    t = frontmatter(shape, mtype, modified="2026-03-01T00:00:00.000Z")
    result = merge(name, b.encode(), (o + ours).encode(), (t + theirs).encode())
    text = result.content.decode()
    for piece in kept:
        assert piece in text, (mtype, shape, text)
    meta = memory.parse(text).meta
    assert memory.field(meta, "type") == mtype
    expected_type = mtype if mtype != "mystery" else "unknown"
    assert type_of(name, meta).name == expected_type
    # the shape is kept: no field lands in both places, nothing moves out of metadata
    assert memory.is_nested(meta) == (shape == "nested")
    if shape == "nested":
        assert set(meta) == {"name", "description", "metadata"}
        if mtype not in ("user", "mystery"):  # these take one whole side, the newer
            assert meta["metadata"]["originSessionId"] == "s-o"  # one side's change kept
            assert str(memory.field(meta, "modified")).startswith("2026-03-01")  # the later
    if mtype == "user":
        assert text.endswith("Theirs.\n")  # the newer edit (its `modified`) wins


def test_a_rewrite_keeps_claude_codes_frontmatter_byte_for_byte():
    text = (
        "---\nname: tests-first\ndescription: The user wants tests\nmetadata:\n"
        "  node_type: memory\n  type: feedback\n"
        "  originSessionId: 939958e9-db42-4853-a850-cbf78067e09e\n"
        "  modified: 2026-11-24T06:51:32.235Z\n---\n\nBody.\n"
    )
    doc = memory.parse(text)
    assert doc.render() == text


@pytest.mark.parametrize("shape", ["top", "nested"])
def test_validation_accepts_both_shapes(shape):
    doc = memtypes.check("carry-forward.md", (frontmatter(shape, "carry_forward") + "x\n").encode())
    assert type_of("carry-forward.md", doc.meta).name == "carry_forward"


@pytest.mark.parametrize(
    ("front", "says"),
    [
        ("metadata: just words\n", "'metadata' must be a mapping"),
        ("metadata:\n  type: [a, b]\n", "'metadata.type' must be a single word"),
        ("type: [a, b]\n", "'type' must be a single word"),
    ],
)
def test_validation_names_the_bad_field_in_either_shape(front, says):
    data = f"---\nname: n\ndescription: d\n{front}---\nbody\n".encode()
    with pytest.raises(RefusedFile, match=says):
        memtypes.check("x.md", data)


_KEYS = st.sampled_from(["type", "modified", "status", "sources", "session_id", "consent"])
_VALUES = st.one_of(
    st.text("abc-_ ", min_size=1, max_size=8),
    st.booleans(),
    st.lists(st.text("ab", min_size=1), max_size=3),
)


@given(nested=st.booleans(), key=_KEYS, value=_VALUES, other=_VALUES)
def test_set_field_writes_where_the_file_keeps_its_fields(nested, key, value, other):
    meta = {"name": "n", "description": "d"}
    meta = (
        {**meta, "metadata": {"node_type": "memory", key: other}}
        if nested
        else {**meta, key: other}
    )
    out = memory.set_field(meta, key, value)
    assert memory.field(out, key) == value
    assert memory.is_nested(out) == nested
    assert not (nested and key in out)  # never in both places
    again = memory.parse(memory.render(out, "b\n")).meta
    assert memory.field(again, key) == value


def test_name_slug_is_claude_codes():
    assert memory.name_slug("Carry-forward") == "carry-forward"
    assert memory.name_slug("Tests first!") == "tests-first"
    assert memory.name_slug("user_role") == "user_role"  # already a slug: kept, underscore too
    assert memory.name_slug("User_Role") == "user-role"


# --- slugs and memory dirs ------------------------------------------------------------------

# Expected values computed with Claude Code 2.1.330's own slug function (its bundle, run in node).
SLUGS = [
    (PureWindowsPath("C:\\Users\\me\\proj"), "C--Users-me-proj"),
    (PureWindowsPath("C:\\Users\\Ünïcødé\\My Project (2)"), "C--Users--n-c-d--My-Project--2-"),
    (PureWindowsPath("\\\\server\\share\\proj"), "--server-share-proj"),
    (
        PurePosixPath("/Users/me/Library/Mobile Documents/com~apple~CloudDocs/proj"),
        "-Users-me-Library-Mobile-Documents-com-apple-CloudDocs-proj",
    ),
    (PurePosixPath("/Users/me/café 🚀/x"), "-Users-me-caf-----x"),  # an emoji is two units
    (
        "C:\\Users\\me\\" + "deep\\" * 45 + "proj",
        "C--Users-me-" + "deep-" * 37 + "dee-a0pndu",
    ),
    ("/Users/me/" + "nested/" * 30 + "proj", "-Users-me-" + "nested-" * 27 + "n-nhtn0i"),
]


@pytest.mark.parametrize(("path", "slug"), SLUGS)
def test_slugs_match_claude_code_on_windows_macos_and_linux(path, slug):
    assert config.project_slug(path) == slug


@pytest.mark.parametrize(
    ("config_dir", "root", "expected"),
    [
        (  # Windows: %USERPROFILE%\.claude
            PureWindowsPath("C:\\Users\\me\\.claude"),
            PureWindowsPath("C:\\Users\\me\\proj"),
            PureWindowsPath("C:\\Users\\me\\.claude\\projects\\C--Users-me-proj\\memory"),
        ),
        (  # Windows, another drive and CLAUDE_CONFIG_DIR elsewhere
            PureWindowsPath("D:\\cc"),
            PureWindowsPath("E:\\work\\my.app"),
            PureWindowsPath("D:\\cc\\projects\\E--work-my-app\\memory"),
        ),
        (  # macOS
            PurePosixPath("/Users/me/.claude"),
            PurePosixPath("/Users/me/Projects/web-app"),
            PurePosixPath("/Users/me/.claude/projects/-Users-me-Projects-web-app/memory"),
        ),
    ],
)
def test_memory_dir_on_windows_and_macos(config_dir, root, expected, monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_PROJECT_DIR_NAME", raising=False)
    assert config.default_memory_dir(config_dir, root) == expected


@pytest.mark.parametrize(
    ("value", "windows", "expected"),
    [
        ("/abs/mem/", False, "/abs/mem"),
        ("~/mem", False, "/home/u/mem"),
        ("relative/mem", False, None),  # Claude Code ignores it: memsync must too
        ("./mem", False, None),
        ("~/../etc", False, None),
        ("~/", False, None),
        ("//server/share/mem", False, None),
        ("/", False, None),
        ("", False, None),
        ("C:\\mem", True, "C:\\mem"),
        ("~\\mem", True, "C:\\Users\\me\\mem"),
        ("C:", True, None),
        ("\\\\server\\share\\mem", True, None),
        ("mem", True, None),
    ],
)
def test_auto_memory_directory_is_honoured_only_absolute_or_home(value, windows, expected):
    home = "C:\\Users\\me" if windows else "/home/u"
    assert config.check_auto_memory(value, home, windows=windows)[0] == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("~/../escape", "climbs out of the home directory"),
        ("relative/mem", "relative"),
        ("//server/share", "network path"),
        ("~/", "home directory itself"),
    ],
)
def test_status_says_the_true_reason_an_auto_memory_directory_is_ignored(
    tmp_path, monkeypatch, value, reason
):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".claude"))
    monkeypatch.setattr(config, "managed_settings_path", lambda: tmp_path / "managed.json")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": value}))
    located = config.locate_memory_dir(tmp_path / ".claude")
    assert "is ignored (it " in located.reason and reason in located.reason, located
    assert "not absolute or ~/" not in located.reason


def test_the_first_scope_that_sets_auto_memory_directory_decides(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".claude"))
    monkeypatch.setattr(config, "managed_settings_path", lambda: tmp_path / "managed.json")
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": "~/u"}))
    assert config.locate_memory_dir(proj).path == tmp_path / "u"
    (proj / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": "rel"}))
    located = config.locate_memory_dir(proj)  # set but invalid: the default, not the user's
    assert located.path.name == "memory" and "ignored" in located.reason
    (tmp_path / "managed.json").write_text(json.dumps({"autoMemoryDirectory": str(tmp_path / "m")}))
    assert config.locate_memory_dir(proj).path == tmp_path / "m"


def test_project_dir_name_needs_claude_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "pinned")
    assert config.locate_memory_dir(tmp_path).path.parent.name != "pinned"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert config.locate_memory_dir(tmp_path).path == tmp_path / "cc/projects/pinned/memory"
    for bad, why in (("con", "Windows device"), ("a/b", "1-64 characters"), ("x" * 65, "1-64")):
        monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", bad)
        located = config.locate_memory_dir(tmp_path)
        assert located.path.parent.name != bad
        assert f"CLAUDE_CODE_PROJECT_DIR_NAME {bad!r} is ignored" in located.reason, located
        assert why in located.reason
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "pinned")
    assert "only when CLAUDE_CONFIG_DIR is set" in config.locate_memory_dir(tmp_path).reason


def test_a_worktree_maps_to_its_main_repository_and_a_submodule_does_not(tmp_path):
    main = tmp_path / "main"
    main.mkdir()
    run = lambda *a, cwd=main: subprocess.run(  # noqa: E731
        ["git", "-c", "user.name=t", "-c", "user.email=t@e.invalid", *a],
        cwd=cwd,
        check=True,
        capture_output=True,
    )
    run("init", "-q")
    (main / "f").write_text("x")
    run("add", "f")
    run("commit", "-qm", "i")
    run("worktree", "add", "-q", str(tmp_path / "wt"))
    assert config.main_worktree(tmp_path / "wt") == main
    assert config.main_worktree(main) == main
    fake = tmp_path / "sub"
    fake.mkdir()
    (fake / ".git").write_text(f"gitdir: {main}/.git/modules/sub\n")  # not a worktree
    assert config.main_worktree(fake) == fake


def test_one_canonical_memory_dir_keys_the_state_however_it_is_spelled(tmp_path, monkeypatch):
    real = tmp_path / "real-claude"
    (real / "projects" / "p" / "memory").mkdir(parents=True)
    link = tmp_path / "link-claude"
    link.symlink_to(real)
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "ms"))
    a = config.resolve(memory_dir=link / "projects" / "p" / "memory", cwd=tmp_path)
    b = config.resolve(memory_dir=real / "projects" / "p" / "memory", cwd=tmp_path)
    assert a.memory_dir == b.memory_dir and a.state_dir == b.state_dir
    from memsync.claude.hooks import inside_memory_dir

    spelled = str(link / "projects" / "p" / "memory" / "x.md")
    assert inside_memory_dir(spelled, a) == real / "projects" / "p" / "memory" / "x.md"
    assert inside_memory_dir(str(tmp_path / "elsewhere.md"), a) is None


# --- hook commands --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "args"),
    [
        ({"command": "/opt/venv/bin/memsync", "args": ["hook", "stop"]}, ["stop"]),
        (
            {"command": "C:\\Users\\me\\venv\\Scripts\\memsync.exe", "args": ["hook", "stop"]},
            ["stop"],
        ),
        ({"command": "memsync", "args": ["hook", "session-start"]}, ["session-start"]),
        ({"command": "/usr/bin/python3", "args": ["-m", "memsync", "hook", "stop"]}, ["stop"]),
        ({"command": "prettier", "args": ["--write"]}, None),
        ({"command": "/x/memsync-other", "args": ["hook"]}, None),
        ({"command": "memsync sync"}, None),
        ({"command": "memsync hook session-start"}, ["session-start"]),
        ({"command": "/opt/venv/bin/memsync hook stop 2>/dev/null"}, ["stop", "2>/dev/null"]),
        ({"command": "'/opt/my venv/bin/memsync' hook stop"}, ["stop"]),
        ({"command": "python3 -m memsync hook post-tool-use"}, ["post-tool-use"]),
        ({"command": "echo memsync hook stop"}, None),
        ({"command": "memsync", "args": ["sync"]}, None),
    ],
)
def test_install_recognises_its_hooks_in_every_spelling(entry, args):
    assert hook_args({"type": "command", **entry}) == args
    assert is_ours(entry) == (args is not None)


def test_installed_skills_name_the_same_absolute_command_as_the_hooks():
    from memsync.claude.install import hook_command, skill_texts

    exe = " ".join(hook_command())
    for name, text in skill_texts().items():
        assert f"!`{exe} context" in text, name
        assert f"allowed-tools: Bash({exe} context" in text, name
    assert Path(hook_command()[0]).is_absolute()


def test_doctor_checks_the_hook_commands(tmp_path, monkeypatch):
    from memsync.admin.doctor import hooks_check
    from memsync.claude.install import hooks_config

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    settings = tmp_path / "settings.json"  # the user scope's
    settings.write_text(json.dumps(hooks_config()))
    assert hooks_check([settings]).ok
    settings.write_text(json.dumps(hooks_config(["/nowhere/bin/memsync"])))
    check = hooks_check([settings])
    assert not check.ok and "not there" in check.detail and "memsync install" in check.fix
    settings.write_text(json.dumps(hooks_config(["memsync"])))
    check = hooks_check([settings])
    assert not check.ok and "by name" in check.detail
    # nothing installed is not "ok": doctor says so, and how to install
    check = hooks_check([tmp_path / "missing.json"])
    assert "not installed in Claude Code" in check.detail and "memsync install" in check.detail
    # a project's settings (committed, shared) hold the bare name: fine while it resolves
    project = tmp_path / "proj" / ".claude" / "settings.json"
    project.parent.mkdir(parents=True)
    project.write_text(json.dumps(hooks_config(["memsync"])))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "memsync").write_text("#!/bin/sh\n")
    (bin_dir / "memsync").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    check = hooks_check([tmp_path / "missing.json", project])
    assert check.ok and "project scope, by name" in check.detail, check
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    check = hooks_check([project])
    assert not check.ok and "not on this PATH" in check.detail
    # hooks in shell form are memsync's too
    project.write_text(json.dumps(shell_form_hooks("memsync")))
    monkeypatch.setenv("PATH", str(bin_dir))
    assert hooks_check([project]).ok


def shell_form_hooks(command: str) -> dict:
    return {
        "hooks": {
            "SessionStart": [
                {"hooks": [{"type": "command", "command": f"{command} hook session-start"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": f"{command} hook stop"}]}],
        }
    }


def test_hook_command_is_the_installed_executable_or_this_interpreter(tmp_path):
    from memsync.claude.install import handler, hook_command

    scripts = tmp_path / "Scripts"
    scripts.mkdir()
    (scripts / "memsync.exe").write_bytes(b"MZ")
    exe = str(scripts / "memsync.exe")
    assert hook_command([str(scripts)], exe="memsync.exe") == [exe]
    entry = handler("session-start", {}, [exe])
    assert entry == {"type": "command", "command": exe, "args": ["hook", "session-start"]}
    assert hook_args(entry) == ["session-start"]
    # not in the scripts folder: memsync on PATH, else `python -m memsync`; absolute either way
    fallback = hook_command([str(tmp_path / "empty")], exe="memsync-absent")
    assert Path(fallback[0]).is_absolute()
    assert fallback[1:] in ([], ["-m", "memsync"])
