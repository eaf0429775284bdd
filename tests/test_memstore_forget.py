"""forget and purge on a memory store take back what the store's own versions kept (`redact`),
and `history` shows those versions: through the CLI, against the fake memory-store server."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from memsync.context import config
from memsync.sync.engine import Engine
from memsync.sync.remote_keys import CONFLICTS
from tests.conftest import NO_FCNTL
from tests.devices import Device, make_device
from tests.memstore_server import (
    MemoryStoreServer,
    memstore_server_fixture,
)

__all__ = ["memstore_server_fixture"]

STORE = "memstore_test01"
REMOTE = f"memstore://{STORE}/memsync"
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remote, not the lock")


@contextlib.contextmanager
def _engine(device: Device) -> Iterator[Engine]:
    """`device` driven in this process, for the steps whose output the test does not read;
    closed before the device's CLI runs (each reads the device's state afresh)."""
    ctx = config.resolve(device.memory, device.remote, "e2e-project")
    engine = Engine(ctx._replace(home=device.home, device=device.name))
    try:
        yield engine
    finally:
        engine.close()


def _anywhere(server: MemoryStoreServer, text: str) -> list[str]:
    """Where the store still holds `text`: live memories and every version kept."""
    found = [p for p, content in server.contents(STORE).items() if text in content]
    found += [v.id for v in server.versions(STORE) if v.content and text in v.content]
    return found


def test_forget_redacts_the_versions_that_held_it_and_purge_all(tmp_path, memstore_server):
    a = make_device(tmp_path, "laptop", REMOTE)
    a.write("user_role.md", "Engineer.\nWorks on project Nightjar.\n", type="user")
    a.write("feedback_tone.md", "Keep it short.\n", type="feedback")
    a.write("project_plan.md", "Ship in May.\n", type="project")
    a.write("reference_old.md", "Nightjar kickoff notes.\nBluebird budget.\n", type="reference")
    with _engine(a) as engine:  # in this process: a CLI process costs a second of SDK import
        engine.run("sync")
        a.write("user_role.md", "Staff engineer.\nWorks on project Nightjar.\n", type="user")
        (a.memory / "reference_old.md").unlink()  # deleted before the forget: kept as versions
        engine.run("sync")
    assert len(_anywhere(memstore_server, "Nightjar")) == 4  # live + two versions + deleted

    done = a.run("forget", "--match", "nightjar", "--yes")
    assert "the content of 3 earlier version(s) that held it was erased" in done.stdout
    assert _anywhere(memstore_server, "Nightjar") == []
    kept = [
        v for v in memstore_server.versions(STORE) if v.path == "/memsync/e2e-project/user_role.md"
    ]
    assert kept and kept[-1].content and "Staff engineer." in kept[-1].content  # current stays
    untouched = [v for v in memstore_server.versions(STORE) if "Ship in May" in (v.content or "")]
    assert len(untouched) == 1  # versions that never held the text keep their content
    # the store's versions: the two that held it erased, the scrubbed one as it is
    history = a.run("history", "user_role.md").stdout
    assert "Kept by the remote itself (3, newest first):" in history
    assert history.count("content erased") == 2 and history.count("sha256") == 1
    gone = a.run("history", "reference_old.md").stdout  # deleted before: its versions stay
    assert "Kept by the remote itself (2, newest first):" in gone, gone
    a.run("forget", "reference_old.md", "--yes")  # and forget takes them by the file's name
    erased = a.run("history", "reference_old.md").stdout
    assert "Kept by the remote itself (2, newest first):" in erased, erased
    assert erased.count("content erased") == 1, erased  # the deletion record has none

    assert b"Nightjar" not in a.files()["user_role.md"]

    a.run("forget", "feedback_tone.md", "--yes")
    assert _anywhere(memstore_server, "Keep it short") == []
    assert not any("feedback_tone" in p for p in memstore_server.contents(STORE))

    purged = a.run("purge", "--all", "--yes")
    assert "the content of" in purged.stderr and "was erased" in purged.stderr
    live = memstore_server.contents(STORE)
    assert sorted(live) == [
        "/memsync/e2e-project/_memsync/forgotten.json",
        "/memsync/e2e-project/_memsync/purged.json",
    ]
    assert _anywhere(memstore_server, "Ship in May") == []
    assert _anywhere(memstore_server, "Staff engineer") == []
    assert _anywhere(memstore_server, "Bluebird") == []  # a file deleted before the purge


def test_forget_reaches_the_conflict_record_and_writes_made_before_a_device_heard_of_it(
    tmp_path, memstore_server
):
    """Every copy of the text the store keeps goes: the conflict record's versions that named
    it, and the versions a device that had not heard of the forget wrote after it, redacted
    when that device learns of the forget. Checked on every version the store keeps."""
    a, b = (make_device(tmp_path, n, REMOTE) for n in ("laptop", "desktop"))
    jokes = "# Callbacks\n\n## Nightjar days\n\n- **Potato** (2026-11-20): the original.\n"
    a.write("running_jokes_and_callbacks.md", jokes, type="callbacks")
    a.write("project_plan.md", "Ship in May.\n", type="project")
    with _engine(a) as ea, _engine(b) as eb:
        ea.run("sync")
        eb.run("sync")
        for device in (a, b):  # one entry changed differently on both: a conflict naming it
            path = device.memory / "running_jokes_and_callbacks.md"
            path.write_text(path.read_text().replace("the original", f"told on {device.name}"))
        ea.run("sync")
        assert eb.run("sync").conflicts
    record = f"/memsync/e2e-project/{CONFLICTS}"
    assert "Nightjar" in memstore_server.contents(STORE)[record]

    a.run("forget", "--match", "nightjar", "--yes")
    assert _anywhere(memstore_server, "Nightjar") == []
    assert any(v.path is None and v.redacted_at for v in memstore_server.versions(STORE))

    # b has not heard of it: a push of one file it synced before checks no tombstone
    b.append("project_plan.md", "- Nightjar launch party in June.\n")
    b.run("push", "project_plan.md")
    assert len(_anywhere(memstore_server, "Nightjar")) == 2  # the memory and its version
    learned = b.run("sync")
    assert "forgot" in learned.stdout + learned.stderr
    assert _anywhere(memstore_server, "Nightjar") == []
    assert b"Nightjar" not in b"".join(b.files().values())
    assert "Ship in May." in memstore_server.contents(STORE)[
        "/memsync/e2e-project/project_plan.md"
    ]
