"""Syncing with the destination after `memsync migrate --from SRC --to DST`, through the
installed CLI on folder remotes (each device with its own MEMSYNC_HOME and memory dir), and
the state the migration leaves, in process.

The rule: after `migrate`, the device that ran it syncs with the destination as if it had
synced there: the copy of each file it last synced with the source is its merge base on the
destination too. A file it did not change since is not its change: another device's edit at
the destination comes down with no conflict, its own edit goes up; both changed, the merge
and its report are those of every sync.
"""

from __future__ import annotations

import json
import uuid

from memsync.admin.migrate import migrate_remote
from memsync.context import config
from memsync.stores import open_store
from memsync.sync.forgotten import Forget, with_forget
from memsync.sync.remote_keys import TOMBSTONES
from memsync.sync.state import State
from tests.devices import Device, make_device

CONFLICT = "conflict"


def _remotes(tmp_path) -> tuple[str, str]:
    src, dst = tmp_path / "remoteS", tmp_path / "remoteG"
    src.mkdir()
    dst.mkdir()
    return src.as_uri(), dst.as_uri()


def _status_conflicts(device: Device, remote: str) -> list[dict]:
    out = device.run("status", "--json", "--remote", remote).stdout
    return json.loads(out)["data"]["conflicts"]


def test_after_migrate_the_devices_that_ran_it_sync_with_no_false_conflict(tmp_path):
    src, dst = _remotes(tmp_path)
    d = make_device(tmp_path, "d", src)  # runs the migration
    f = make_device(tmp_path, "f", src)  # moves later: runs the same command
    d.write("user_x.md", "Likes tea.\n", type="user")
    d.write("user_y.md", "Lives in Lyon.\n", type="user")
    d.write("feedback_z.md", "Short answers.\n", type="feedback")
    d.run("sync")
    f.run("sync")
    # the source changes after d's last sync with it: d copies f's version of user_y.md
    f.write("user_y.md", "Lives in Paris.\n", type="user")
    f.run("sync")

    moved = d.run("migrate", "--from", src, "--to", dst)
    assert "Traceback" not in moved.stderr

    e = make_device(tmp_path, "e", dst)  # a new device, on the destination only
    e.run("sync")
    e.write("user_x.md", "Likes coffee now.\n", type="user")
    e.run("sync")
    d.write("feedback_z.md", "Short answers, with sources.\n", type="feedback")  # d only
    # f moves too, after e's edit: it copies nothing (e's copy there is left as it is, and
    # said: exit 1), and its state of the project comes along
    also = f.run("migrate", "--from", src, "--to", dst, check=1)
    assert "Copied: 0," in also.stdout and "left alone user_x.md" in also.stderr

    for device in (d, f, e):
        synced = device.run("sync", "--remote", dst)
        said = synced.stdout + synced.stderr
        assert CONFLICT not in said.lower(), said
        assert not _status_conflicts(device, dst)
    assert d.files() == e.files() == f.files()
    assert b"Likes coffee now." in d.files()["user_x.md"]
    assert b"Lives in Paris." in d.files()["user_y.md"]
    assert b"with sources" in e.files()["feedback_z.md"]


def test_a_real_conflict_after_migrate_is_still_merged_and_reported(tmp_path):
    src, dst = _remotes(tmp_path)
    d = make_device(tmp_path, "d", src)
    d.write("user_x.md", "Likes tea.\n", type="user")
    d.run("sync")
    d.run("migrate", "--from", src, "--to", dst)

    e = make_device(tmp_path, "e", dst)
    e.run("sync")
    e.write("user_x.md", "Likes coffee now.\n", type="user")
    e.run("sync")
    d.write("user_x.md", "Likes green tea.\n", type="user")  # d edits it too

    synced = d.run("sync", "--remote", dst, check=None)
    said = synced.stdout + synced.stderr
    assert "both devices changed this file" in said, said
    assert [c["file"] for c in _status_conflicts(d, dst)] == ["user_x.md"]
    e.run("sync")
    assert d.files() == e.files()
    assert b"Likes green tea." in d.files()["user_x.md"]  # the later edit
    kept = d.run("history", "user_x.md", "--remote", dst)
    assert "lost a merge conflict" in kept.stdout


def _memory_url() -> str:
    return f"memory://m{uuid.uuid4().hex[:12]}"


def _file(name: str, body: str) -> bytes:
    return f"---\nname: {name}\ndescription: {name}\ntype: user\n---\n{body}\n".encode()


def test_migrate_leaves_a_record_for_each_file_the_destination_holds(tmp_path):
    """What the device last synced with the source becomes its record at the destination:
    with the destination's ETag when the copy there is that version, with none (the remote
    counts as changed) when the source had moved on; no record for a file the destination
    does not hold (a forgotten one), which a sync would otherwise delete here."""
    project, url, dest = "proj", _memory_url(), _memory_url()
    role, older, newer, gone = (
        _file("role", "Engineer."),
        _file("city", "Lyon."),
        _file("city", "Paris."),
        _file("gone", "Forget me."),
    )
    src = open_store(url, project)
    # a forget the destination holds (the source's writers never learned of it)
    dst = open_store(dest, project)
    dst.create(TOMBSTONES, with_forget(None, Forget("f1", file="user_gone.md")))
    for name, data in (("user_role.md", role), ("user_city.md", newer), ("user_gone.md", gone)):
        src.create(name, data)
    (tmp_path / "memory").mkdir()
    ctx = config.resolve(memory_dir=tmp_path / "memory", remote=dest, project=project)
    before = State(config.state_dir_for(ctx.home, url, project, ctx.memory_dir))
    before.set_synced("user_role.md", "e1", role)
    before.set_synced("user_city.md", "e2", older)  # the source changed since
    before.set_synced("user_gone.md", "e3", gone)
    before.save()

    migrate_remote(ctx, url, dest)
    after = State(ctx.state_dir)
    assert sorted(after.records) == ["user_city.md", "user_role.md"]
    assert after.records["user_role.md"].etag == open_store(dest, project).get("user_role.md")[1]
    assert after.base("user_role.md") == role
    assert after.records["user_city.md"].etag == ""
    assert after.base("user_city.md") == older
    records = dict(after.records)
    migrate_remote(ctx, url, dest)  # run again: the records it finds are kept
    assert State(ctx.state_dir).records == records


def test_what_was_written_after_a_forget_travels_and_stays_on_every_device(tmp_path):
    """The forget rule across a migration: the source's content already keeps its forgets, so
    a line written after a forget (holding its text again) is copied as it is, and no device
    that moves takes it out when it reads the destination's copy of the tombstone list, with
    `migrate` or by its setting alone: a memory dir has each forget applied once."""
    src, dst = _remotes(tmp_path)
    d, f = make_device(tmp_path, "d", src), make_device(tmp_path, "f", src)
    g = make_device(tmp_path, "g", src)  # moves by its remote setting alone
    d.write("user_car.md", "The user owns a Tesla.\nLives in Lyon.\n", type="user")
    d.run("sync")
    f.run("sync")
    g.run("sync")
    d.run("forget", "--match", "tesla", "-y")
    f.run("sync")
    g.run("sync")
    d.append("user_car.md", "New car: a Tesla Model 3, bought after the forget.\n")
    d.run("sync")
    f.run("sync")
    g.run("sync")
    d.run("migrate", "--from", src, "--to", dst)
    synced = d.run("sync", "--remote", dst)
    assert "forgot" not in synced.stdout + synced.stderr
    f.run("migrate", "--from", src, "--to", dst, check=None)
    f.run("sync", "--remote", dst)
    moved = g.run("sync", "--remote", dst)
    assert "forgot" not in moved.stdout + moved.stderr
    newcomer = make_device(tmp_path, "n", dst)
    newcomer.run("sync")
    for device in (d, f, g, newcomer):
        data = device.files()["user_car.md"]
        assert b"owns a Tesla" not in data and b"Model 3, bought after the forget" in data
    assert b"Model 3" in open_store(dst, "e2e-project").get("user_car.md")[0]
