"""Encryption's rules at the edges, as users meet them through `python -m memsync` on a folder
remote: a recipients list deleted or damaged (refused by every device, written again by one
that trusted it), a removed device told so, objects under keys no list names erased by the next
switch and by purge (with a key or without one), files outside the data key folded in only when
named, a damaged object named once, this device's own key not removed unasked, `keys init` on a
remote that does not exist, no download after the switch, an identity file others may read."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time

import pyrage
import pytest

from memsync.stores.crypt_keys import DataKey
from tests.conftest import NO_FCNTL
from tests.devices import make_device

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="the remote's protocol, not the lock")


def _remote_bytes(root) -> bytes:
    """Every object's name and content (a folder left empty is no object)."""
    seen = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            seen.append(str(path.relative_to(root)).encode())
            seen.append(path.read_bytes())
    return b"\n".join(seen)


def _key(device) -> str:
    out = device.run("keys", "init").stdout
    return next(line for line in out.splitlines() if line.startswith("age1"))


def _one_line(proc) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


def _hidden(project) -> list:
    return sorted(p for p in (project / "_memsync" / "x").rglob("*") if p.is_file())


def _abandon(project, names) -> None:
    """What a switch killed between its copies and its switch leaves: objects sealed under a
    data key no recipients list names."""
    lost = DataKey.generate(7)
    for name in names:
        path = project / "_memsync" / "x" / lost.hide(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(lost.seal(name, b"an abandoned copy", None))


def _shared(a, b, *more) -> list[str]:
    """`a` syncs a memory, turns encryption on and lets the others in, who sync: their keys."""
    a.write("user_health.md", "Dentist on Tuesday.\n", type="user")
    a.run("sync")
    _key(a)
    keys = []
    for device in (b, *more):
        keys.append(_key(device))
        a.run("keys", "add", keys[-1])
        device.run("sync")
    return keys


@pytest.fixture
def trio(tmp_path):
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    url = remote_dir.as_uri()
    return remote_dir, [make_device(tmp_path, n, url) for n in ("a", "b", "c")]


def test_a_lost_or_damaged_recipients_list_and_a_removed_device(trio):
    remote_dir, (a, b, c) = trio
    project = remote_dir / "e2e-project"
    a.write("user_health.md", "Dentist on Tuesday.\n", type="user")
    a.run("sync")
    _key(a)
    key_b = _key(b)
    a.run("keys", "add", key_b, "--name", "laptop")
    b.run("sync")
    said = "encryption: on (age, data key generation 1, 2 recipient(s))"
    assert said in a.run("status").stdout
    assert "2 recipient(s)" in a.run("doctor").stdout

    # the list deleted: a device that never held a key neither syncs nor pushes plaintext
    crypt = project / "_memsync" / "crypt.json"
    newest = crypt.read_bytes()  # a backup of it, or a bucket's version
    crypt.unlink()
    before = _remote_bytes(remote_dir)
    new = c.write("user_role.md", "Engineer.\n", type="user")
    refused = _one_line(c.run("sync", check=1))
    assert "holds encrypted objects but no recipients list" in refused
    assert "`memsync purge --all`" in refused
    assert c.post_tool_use(new).returncode == 0  # a hook never fails the session
    assert _remote_bytes(remote_dir) == before
    # a device that trusted it refuses too, `keys init` writes nothing, and the copy mends it
    for args in (("sync",), ("keys", "init")):
        refused = _one_line(a.run(*args, check=1))
        assert "is gone" in refused and "put back the newest copy" in refused
    assert not crypt.exists()
    crypt.write_bytes(newest)
    a.run("sync")
    assert "is encrypted" in _one_line(c.run("sync", check=1))

    # the list damaged: every device refuses and is told what mends it
    crypt.write_bytes(newest.replace(b'"mac": "', b'"mac": "0', 1))
    refused = _one_line(a.run("sync", check=1))
    assert "is damaged" in refused and "put back the newest copy" in refused
    crypt.write_bytes(newest)
    b.run("sync")

    # a device removed is told so, not only that it has no access
    kept = crypt.read_bytes()  # a copy of the list that named it, as anyone could keep
    a.run("keys", "remove", key_b)
    refused = _one_line(b.run("sync", check=1))
    assert f"this device's key {key_b} was removed from the recipients" in refused
    # that older list put back on the remote does not let it in again: it writes nothing
    # under the revoked key, and its memory stays as it is
    crypt.write_bytes(kept)
    before = _remote_bytes(remote_dir)
    refused = _one_line(b.run("sync", check=1))
    assert f"this device's key {key_b} was removed from the recipients" in refused
    assert _remote_bytes(remote_dir) == before
    assert "Dentist on Tuesday." in (b.memory / "user_health.md").read_text()


def test_no_device_writes_back_a_list_and_a_missed_rotation_writes_nothing(trio):
    """Only `keys add` and `keys remove` change the list, each on top of the one it verified:
    a list changed by someone without a key is refused until the newest copy is put back;
    an earlier copy put back after a rotation is refused by the device that made it, and the
    devices that missed the rotation find every object under a key they never had."""
    remote_dir, (a, b, c) = trio
    crypt = remote_dir / "e2e-project" / "_memsync" / "crypt.json"
    _, key_c = _shared(a, b, c)

    # the generation written beside the box, raised by someone without a key
    newest = crypt.read_bytes()
    doc = json.loads(newest)
    doc["generation"] += 7
    crypt.write_text(json.dumps(doc))
    assert "is damaged" in _one_line(b.run("sync", check=1))
    assert "is damaged" in _one_line(b.run("keys", "init", check=1))
    crypt.write_bytes(newest)
    b.run("sync")

    # a rotation b and c do not see, then the list from before it put back
    a.run("keys", "remove", key_c)
    rotated = crypt.read_bytes()
    crypt.write_bytes(newest)
    b.write("user_role.md", "Engineer.\n", type="user")
    before = _remote_bytes(remote_dir)
    assert "does not follow from the newest one" in _one_line(a.run("sync", check=1))
    for device in (b, c):  # the earlier list opens for them: what it seals does not
        for args in (("sync",), ("push", "--republish"), ("keys", "init")):
            said = _one_line(device.run(*args, check=1))
            assert "sealed under a data key this device never had" in said, args
    assert _remote_bytes(remote_dir) == before
    crypt.write_bytes(rotated)
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files() and set(a.files()) == {"user_health.md", "user_role.md"}
    assert "removed from the recipients" in _one_line(c.run("sync", check=1))
    assert "generation 2, 2 recipient(s)" in b.run("status").stdout


def test_an_earlier_list_put_back_is_refused_and_so_is_a_list_changed_from_it(tmp_path):
    """`keys add` changes the list, not the data key: the list from before it, put back, is
    older (its version) and refused by every device that saw the newer one, and a device it
    leaves out is not taken for removed; a device that saw only the earlier list and changes
    it makes another list of the newer version, which those devices refuse too."""
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    a, b, y, z = (make_device(tmp_path, n, remote_dir.as_uri()) for n in "abyz")
    crypt = remote_dir / "e2e-project" / "_memsync" / "crypt.json"
    a.write("user_health.md", "Dentist on Tuesday.\n", type="user")
    a.run("sync")
    _key(a)
    a.run("keys", "add", _key(b))
    b.run("sync")
    kept = crypt.read_bytes()
    a.run("keys", "add", _key(y))
    y.run("sync")
    newest = crypt.read_bytes()
    crypt.write_bytes(kept)
    for device in (a, y):
        said = _one_line(device.run("sync", check=1))
        assert "does not follow from the newest one" in said and "removed" not in said
    key_z = _key(z)
    b.run("keys", "add", key_z)  # b saw only the earlier list: it takes it, adds z,
    z.run("sync")  # (which takes the data key from that list)
    other = str(pyrage.x25519.Identity.generate().to_public())
    b.run("keys", "add", other)  # and one more: a newer version, but not made from theirs
    for device in (a, y):
        said = _one_line(device.run("sync", check=1))
        assert "does not follow from the newest one" in said and "removed" not in said
    crypt.write_bytes(newest)  # two lists of one version: b refuses the one it did not make
    a.run("sync")
    y.run("sync")
    said = _one_line(b.run("sync", check=1))
    assert "does not follow from the newest one" in said and "as it is now" in said
    for record in (b.home / "keys" / "remotes").glob("*.json"):
        record.unlink()  # as the message says: b takes the list there
    b.run("sync")
    assert a.files() == b.files() == y.files()
    # z is in no list now but holds the data key: removing it anyway makes a new one
    out = a.run("keys", "remove", key_z).stdout
    assert "was not among the recipients; the data key is new all the same" in out
    (record,) = (z.home / "keys" / "remotes").glob("*.json")
    held = DataKey(json.loads(record.read_text())["data_key"], 1)
    hidden = remote_dir / "e2e-project" / "_memsync" / "x"
    names = [p.relative_to(hidden).as_posix() for p in hidden.rglob("*") if p.is_file()]
    assert names and not any(held.reveal(name) for name in names)
    b.run("sync")
    y.run("sync")


def test_switches_and_purge_erase_objects_under_keys_no_list_names(trio):
    remote_dir, (a, b, c) = trio
    project = remote_dir / "e2e-project"
    for i in range(3):
        a.write(f"project_{i}.md", f"Step {i}.\n", type="project")
    for i in range(200):
        a.write(f"feedback_{i}.md", f"Note {i}.\n", type="feedback")
    a.run("sync")
    before = _remote_bytes(remote_dir)

    # keys init stopped with Ctrl-C mid-copy takes its copies back: the remote is as it was
    run = a.start("keys", "init")
    deadline = time.monotonic() + 30
    while len(_hidden(project)) < 20 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert run.poll() is None, "keys init finished before it could be stopped"
    run.send_signal(signal.SIGINT)
    run.communicate(timeout=60)
    assert run.returncode != 0
    after = _remote_bytes(remote_dir)
    assert after == before, sorted(set(after.split(b"\n")) - set(before.split(b"\n")))[:5]
    _abandon(project, ["project_0.md", "project_1.md"])  # a keys init killed mid-copy
    (project / "_memsync" / "crypt.pending").write_text("under way\n")
    b.run("sync")  # the pending mark: still a plain remote to every device
    assert "project_2.md" in b.files()
    out = a.run("keys", "init").stdout
    assert "2 object(s) left under a key never published were deleted" in out
    assert not (project / "_memsync" / "crypt.pending").exists()

    a.run("keys", "add", _key(b))
    b.run("sync")
    _abandon(project, ["project_2.md"])  # a keys remove killed before its switch
    out = a.run("keys", "remove", _key(b)).stdout
    assert "1 object(s) left under a key never published were deleted" in out
    data_key = DataKey(a.run("keys", "export").stdout.strip(), 2)
    assert all(
        data_key.reveal(p.relative_to(project / "_memsync" / "x").as_posix())
        for p in _hidden(project)
    )

    # purge with the key: every object but the recipients list, the purge mark, the forgets
    _abandon(project, ["project_0.md", "user_x.md"])
    count = len(_hidden(project))
    out = a.run("purge", "--all", "--yes").stdout
    left = {
        data_key.reveal(p.relative_to(project / "_memsync" / "x").as_posix())
        for p in _hidden(project)
    }
    assert left <= {"_memsync/purged.json", "_memsync/forgotten.json"}, left
    deleted = int(re.search(r"Deleted (\d+) remote object", out).group(1))
    assert deleted == count  # every object there before it, the abandoned ones too
    assert (project / "_memsync" / "crypt.json").exists()

    # purge without any key: allowed (it asks first), the remote is left plain and empty
    refused = _one_line(c.run("purge", "--all", check=1))
    assert "--yes" in refused
    out = c.run("purge", "--all", "--yes").stdout
    names = sorted(
        p.relative_to(project).as_posix()
        for p in project.rglob("*")
        if p.is_file() and not p.name.endswith(".memsync-lock")
    )
    assert names == ["_memsync/purged.json"], names
    # anyone can erase a bucket and write a purge mark: a device that trusted the key writes
    # nothing in plaintext until its user takes the remote as it is now
    a.write("user_secret.md", "Pat is in hospital.\n", type="user")
    for args in (("sync",), ("push", "--republish")):
        told = _one_line(a.run(*args, check=1))
        assert "recipients list (_memsync/crypt.json) is gone" in told
        assert "if a device of yours started the remote over" in told
    assert b"hospital" not in _remote_bytes(remote_dir)
    for record in (a.home / "keys" / "remotes").glob("*.json"):
        record.unlink()
    assert "was purged" in _one_line(a.run("sync", check=1))


def test_strays_damaged_objects_and_this_devices_own_key(trio):
    remote_dir, (a, b, _) = trio
    project = remote_dir / "e2e-project"
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    key_a = _key(a)
    key_b = _key(b)
    a.run("keys", "add", key_b)

    # a file someone without a key put there: named, folded in only when named
    planted = project / "planted.md"
    planted.write_text("---\nname: planted\ndescription: p\nmetadata:\n  type: user\n---\nHi.\n")
    before = _remote_bytes(remote_dir)
    init = a.run("keys", "init")
    assert "planted.md" in init.stderr and "keys init --adopt NAME" in init.stderr
    assert "sealed anew" not in init.stdout and _remote_bytes(remote_dir) == before
    assert "planted.md" in a.run("status").stdout
    out = a.run("keys", "init", "--adopt", "planted.md").stdout
    assert "1 object(s) sealed anew" in out and not planted.exists()
    a.run("sync")
    assert "planted.md" in a.files()

    # a damaged object: named once, as damaged, with what to do
    data_key = DataKey(a.run("keys", "export").stdout.strip(), 1)
    hidden = project / "_memsync" / "x" / data_key.hide("user_role.md")
    hidden.write_bytes(hidden.read_bytes()[:-5] + b"xxxxx")
    proc = a.run("keys", "remove", key_b)
    assert proc.stderr.count("user_role.md on the remote is damaged") == 1, proc.stderr
    assert "memsync push --force user_role.md" in proc.stderr
    assert "changed on two devices" not in proc.stderr
    manifest = (
        project
        / "_memsync"
        / "x"
        / DataKey(a.run("keys", "export").stdout.strip(), 2).hide("_memsync/project.json")
    )
    good = manifest.read_bytes()
    manifest.write_bytes(good[:-5] + b"xxxxx")  # keys init stops at it, after the key
    stopped = a.run("keys", "init", check=1)
    assert key_a in stopped.stdout and "keep a copy somewhere safe" in stopped.stdout
    assert "project.json" in _one_line(stopped)
    manifest.write_bytes(good)

    # this device's own key: asked first; with --yes, it is locked out and told so
    a.run("keys", "add", key_b)
    refused = _one_line(a.run("keys", "remove", key_a, check=1))
    assert "is this device's own key" in refused and "--yes" in refused
    out = a.run("keys", "remove", key_a, "--yes").stdout
    assert "This device has no access now" in out
    assert "is encrypted" in _one_line(a.run("sync", check=1))
    joined = b.run("sync", check=1)  # the damaged file stays refused, the rest arrives
    assert "user_role.md" in joined.stderr and "planted.md" in b.files()


def test_a_damaged_object_is_replaced_by_push_force_or_by_an_edit(trio):
    """A remote copy no device can read is replaced by a device's own copy: by `push --force
    FILE` (as the refusal says), by `push --force` once a sync refused it, or by the next
    upload of an edit of it (as a copy the inbound gate refuses is)."""
    remote_dir, (a, b, _) = trio
    project = remote_dir / "e2e-project"
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    _key(a)
    a.run("keys", "add", _key(b))
    b.run("sync")
    data_key = DataKey(a.run("keys", "export").stdout.strip(), 1)
    hidden = project / "_memsync" / "x" / data_key.hide("user_role.md")

    def damage() -> None:
        hidden.write_bytes(hidden.read_bytes()[:-5] + b"xxxxx")
        assert "does not decrypt" in b.run("sync", check=1).stderr
        assert b"Engineer." in b.files()["user_role.md"]  # nothing lands

    damage()  # this device never met the damaged copy: the file named is read, then replaced
    said = a.run("push", "--force", "user_role.md").stderr
    assert "could not be read" in said and "replaced it with the local version" in said
    b.run("sync")
    damage()
    assert "does not decrypt" in a.run("sync", check=1).stderr  # held here too
    assert "replaced it with the local version" in a.run("push", "--force").stderr
    b.run("sync")
    damage()
    a.append("user_role.md", "Staff now.\n")
    assert "replaced it with the local version" in a.run("sync").stderr
    b.run("sync")
    assert b"Staff now." in b.files()["user_role.md"]
    assert b.files() == a.files()


def test_a_device_that_lost_its_identity_is_told_so_by_keys_init_and_doctor(trio):
    """It still syncs with the data key it kept; `keys init` makes it a new key and says that
    key is no recipient yet (not "has access"), and `doctor` names the missing identity."""
    _, (a, b, _) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    _key(a)
    a.run("keys", "add", _key(b))
    b.run("sync")
    (b.home / "keys" / "identity.txt").unlink()
    doctor = b.run("doctor", check=None)
    assert "identity.txt is missing" in doctor.stdout + doctor.stderr
    assert "Everything is in sync" in b.run("sync").stdout
    init = b.run("keys", "init")
    new_key = next(line for line in init.stdout.splitlines() if line.startswith("age1"))
    assert "has access" not in init.stdout
    said = init.stderr
    assert f"{new_key} is not among the recipients" in said and f"keys add {new_key}" in said
    doctor = b.run("doctor", check=None)
    assert f"{new_key} is not among the recipients" in doctor.stdout + doctor.stderr
    a.run("keys", "add", new_key)
    b.run("sync")  # reads the list that names it now
    assert "identity" not in b.run("doctor").stdout
    init = b.run("keys", "init")
    assert "The remote is encrypted and this device has access." in init.stdout


def test_a_list_made_by_a_device_without_a_key_is_not_taken_for_a_removal(trio):
    """Someone without a key erases the remote and publishes a list of their own: a device
    that trusted the old one is not told it "was removed by a device with access" (it would
    ask the stranger to let it in) but that no device with access vouched for the list."""
    _, (a, _, c) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    _key(a)
    c.run("purge", "--all", "--yes")
    _key(c)
    refused = _one_line(a.run("sync", check=1))
    assert "does not follow from the newest one" in refused and "keys/remotes" in refused
    assert "was removed" not in refused
    assert b"Engineer." in a.files()["user_role.md"]


def test_a_key_is_one_recipient_however_it_is_typed(trio):
    """bech32 reads `AGE1…` as `age1…`: added in capitals, it is the same recipient, listed
    once, and removing it in either case revokes it."""
    remote_dir, (a, b, _) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    _key(a)
    key_b = _key(b)
    assert f"Added {key_b}" in a.run("keys", "add", key_b.upper(), "--name", "b").stdout
    assert "already has access" in a.run("keys", "add", key_b).stdout
    low = "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq5cu47z"  # u = 0: no key's
    assert "a point no device's key can have" in _one_line(a.run("keys", "add", low, check=1))
    assert a.run("keys", "list").stdout.lower().count(key_b) == 1
    b.run("sync")
    a.run("keys", "remove", key_b.upper())
    a.write("user_role.md", "Engineer. Zanzibar.\n", type="user")
    a.run("sync")
    assert "was removed from the recipients" in b.run("sync", check=1).stderr
    assert b"Zanzibar" not in b.files()["user_role.md"]
    assert key_b not in a.run("keys", "list").stdout.lower()


@pytest.mark.s3
def test_init_makes_a_missing_bucket(tmp_path, s3_url):
    missing = make_device(tmp_path, "m", s3_url)
    out = missing.run("keys", "init").stdout
    assert f"Created the remote {s3_url}" in out and "keep a copy somewhere safe" in out
    assert "age1" in out and "Encryption is on" in out
    again = missing.run("keys", "init").stdout  # the key and the advice, every time
    assert "keep a copy somewhere safe" in again and "age1" in again


def test_the_next_sync_downloads_nothing_and_an_open_identity_is_refused(tmp_path):
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    a = make_device(tmp_path, "a", remote_dir.as_uri())
    for i in range(12):
        a.write(f"project_{i}.md", f"Step {i}.\n", type="project")
    a.run("sync")
    assert "13 object(s) sealed anew" in a.run("keys", "init").stdout  # and the manifest
    done = a.run("sync", "--stats")
    assert "Everything is in sync" in done.stdout and "requests: 1 (list 1)" in done.stderr

    identity = a.home / "keys" / "identity.txt"
    identity.chmod(0o644)
    refused = _one_line(a.run("keys", "list", check=1))
    assert f"{identity} is readable by others (mode 644)" in refused
    assert f"chmod 600 {identity}" in refused
    # a sync, which reads the data key kept here and not the identity, refuses as well
    assert f"chmod 600 {identity}" in _one_line(a.run("sync", check=1))
    identity.chmod(0o600)
    assert os.stat(identity).st_mode & 0o777 == 0o600
    a.run("keys", "list")
    (trust,) = (a.home / "keys" / "remotes").iterdir()
    trust.chmod(0o640)
    refused = _one_line(a.run("sync", check=1))
    assert f"{trust} is readable by others (mode 640)" in refused and "data key" in refused
    trust.chmod(0o600)
    a.run("sync")


def test_the_device_that_loses_the_keys_init_race_is_still_given_its_key(trio, monkeypatch):
    """b's `keys init` runs in this process; a's lands between b's copies and its switch."""
    from typer.testing import CliRunner

    from memsync.cli import _register
    from memsync.cli.common import app
    from memsync.stores import crypt_migrate

    _register()

    remote_dir, (a, b, _) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    for key, value in b.env().items():
        monkeypatch.setenv(key, value)
    real, raced = crypt_migrate.build, []

    def racing(ring):
        if not raced:
            raced.append(a.run("keys", "init").stdout)
        return real(ring)

    monkeypatch.setattr(crypt_migrate, "build", racing)
    lost = CliRunner().invoke(app, ["keys", "init"])
    assert "Encryption is on" in raced[0]
    assert "at the same moment" in str(lost.exception)  # said by the CLI's error handler
    assert "keep a copy somewhere safe" in lost.output
    assert re.search(r"^age1\w+$", lost.output, re.M)
    project = remote_dir / "e2e-project"
    key = DataKey(a.run("keys", "export").stdout.strip(), 1)
    assert all(
        key.reveal(p.relative_to(project / "_memsync" / "x").as_posix()) for p in _hidden(project)
    )


def test_a_bucket_restored_from_before_a_rotation_is_mended_by_what_its_refusals_say(trio):
    """Every object sealed under the earlier key (a backup put back) and the newest list: each
    object is refused until named, `keys init --adopt` folds in what is named, the project's
    manifest too, and `purge --all` erases it all even while the manifest is refused."""
    remote_dir, (a, b, _) = trio
    project = remote_dir / "e2e-project"
    (key_b,) = _shared(a, b)
    backup = remote_dir.parent / "backup"
    shutil.copytree(project, backup)
    a.run("keys", "remove", key_b)
    newest = (project / "_memsync" / "crypt.json").read_bytes()
    shutil.rmtree(project)
    shutil.copytree(backup, project)
    (project / "_memsync" / "crypt.json").write_bytes(newest)
    refused = _one_line(a.run("sync", check=1))
    assert "_memsync/project.json" in refused and "--adopt" in refused
    out = a.run("keys", "init", "--adopt", "_memsync/project.json").stdout
    assert "1 object(s) sealed anew" in out
    assert "_memsync/project.json" not in a.run("sync", check=None).stderr
    shutil.rmtree(project)  # the backup put back once more: purge erases it, refused or not
    shutil.copytree(backup, project)
    (project / "_memsync" / "crypt.json").write_bytes(newest)
    assert "_memsync/project.json" in _one_line(a.run("sync", check=1))
    assert "Deleted" in a.run("purge", "--all", "--yes").stdout
