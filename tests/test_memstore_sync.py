"""memsync over a memory store through the real CLI: devices that sync through the fake
memory-store server (driven only through the SDK), the engine's request counts, eight writers
on one file, migrate to and from a folder remote with a file the store cannot hold, the
PostToolUse hook, and what a folder remote's hook imports."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from memsync.context import config
from memsync.sync.engine import Engine
from tests.conftest import NO_FCNTL, write_memory
from tests.devices import Device, make_device
from tests.memstore_server import memstore_server_fixture
from tests.test_contention import BASE

__all__ = ["memstore_server_fixture"]

STORE = "memstore_test01"
REMOTE = f"memstore://{STORE}/memsync"
# a remote protocol's trial, not the lock's: the no-fcntl pass has nothing to add here
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")


def _engine(device: Device) -> Engine:
    """`device` driven in this process: its own MEMSYNC_HOME and memory dir, as its CLI would
    resolve them, without a process (and an SDK import, about a second) a command."""
    ctx = config.resolve(device.memory, device.remote, "e2e-project")
    return Engine(ctx._replace(home=device.home, device=device.name))


def _sync(engine: Engine, mode: str = "sync") -> None:
    result = engine.run(mode)
    assert not (result.errors or result.offline or result.refused), vars(result)


def test_three_devices_sync_through_a_memory_store(tmp_path, memstore_server):
    a, b, c = (make_device(tmp_path, n, REMOTE) for n in ("laptop", "desktop", "cloud"))
    ea, eb, ec = (_engine(d) for d in (a, b, c))
    a.write("user_role.md", "The user is a data engineer.\n", type="user")
    a.write("MEMORY.md", "- [Role](user_role.md) — the user's role\n")
    a.write("running_jokes_and_callbacks.md", BASE, type="callbacks")
    _sync(ea)
    assert sorted(memstore_server.contents(STORE)) == [
        "/memsync/e2e-project/MEMORY.md",
        "/memsync/e2e-project/_memsync/project.json",
        "/memsync/e2e-project/running_jokes_and_callbacks.md",
        "/memsync/e2e-project/user_role.md",
    ]
    _sync(eb)
    assert b.files() == a.files()

    # concurrent appends to one file on two devices merge; a fact edited on one arrives
    a.append("running_jokes_and_callbacks.md", "- **Laptop joke** (2026-11-20): from a.\n")
    b.append("running_jokes_and_callbacks.md", "- **Desktop joke** (2026-11-21): from b.\n")
    b.write("user_role.md", "The user is a staff data engineer.\n", type="user")
    for engine in (ea, eb, ea, ec):  # a third device joins last
        _sync(engine)
    jokes = c.files()["running_jokes_and_callbacks.md"].decode()
    assert "from a." in jokes and "from b." in jokes
    assert a.files() == b.files() == c.files()
    assert b"staff data engineer" in c.files()["user_role.md"]

    # a deletion propagates as a deletion; an agent's edit in the store arrives
    (c.memory / "running_jokes_and_callbacks.md").unlink()
    _sync(ec)
    memstore_server.put(
        STORE,
        "/memsync/e2e-project/user_role.md",
        c.files()["user_role.md"].decode().replace("staff", "principal"),
    )
    _sync(ea)
    assert "running_jokes_and_callbacks.md" not in a.files()
    assert not any("running_jokes" in p for p in memstore_server.contents(STORE))
    assert b"principal data engineer" in a.files()["user_role.md"]
    for engine in (ea, eb, ec):
        engine.close()


def test_a_no_op_sync_is_one_listing_and_a_push_a_lookup_and_an_update(
    tmp_path, memstore_server, monkeypatch
):
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    memory = tmp_path / "memory"
    for i in range(5):
        write_memory(memory, f"project_{i}.md", f"fact {i}\n", type="project")
    ctx = config.resolve(memory_dir=memory, remote=REMOTE, project="p")
    engine = Engine(ctx)
    assert len(engine.run("sync").uploaded) == 5
    engine.close()
    engine = Engine(ctx)
    assert engine.run("sync").changes == 0
    assert dict(engine.store.stats.requests) == {"list": 1}
    write_memory(memory, "project_3.md", "fact 3, revised\n", type="project")
    before = dict(engine.store.stats.requests)
    engine.run("push", [str(memory / "project_3.md")])
    after = dict(engine.store.stats.requests)
    # a fresh process knows no memory ids: one listing of the file's folder finds it
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == {
        "list": 1,
        "put": 1,
    }
    engine.close()


def test_eight_writers_append_to_one_file_on_a_memory_store(tmp_path, memstore_server):
    """Eight devices push an append to one file at once (each its own engine, state and SDK
    client, in threads of this process): every append lands once."""
    writers = 8
    devices = [make_device(tmp_path, f"dev{i}", REMOTE) for i in range(writers)]
    engines = [_engine(d) for d in devices]
    devices[0].write("running_jokes_and_callbacks.md", BASE, type="callbacks")
    _sync(engines[0], "push")
    original = devices[0].files()["running_jokes_and_callbacks.md"]
    # the others hold the same copy but never synced: their pushes merge without a base,
    # the harder case
    for d in devices[1:]:
        (d.memory / "running_jokes_and_callbacks.md").write_bytes(original)
    for i, d in enumerate(devices):
        d.append("running_jokes_and_callbacks.md", f"- **Joke {i}** (2026-11-2{i}): from dev{i}.\n")
    with ThreadPoolExecutor(writers) as pool:  # all start together
        list(pool.map(lambda e: _sync(e, "push"), engines))
    key = "/memsync/e2e-project/running_jokes_and_callbacks.md"
    stored = memstore_server.contents(STORE)[key]
    for i in range(writers):
        assert stored.count(f"from dev{i}.") == 1
    assert stored.count("The potato drawing") == 1
    for i in (0, -1):  # the first and the last to push converge on it
        _sync(engines[i])
        assert devices[i].files()["running_jokes_and_callbacks.md"].decode() == stored
    assert memstore_server.contents(STORE)[key] == stored
    for engine in engines:
        engine.close()


def test_a_folder_remotes_hook_imports_nothing_of_the_sdk(tmp_path):
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "d", (tmp_path / "remote").as_uri())
    path = device.write("user_role.md", "Engineer.\n", type="user")
    payload = {
        "session_id": "s-1",
        "cwd": str(device.root),
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(path)},
        "tool_response": {"filePath": str(path), "success": True},
    }
    snippet = (
        "import io\nfrom memsync.claude.hooks import main\n"
        f"assert main(['post-tool-use'], stdin=io.StringIO({json.dumps(json.dumps(payload))}))"
        " == 0\n"
    )
    _, loaded = device.imports(snippet, ("anthropic", "memsync.stores.memstore", "httpx"))
    assert loaded == []
    assert (tmp_path / "remote" / "e2e-project" / "user_role.md").exists()


def test_opening_a_memory_store_remote_imports_no_sdk_until_a_request(tmp_path):
    device = make_device(tmp_path, "d", REMOTE)
    snippet = (
        "from memsync.stores import open_store\n"
        f"store = open_store({REMOTE!r}, 'p')\nprint(store.url)\n"
    )
    out, loaded = device.imports(snippet, ("anthropic", "httpx"))
    assert out.strip() == f"{REMOTE}/p"
    assert loaded == []


def test_migrate_from_a_folder_remote_to_a_memory_store_and_back(tmp_path, memstore_server):
    folder = tmp_path / "remote"
    folder.mkdir()
    laptop = make_device(tmp_path, "laptop", folder.as_uri())
    laptop.write("user_role.md", "Engineer.\n", type="user")
    laptop.write("MEMORY.md", "- [Role](user_role.md) — the user's role\n")
    laptop.write("reference_big.md", "x" * 110_000 + "\n", type="reference")
    laptop.run("sync")
    moved = laptop.run("migrate", "--remote", REMOTE, check=1)  # one file could not go
    assert "Copied: 2" in moved.stdout
    assert "refused reference_big.md: it is 110085 bytes, over the 102400" in moved.stderr
    assert "could not be copied" in moved.stderr
    # a sync with the store: the file it cannot hold is refused by name, before any request
    sent = len(memstore_server.requests)
    after = laptop.run("sync", "--remote", REMOTE, check=1)
    assert "pushed" not in after.stdout and "Traceback" not in after.stderr
    assert after.stderr.startswith("refused: reference_big.md: it is 110085 bytes, over the 102400")
    assert "110085 bytes, over the 102400-byte limit" in after.stderr
    assert not any("reference_big" in json.dumps(r.body) for r in memstore_server.requests[sent:])
    assert not any("reference_big" in p for p in memstore_server.contents(STORE))
    doctor = laptop.run("doctor", "--remote", REMOTE, check=None).stdout
    assert "container: the memory store memstore_test01 present" in doctor
    assert "write/read/delete probe: ok" in doctor

    cloud = make_device(tmp_path, "cloud", REMOTE)
    engine = _engine(cloud)
    _sync(engine)
    engine.close()
    assert sorted(cloud.files()) == ["MEMORY.md", "user_role.md"]
    cloud.write("feedback_tone.md", "Keep it short.\n", type="feedback")
    back = tmp_path / "back"
    back.mkdir()
    assert "Copied: 3" in cloud.run("migrate", "--remote", back.as_uri()).stdout
    assert sorted(p.name for p in (back / "e2e-project").iterdir() if p.suffix == ".md") == [
        "MEMORY.md",
        "feedback_tone.md",
        "user_role.md",
    ]


def test_the_post_tool_use_hook_pushes_to_a_memory_store_and_tells_claude_a_refusal(
    tmp_path, memstore_server
):
    device = make_device(tmp_path, "laptop", REMOTE)
    path = device.write("user_role.md", "Engineer.\n", type="user")
    assert device.post_tool_use(path, "Write").returncode == 0
    assert "/memsync/e2e-project/user_role.md" in memstore_server.contents(STORE)
    big = device.write("reference_big.md", "x" * 110_000 + "\n", type="reference")
    told = json.loads(device.post_tool_use(big, "Write").stdout)
    context = told["hookSpecificOutput"]["additionalContext"]
    assert "reference_big.md was NOT synced: it is 110085 bytes, over the 102400" in context
    assert not any("reference_big" in p for p in memstore_server.contents(STORE))
    device.env_extra["MEMSYNC_HOOK_PUSH_WAIT"] = "off"  # answered before the push: told at once
    told = json.loads(device.post_tool_use(big, "Write").stdout)
    context = told["hookSpecificOutput"]["additionalContext"]
    assert "reference_big.md was NOT synced: it is 110085 bytes, over the 102400" in context
    device.env_extra["MEMSYNC_HOOK_PUSH_WAIT"] = "on"
    checked = device.run("validate", "reference_big.md", check=1)
    assert "over the 102400-byte limit" in checked.stdout + checked.stderr
    device.env_extra["ANTHROPIC_API_KEY"] = "not-the-key"  # a key the store refuses: told too
    device.write("user_role.md", "Staff engineer.\n", type="user")
    told = json.loads(device.post_tool_use(path, "Write").stdout)
    context = told["hookSpecificOutput"]["additionalContext"]
    assert "user_role.md was NOT synced" in context and "refused the API key" in context


def test_an_export_imports_into_a_memory_store_but_what_it_cannot_hold(
    tmp_path, memstore_server, monkeypatch
):
    from memsync.admin.admin import export, import_archive

    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    memory = tmp_path / "memory"
    write_memory(memory, "user_role.md", "Engineer.\n", type="user")
    write_memory(memory, "reference_big.md", "x" * 110_000 + "\n", type="reference")
    (tmp_path / "remote").mkdir()
    folder = Engine(
        config.resolve(memory_dir=memory, remote=(tmp_path / "remote").as_uri(), project="p")
    )
    folder.run("sync")
    export(folder, tmp_path / "backup.tar.gz")
    store = Engine(config.resolve(memory_dir=tmp_path / "empty", remote=REMOTE, project="p"))
    result = import_archive(store, tmp_path / "backup.tar.gz")
    assert result.copied == ["user_role.md"]
    assert result.refused["reference_big.md"].startswith("not sent to the memory store: it is")
    assert sorted(memstore_server.contents(STORE)) == ["/memsync/p/user_role.md"]
    store.close()
    # through the CLI: exit 1 naming what the remote cannot hold, never the --force advice
    device = make_device(tmp_path, "laptop", REMOTE)
    told = device.run("import", str(tmp_path / "backup.tar.gz"), "--from-project", "p", check=1)
    assert "refused reference_big.md: not sent to the memory store" in told.stderr, told.stderr
    assert "cannot hold" in told.stderr and "--force" not in told.stderr, told.stderr


def test_status_and_ls_on_an_unknown_store_say_it_is_made_in_the_console(
    tmp_path, memstore_server, monkeypatch
):
    """memsync never creates a memory store: neither command may suggest that a push would."""
    from memsync.admin.admin import list_remote
    from memsync.admin.status import status
    from memsync.util.errors import UserError

    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    memory = tmp_path / "memory"
    write_memory(memory, "user_role.md", "Engineer.\n", type="user")
    engine = Engine(config.resolve(memory, "memstore://memstore_nosuch99/m", "p"))
    said = status(engine).remote_error or ""
    assert "Claude Console" in said and "push" not in said, said
    with pytest.raises(UserError, match="Claude Console"):
        list_remote(engine)
    engine.close()


def test_a_merge_past_what_a_memory_store_holds_is_held_as_a_conflict_on_both_devices(
    tmp_path, memstore_server
):
    """The store's 100 kB is the limit every check uses: a merge past it stays on the device
    that made it and both devices list the conflict; a local file past it shows as refused."""
    from memsync.admin.status import status

    a, b = (make_device(tmp_path, n, REMOTE) for n in ("laptop", "desktop"))
    ea, eb = _engine(a), _engine(b)
    lines = "".join(f"- **Joke {i}** (2026-11-01): {'x' * 80}.\n" for i in range(880))
    a.write("running_jokes_and_callbacks.md", lines, type="callbacks")
    assert 96_000 < len(a.files()["running_jokes_and_callbacks.md"]) < 100_000
    _sync(ea)
    _sync(eb)
    a.append("running_jokes_and_callbacks.md", f"- **Laptop** (2026-11-20): {'a' * 3000}.\n")
    b.append("running_jokes_and_callbacks.md", f"- **Desktop** (2026-11-21): {'b' * 3000}.\n")
    _sync(ea)
    held = eb.run("sync")
    assert "running_jokes_and_callbacks.md" in held.refused, vars(held)
    assert "Desktop" in (b.memory / "running_jokes_and_callbacks.md").read_text()
    assert "Laptop" in (b.memory / "running_jokes_and_callbacks.md").read_text()
    ea.run("sync")
    for engine in (ea, eb):
        files = [c.file for c in engine.state.conflicts]
        assert "running_jokes_and_callbacks.md" in files, files
    a.write("reference_big.md", "y" * 110_000 + "\n", type="reference")
    a.write("notes/" * 21 + "deep.md", "Too deep for the store.\n", type="reference")
    refused = status(ea).refused
    assert "reference_big.md" in refused
    assert "not sent to the memory store" in refused["notes/" * 21 + "deep.md"], refused
    for engine in (ea, eb):
        engine.close()


def test_three_devices_through_the_cli_on_a_memory_store(tmp_path, memstore_server):
    """The same as above as a user types it (a process a command: each pays the SDK import)."""
    a, b, c = (make_device(tmp_path, n, REMOTE) for n in ("laptop", "desktop", "cloud"))
    a.write("running_jokes_and_callbacks.md", BASE, type="callbacks")
    a.run("sync")
    b.run("sync")
    a.append("running_jokes_and_callbacks.md", "- **Laptop joke** (2026-11-20): from a.\n")
    b.append("running_jokes_and_callbacks.md", "- **Desktop joke** (2026-11-21): from b.\n")
    a.run("sync")
    b.run("sync")
    c.run("sync")  # a third device joins last
    a.run("sync")
    jokes = c.files()["running_jokes_and_callbacks.md"].decode()
    assert "from a." in jokes and "from b." in jokes
    assert a.files() == b.files() == c.files()
    assert "1 file(s) in sync." in c.run("status").stdout
