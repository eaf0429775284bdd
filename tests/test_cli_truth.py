"""What the CLI prints is true: trials through the real `memsync` with one or two devices for
each of issue 19's wrong or unclear messages (what the user sees on every device and the
remote), and install/uninstall leaving the tree byte-identical in both scopes."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.devices import make_device

# --- sync's words ------------------------------------------------------------------------


def test_first_sync_in_a_fresh_home_says_the_memory_dir_is_missing(tmp_path):
    device = make_device(tmp_path, "a", (tmp_path / "remote").as_uri())
    (tmp_path / "remote").mkdir()
    device.memory.rmdir()
    proc = device.run("sync")
    assert "Everything is in sync" not in proc.stdout
    assert f"the memory dir {device.memory} does not exist" in proc.stdout


def test_a_forget_from_another_device_is_reported_not_in_sync(tmp_path, remote_url):
    a = make_device(tmp_path, "a", remote_url)
    b = make_device(tmp_path, "b", remote_url)
    a.write("user_secret_hobby.md", "Collects stamps.\n", type="user")
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    a.run("forget", "user_secret_hobby.md", "-y")
    proc = b.run("sync")
    assert "Everything is in sync" not in proc.stdout
    assert "forgotten here (another device ran `memsync forget`): user_secret_hobby.md" in (
        proc.stdout
    )
    assert sorted(b.files()) == ["user_role.md"]
    assert "Everything is in sync." in b.run("sync").stdout  # said once, then quiet


def test_names_memsync_cannot_sync_are_refused_with_the_reason_and_the_rest_syncs(
    tmp_path, remote_url
):
    """A name that is not UTF-8 used to kill every Azure run (UnicodeEncodeError); names with
    a backslash or a tab were refused as "only Markdown files ending in .md"."""
    a = make_device(tmp_path, "a", remote_url)
    a.write("user_ok.md", "Fine.\n", type="user")
    source = a.memory / "user_ok.md"
    os.link(source, os.fsencode(a.memory) + b"/user_caf\xe9.md")  # Latin-1, not UTF-8
    os.link(source, a.memory / "user_back\\slash.md")
    os.link(source, a.memory / "user_tab\there.md")
    proc = a.run("sync", check=1)
    assert "Traceback" not in proc.stderr
    assert "its name is not valid UTF-8" in proc.stderr
    assert "its name holds a backslash" in proc.stderr
    assert "its name holds a control character" in proc.stderr
    assert "only Markdown files" not in proc.stderr
    b = make_device(tmp_path, "b", remote_url)
    b.run("sync")
    assert sorted(b.files()) == ["user_ok.md"]


def test_a_246_character_name_syncs_both_ways_and_last_sync_advances(tmp_path, remote_url):
    name = "feedback_" + "x" * 234 + ".md"
    assert len(name) == 246
    a = make_device(tmp_path, "a", remote_url)
    b = make_device(tmp_path, "b", remote_url)
    a.write(name, "Long names are legal.\n", type="feedback")
    a.run("sync")
    proc = b.run("sync")
    assert "Errno" not in proc.stderr and ".tmp" not in proc.stderr
    assert list(b.files()) == [name]
    status = json.loads(b.run("status", "--json").stdout)["data"]
    assert status["last_sync"], status


def test_a_failed_write_names_the_file_and_what_to_do(tmp_path, monkeypatch):
    """A read-only or immutable target used to show a raw errno and memsync's temp path."""
    from memsync.context import config
    from memsync.sync.engine import Engine
    from memsync.util import fsutil

    remote = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()
    a = make_device(tmp_path, "a", remote)
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    mem = tmp_path / "b-mem"
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "b-home"))
    ctx = config.resolve(memory_dir=mem, remote=remote, project="e2e-project")
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        if str(path).startswith(str(mem)):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(fsutil.os, "open", refuse)
    result = Engine(ctx).run("pull")
    message = result.errors["user_role.md"]
    assert message.startswith(f"{mem / 'user_role.md'}: permission denied; check")
    assert ".tmp" not in message and "Errno" not in message


# --- remote settings ----------------------------------------------------------------------


@pytest.mark.parametrize("url", ["file:relative/remote", "file:///PLAIN"])
def test_a_file_remote_that_cannot_be_a_folder_is_a_setting_error_not_an_outage(tmp_path, url):
    (tmp_path / "plain").write_text("a file\n")
    url = url.replace("/PLAIN", str(tmp_path / "plain"))
    a = make_device(tmp_path, "a", url)
    a.write("user_role.md", "Engineer.\n", type="user")
    proc = a.run("push", check=1)
    assert "unreachable" not in proc.stderr and "mounted" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert not list((a.home / "state").glob("*/pending*"))  # nothing queued as if offline


def test_doctor_does_not_say_ok_for_what_is_not_there(tmp_path):
    a = make_device(tmp_path, "a", (tmp_path / "unmounted").as_uri())
    a.write("user_role.md", "Engineer.\n", type="user")
    doc = json.loads(a.run("doctor", "--json", check=1).stdout)["data"]
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["settings"]["detail"].startswith("no ")  # no settings file: defaults
    assert not checks["remote reachable"]["ok"]
    assert "not there" in checks["remote reachable"]["detail"]
    assert a.run("push", check=3)  # and push agrees: unreachable


def test_compact_with_the_remote_unreachable_exits_3(tmp_path):
    a = make_device(tmp_path, "a", (tmp_path / "unmounted").as_uri())
    a.write("user_role.md", "Engineer.\n", type="user")
    proc = a.run("compact", check=3)
    assert "unreachable" in proc.stderr.splitlines()[-1]


# --- watch --------------------------------------------------------------------------------


def test_watch_survives_the_mass_delete_guard_and_says_deleted_for_deletions(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    a = make_device(tmp_path, "a", remote.as_uri())
    for i in range(8):
        a.write(f"user_fact_{i}.md", f"Fact {i}.\n", type="user")
    a.run("sync")
    proc = a.start("watch", "--debounce", "0.3")
    prefix = remote / "e2e-project"

    def wait_for(check) -> None:
        deadline = time.monotonic() + 30
        while not check() and time.monotonic() < deadline:
            time.sleep(0.1)

    try:
        time.sleep(1.5)  # the observer starts
        saved = {i: (a.memory / f"user_fact_{i}.md").read_bytes() for i in range(7)}
        for i in range(7):  # 7 of 8: the guard refuses the push
            (a.memory / f"user_fact_{i}.md").unlink()
        time.sleep(2)
        assert (prefix / "user_fact_0.md").exists()  # nothing deleted on the remote
        assert proc.poll() is None  # still watching
        for i in range(1, 7):  # put back all but one: a single deletion is pushed
            (a.memory / f"user_fact_{i}.md").write_bytes(saved[i])
        wait_for(lambda: not (prefix / "user_fact_0.md").exists())
        assert not (prefix / "user_fact_0.md").exists()
        time.sleep(1)  # the deletion lands before the push returns and says so
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err  # Ctrl-C is how watch is stopped
    assert "not pushed:" in err and "run `memsync push --force` once" in err, err
    assert "deleted on the remote user_fact_0.md" in out
    assert "pushed user_fact_0.md" not in out


# --- install / uninstall ------------------------------------------------------------------


def tree(root: Path) -> dict[str, object]:
    """Every file (bytes, mode) and folder (mode) under `root`."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        mode = path.lstat().st_mode
        found[rel] = (path.read_bytes(), mode) if path.is_file() else ("dir", mode)
    return found


CUSTOM_SETTINGS = '{ "model": "opus",\n\t"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "bell"}]}]} }'  # noqa: E501


@pytest.mark.parametrize("scope", ["user", "project"])
@pytest.mark.parametrize("start", ["empty", "lived-in"])
def test_install_then_uninstall_leaves_the_tree_byte_identical(tmp_path, scope, start):
    home = tmp_path / "home"
    repo = home / "repo"
    (repo / ".git").mkdir(parents=True)
    claude = home / ".claude" if scope == "user" else repo / ".claude"
    claude_md = claude / "CLAUDE.md" if scope == "user" else repo / "CLAUDE.md"
    if start == "lived-in":  # a layout install's JSON writer would not reproduce
        claude.mkdir(parents=True, exist_ok=True)
        (claude / "settings.json").write_text(CUSTOM_SETTINGS)
        claude_md.write_text("# Rules\n\nBe brief.")  # no final newline
        (claude / "skills" / "mine").mkdir(parents=True)
        (claude / "skills" / "mine" / "SKILL.md").write_text("mine\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSYNC_", "CLAUDE_"))}
    env.update(HOME=str(home), MEMSYNC_HOME=str(tmp_path / "msync"))
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    before = tree(home)

    def memsync(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "memsync", *args, "--scope", scope],
            cwd=repo, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    memsync("install")
    assert tree(home) != before
    assert "removed skill" in memsync("uninstall")
    assert tree(home) == before
    memsync("install")  # and again: the second round trip is as exact as the first
    memsync("uninstall")
    assert tree(home) == before


# --- properties -----------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
user_settings = st.dictionaries(
    st.sampled_from(["model", "permissions", "env", "hooks", "theme"]), json_values, max_size=4
).filter(lambda d: not isinstance(d.get("hooks"), (list, str, int, bool)) or "hooks" not in d)


@given(
    existing=st.one_of(st.none(), user_settings),
    indent=st.sampled_from([None, 1, 4, "\t"]),
    claude_md=st.one_of(st.none(), st.text(max_size=40)),
    scope=st.sampled_from(["user", "project"]),
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_uninstall_undoes_install_whatever_was_there(
    tmp_path_factory, monkeypatch, existing, indent, claude_md, scope
):
    """Whatever settings.json (any JSON object, any layout) and CLAUDE.md held, or whether
    they existed at all: install then uninstall gives the same bytes and folders back."""
    from memsync.claude.install import apply, plan_install, plan_uninstall

    home = tmp_path_factory.mktemp("prop")
    repo = home / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMSYNC_HOME", str(home / "msync"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    claude = home / ".claude" if scope == "user" else repo / ".claude"
    md = claude / "CLAUDE.md" if scope == "user" else repo / "CLAUDE.md"
    hooks = existing.get("hooks") if existing else None
    if existing is not None and "hooks" in existing and not isinstance(hooks, dict):
        existing.pop("hooks")  # a "hooks" that is not an object is refused, with its reason
    if existing is not None and isinstance(hooks, dict):
        existing["hooks"] = {k: v for k, v in hooks.items() if isinstance(v, list)}
        for groups in existing["hooks"].values():
            groups[:] = [g for g in groups if isinstance(g, dict)]
    if existing is not None:
        claude.mkdir(parents=True, exist_ok=True)
        (claude / "settings.json").write_text(json.dumps(existing, indent=indent))
    if claude_md is not None:
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(claude_md)
    watched = home if scope == "user" else repo
    before = {k: v for k, v in tree(watched).items() if not k.startswith("msync")}
    apply(plan_install(scope, cwd=repo))
    apply(plan_uninstall(scope, cwd=repo))
    after = {k: v for k, v in tree(watched).items() if not k.startswith("msync")}
    assert after == before


@given(
    code=st.sampled_from(sorted(errno.errorcode)),
    name=st.text(
        st.characters(blacklist_characters="/", blacklist_categories=["Cs", "Cc"]), min_size=1
    ),
    pid=st.integers(min_value=1, max_value=2**22),
)
def test_an_os_error_on_a_temp_file_names_the_users_file(code, name, pid):
    """Memory names hold no control characters (refused before any write), so none here."""
    from memsync.util.errors import describe_os_error

    temp = f"/mem/.{name}.{pid}-0000abcd.tmp"
    message = describe_os_error(OSError(code, os.strerror(code), temp))
    assert message.startswith(f"/mem/{name}: ")
    assert "Errno" not in message and "\n" not in message
