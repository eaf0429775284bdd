"""The sync engine on Azurite: exact request counts, the 412 → merge → retry path, and an
outage in the middle of work (the server gone, then back)."""

from __future__ import annotations

import re
import time

import pytest

from memsync.context import config
from memsync.stores import open_store
from memsync.sync.engine import Engine
from tests.azurite import start_azurite
from tests.conftest import NO_FCNTL, write_memory
from tests.devices import make_device
from tests.faults import FaultyStore
from tests.netfaults import FaultProxy

pytestmark = pytest.mark.azure


def engine_for(tmp_path, url, name="a", store=None) -> Engine:
    mem = tmp_path / name
    mem.mkdir(exist_ok=True)
    import os

    os.environ["MEMSYNC_HOME"] = str(tmp_path / f"{name}-home")
    ctx = config.resolve(memory_dir=mem, remote=url, project="p")
    return Engine(ctx, store)


def delta(engine: Engine, before: dict[str, int]) -> dict[str, int]:
    now = dict(engine.store.stats.requests)
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


def test_request_counts_are_exact(tmp_path, azure_url):
    engine = engine_for(tmp_path, azure_url)
    for i in range(40):
        write_memory(engine.ctx.memory_dir, f"project_{i:02}.md", f"fact {i}\n", type="project")
    first = engine.run("push")
    assert len(first.uploaded) == 40

    before = dict(engine.store.stats.requests)
    assert engine.run("sync").changes == 0
    assert delta(engine, before) == {"list": 1}, "a no-op sync is one listing and nothing else"

    write_memory(engine.ctx.memory_dir, "project_07.md", "fact 7, revised\n", type="project")
    before = dict(engine.store.stats.requests)
    assert engine.run("sync").uploaded == ["project_07.md"]
    assert delta(engine, before) == {"list": 1, "put": 1}

    write_memory(engine.ctx.memory_dir, "project_08.md", "fact 8, revised\n", type="project")
    before = dict(engine.store.stats.requests)
    engine.run("push", [str(engine.ctx.memory_dir / "project_08.md")])
    assert delta(engine, before) == {"put": 1}, "push FILE of a known file is one conditional PUT"

    later = engine_for(tmp_path, azure_url)  # a new process, a hook's say: nothing read first
    write_memory(later.ctx.memory_dir, "project_08.md", "fact 8, again\n", type="project")
    later.run("push", [str(later.ctx.memory_dir / "project_08.md")])
    assert dict(later.store.stats.requests) == {"put": 1}


def test_etag_moving_between_read_and_write_takes_the_merge_path(tmp_path, azure_url):
    a = engine_for(tmp_path, azure_url, "a")
    body = "## Pending\n- first\n"
    write_memory(a.ctx.memory_dir, "carry_forward.md", body, type="carry_forward")
    a.run("push")
    b_store = FaultyStore(open_store(azure_url, "p"))
    b = engine_for(tmp_path, azure_url, "b", b_store)
    b.run("pull")
    # a adds an item; b adds another, and the ETag moves again right before b's write
    write_memory(a.ctx.memory_dir, "carry_forward.md", body + "- from a\n", type="carry_forward")
    a.run("push")
    write_memory(b.ctx.memory_dir, "carry_forward.md", body + "- from b\n", type="carry_forward")
    b_store.arm("move")
    result = b.run("sync")
    assert b_store.fired == ["move"]
    assert result.merged == ["carry_forward.md"] and not result.errors
    remote = b_store.get("carry_forward.md")[0].decode()
    assert "- from a" in remote and "- from b" in remote and remote.count("- first") == 1


@pytest.mark.slow
@pytest.mark.skipif(NO_FCNTL, reason="the remote going away, not the lock, is under test")
def test_outage_exits_3_queues_and_drains_after_restart(tmp_path):
    server = start_azurite(tmp_path / "azurite-data")
    try:
        url = server.url()
        env = {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}
        a = make_device(tmp_path, "a", url, **env)
        b = make_device(tmp_path, "b", url, **env)
        a.write("user_role.md", "Engineer.\n", type="user")
        a.run("sync")
        server.stop()
        a.write("project_plane.md", "Written on a plane.\n", type="project")
        a.write("user_role.md", "Staff engineer.\n", type="user")
        before = a.files()
        proc = a.run("sync", check=3)
        assert "unreachable" in proc.stderr and "queued" in proc.stderr
        assert a.files() == before, "local files are intact"
        status = a.run("status").stdout
        assert "queued, not sent yet: project_plane.md" in status
        assert "queued, not sent yet: user_role.md" in status
        server.start()
        a.run("sync")
        b.run("sync")
        assert b.files() == a.files()
        assert "queued" not in a.run("status").stdout
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.skipif(NO_FCNTL, reason="the remote going away, not the lock, is under test")
def test_the_server_gone_in_the_middle_of_a_sync(tmp_path, azurite, monkeypatch):
    """The server goes away while a sync is uploading: the command gives up at once instead of
    retrying every remaining file, exits 3, and queues what it did not push; once the server
    is back, the next sync sends the rest. The server goes away at a proxy in front of
    Azurite, which resets every connection from then on: Azurite itself killed in the middle
    of a write keeps answering 500 for that blob after its restart, which no real service
    does."""
    proxy = FaultProxy(azurite.port)
    try:
        url = proxy.url_for(azurite.url())
        monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
        env = {"AZURE_STORAGE_CONNECTION_STRING": azurite.connection_string}
        a = make_device(tmp_path, "a", url, **env)
        b = make_device(tmp_path, "b", url, **env)
        a.write("user_role.md", "Engineer.\n", type="user")
        a.run("sync")  # the container exists: the next sync goes straight to its uploads
        count = 600
        for i in range(count):
            a.write(f"project_{i:04}.md", f"fact {i}\n" * 20, type="project")
        before = a.files()
        remote = open_store(url, "e2e-project")
        proc = a.start("sync", "--stats")
        deadline = time.monotonic() + 60
        while len(remote.list()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        proxy.arm("reset", r".", times=10**9)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, f"exited {proc.returncode}\n{out}\n{err}"
        assert "unreachable" in err and "queued" in err
        assert a.files() == before, "local files are intact"
        queued = [
            line for line in a.run("status").stdout.splitlines() if "queued, not sent yet" in line
        ]
        proxy.disarm()
        landed = len(remote.list()) - 1
        assert 0 < landed < count, "the server went away in the middle of the uploads"
        assert len(queued) >= count - landed, "every file not uploaded is queued"
        puts = int(re.search(r"\bput (\d+)", err).group(1))
        # each of the 16 workers may spend its retries (4 attempts) on the request it was
        # sending, plus the one immediate resend a kept-alive connection closed under it gets;
        # trying every remaining file would have sent about 4 x 600
        assert puts <= landed + 16 * 5 + 50, f"{puts} PUTs after the server went away"
        a.run("sync")
        b.run("sync")
        assert b.files() == a.files() == before
        assert "queued" not in a.run("status").stdout
    finally:
        proxy.stop()


def test_a_sync_with_an_account_key_imports_only_what_it_needs(tmp_path, azure_url):
    """Start-up is most of a small sync: the account-key path talks REST itself, and the CLI
    parser must not pull in pydantic (typer 0.29 does, at ~0.12 s a command; see pyproject).
    Nor do the sync's own modules import what costs more than the sync's work: dataclasses
    (with inspect) (docs/benchmarks.md); typing is allowed since issue 20 (ordinary Python for
    under a tenth of a no-op sync). http.client (with email, ssl and datetime) is loaded on
    purpose since issue 18: its framing of untrusted answers replaced one written by hand
    (docs/benchmarks.md, "Hooks and start-up")."""
    device = make_device(tmp_path, "lean", azure_url)
    device.write("project_a.md", "a fact\n", type="project")
    snippet = (
        "import sys\n"
        "from memsync.entry import main\n"
        "sys.argv = ['memsync', 'sync']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code"
    )
    heavy = ("azure", "pydantic", "anthropic", "requests", "typer", "rich", "yaml")
    # (email.utils, which http.client loads, brings datetime with it)
    costly = ("dataclasses", "inspect", "http.server", "urllib.request")
    # a sync that writes merge bases imports sqlite3, and sqlite3 imports datetime
    out, loaded = device.imports(snippet, heavy + tuple(m for m in costly if m != "datetime"))
    assert "pushed: project_a.md" in out
    assert loaded == []
    # and the no-op that follows, which reads and writes no merge base
    out, loaded = device.imports(snippet, (*heavy, *costly, "sqlite3"))
    assert "in sync" in out.lower()
    assert loaded == []
