"""Encryption as users meet it: `python -m memsync` on three devices sharing a folder remote.
Turn it on, a device without access, join, write on both, forget, revoke; a device syncing
while `keys init` re-uploads; every byte on the remote read for the memory's words and names;
and a file decrypted with the age CLI alone."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import threading

import pytest

from tests.conftest import NO_FCNTL
from tests.devices import make_device

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="the remote's protocol, not the lock")

COUNT = 300
WORDS = ("pineapple", "quigley", "dentist", "kilimanjaro", "saxophone")
NAMES = ("relationship_pat_quigley", "user_health", "project_kilimanjaro")


def _remote_bytes(root) -> bytes:
    """Everything a reader of the remote sees: paths, contents and file times."""
    seen = []
    for path in sorted(root.rglob("*")):
        seen.append(str(path.relative_to(root)).encode())
        st = path.stat()
        seen.append(f"{st.st_mtime} {st.st_size}".encode())
        if path.is_file():
            seen.append(path.read_bytes())
    return b"\n".join(seen).lower()


def _no_plaintext(root) -> None:
    seen = _remote_bytes(root)
    for word in (*WORDS, *NAMES):
        assert word.encode() not in seen, f"{word!r} is readable on the remote"


def _key(device) -> str:
    out = device.run("keys", "init").stdout
    return next(line for line in out.splitlines() if line.startswith("age1"))


def _snapshot(device) -> dict[str, bytes]:
    """The device's memory and state, but for the run's two caches (when it last tried, the
    scan's stat cache), which every run that reaches its listing keeps."""
    return {
        str(p.relative_to(device.root)): p.read_bytes()
        for p in sorted(device.root.rglob("*"))
        if p.is_file() and "keys" not in p.parts and p.name not in ("times.json", "seen.json")
    }


@pytest.fixture
def trio(tmp_path):
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    url = remote_dir.as_uri()
    return remote_dir, [make_device(tmp_path, n, url) for n in ("a", "b", "c")]


def test_turn_on_join_write_forget_revoke(trio):
    remote_dir, (a, b, c) = trio
    a.write("relationship_pat_quigley.md", "Pat loves pineapple.\nPat plays saxophone.\n")
    a.write("user_health.md", "Dentist on Tuesday.\n", type="user")
    a.run("sync")
    b.run("sync")  # b synced before encryption was on
    _key(a)
    _no_plaintext(remote_dir)

    # b has no access and no key: its key is made (0600, nothing else written here), and one
    # sentence gives it, exit 1, nothing changed on the remote
    before_remote = _remote_bytes(remote_dir)
    b.write("project_kilimanjaro.md", "Climb kilimanjaro.\n", type="project")
    before_b = _snapshot(b)
    identity = b.home / "keys" / "identity.txt"
    assert not identity.exists()
    proc = b.run("sync", check=1)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    made = re.search(r"this device's key (age1\w+) is not among", proc.stderr)
    assert made and f"run `memsync keys add {made[1]}`" in proc.stderr
    assert identity.stat().st_mode & 0o777 == 0o600
    assert _snapshot(b) == before_b and _remote_bytes(remote_dir) == before_remote
    key_b = _key(b)  # the same key, still no recipient
    assert key_b == made[1]
    before_b = _snapshot(b)
    proc = b.run("sync", check=1)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"is encrypted and this device's key {key_b} is not among" in proc.stderr
    assert f"run `memsync keys add {key_b}`" in proc.stderr
    assert _snapshot(b) == before_b and _remote_bytes(remote_dir) == before_remote
    hook = b.post_tool_use(b.memory / "project_kilimanjaro.md")  # never fails the session
    assert hook.returncode == 0 and f"memsync keys add {key_b}" in hook.stdout
    assert _remote_bytes(remote_dir) == before_remote

    # b and c join; everyone writes; all converge
    bad = a.run("keys", "add", "age1-not-a-key", check=1)
    assert bad.stderr.count("\n") == 1 and "is not an age public key" in bad.stderr
    a.run("keys", "add", key_b, "--name", "laptop")
    a.run("keys", "add", _key(c), "--name", "phone")
    listed = a.run("keys", "list", "--json").stdout
    assert [r["name"] for r in json.loads(listed)["data"]["recipients"]][1:] == ["laptop", "phone"]
    b.run("sync")
    c.run("sync")
    a.append("user_health.md", "The dentist moved to Friday.\n")
    c.write("user_role.md", "Engineer.\n", type="user")
    for device in (a, b, c, a, b):
        device.run("sync")
    assert a.files() == b.files() == c.files()
    assert "project_kilimanjaro.md" in a.files() and "user_role.md" in b.files()
    assert "relationship_pat_quigley.md" in b.run("ls").stdout  # real names to a device with access
    _no_plaintext(remote_dir)

    # a damaged object is refused like a bad download: named, nothing lands
    from memsync.stores.crypt_keys import DataKey, Device, Keyring, build

    project = remote_dir / "e2e-project"
    data_key = DataKey(a.run("keys", "export").stdout.strip(), 1)
    hidden = project / "_memsync" / "x" / data_key.hide("user_role.md")
    good = hidden.read_bytes()
    hidden.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    before_b = b.files()
    proc = b.run("sync", check=None)
    assert "user_role.md" in proc.stdout + proc.stderr and "does not decrypt" in proc.stderr
    assert b.files() == before_b
    hidden.write_bytes(good)
    # a recipients list rewritten by someone without a key: refused, nothing synced
    import pyrage

    genuine = (project / "_memsync" / "crypt.json").read_bytes()
    mallory = str(pyrage.x25519.Identity.generate().to_public())
    devices = [Device(key_b, "laptop", 0.0), Device(mallory, "mallory", 0.0)]
    (project / "_memsync" / "crypt.json").write_bytes(build(Keyring(DataKey.generate(2), devices)))
    proc = b.run("sync", check=1)
    assert "does not follow from the newest one" in proc.stderr and proc.stderr.count("\n") == 1
    # (the forgery opens for b, but is not vouched for); the genuine list put back mends it
    refused = b.run("keys", "init", check=1).stderr
    assert "does not follow from the newest one" in refused and refused.count("\n") == 1
    (project / "_memsync" / "crypt.json").write_bytes(genuine)
    for device in (b, a, c):
        device.run("sync")

    # forget: the text goes from every ciphertext too (checked with the data key)
    a.run("forget", "--match", "saxophone", "--yes")
    for device in (b, c, a):
        device.run("sync")
    data_key = a.run("keys", "export").stdout.strip()
    assert b"saxophone" not in _decrypted(remote_dir, data_key)
    assert b"pineapple" in _decrypted(remote_dir, data_key)  # the check can fail

    # revoke c: a new data key; c gets the sentence; a and b go on
    old_names = {p.name for p in (remote_dir / "e2e-project" / "_memsync" / "x").iterdir()}
    out = a.run("keys", "remove", _key(c)).stdout
    assert "before stays readable" in out
    new_names = {p.name for p in (remote_dir / "e2e-project" / "_memsync" / "x").iterdir()}
    assert not old_names & new_names, "every object is sealed again under the new data key"
    assert a.run("keys", "export").stdout.strip() != data_key
    assert "memsync keys add" in c.run("sync", check=1).stderr
    b.append("user_role.md", "Staff engineer now.\n")
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files()
    assert len(json.loads(b.run("keys", "list", "--json").stdout)["data"]["recipients"]) == 2
    _no_plaintext(remote_dir)


def _decrypted(remote_dir, data_key: str) -> bytes:
    import pyrage

    identity = pyrage.x25519.Identity.from_str(data_key)
    out = []
    for path in (remote_dir / "e2e-project" / "_memsync" / "x").rglob("*"):
        if path.is_file():
            out.append(pyrage.decrypt(path.read_bytes(), [identity]))
    return b"\n".join(out).lower()


def test_a_device_syncing_while_keys_init_reuploads_loses_nothing(trio, monkeypatch):
    """b's sync runs in this process; a's `keys init` runs when b has sent ten files, so the
    switch lands in the middle of b's uploads and its edit of a file the switch moves."""
    remote_dir, (a, b, _) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    for i in range(COUNT):
        b.write(f"project_{i:03}.md", f"fact {i}\n", type="project")
    b.append("user_role.md", "Likes tea.\n")
    for key, value in b.env().items():
        monkeypatch.setenv(key, value)
    from memsync.cli.plain import engine_for

    engine = engine_for(None, None, None)
    inner = engine.store.inner
    switched: list[str] = []
    calls = [0]
    turn = threading.Lock()  # b's writers wait while a switches

    def racing(write):
        def wrapped(*args, **kwargs):
            with turn:
                calls[0] += 1
                if calls[0] == 10:
                    switched.append(a.run("keys", "init").stdout)
            return write(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(inner, "create", racing(inner.create))
    monkeypatch.setattr(inner, "replace", racing(inner.replace))
    try:
        engine.run("sync")  # what it could not send stays queued here
    except Exception as exc:  # b is not a recipient once the switch lands
        assert "is encrypted" in str(exc)
    finally:
        engine.close()
    copied = int(re.search(r"(\d+) object\(s\) sealed anew", switched[0]).group(1))
    assert copied < COUNT, "b was still uploading when the switch began"
    # b joins and syncs what is left; a folds in what b wrote in plaintext after the switch
    a.run("keys", "add", _key(b))
    joined = b.run("sync", check=None)
    assert "in plaintext on an encrypted remote" in joined.stdout + joined.stderr
    # keys init names b's writes after the switch and changes nothing; --adopt folds them in
    listed = a.run("keys", "init")
    assert "sealed anew" not in listed.stdout and "keys init --adopt NAME" in listed.stderr
    strays = re.search(r"not synced: (.*); check each", listed.stderr).group(1).split(", ")
    assert strays and all(n.startswith("project_") for n in strays)
    adopt = [arg for name in strays for arg in ("--adopt", name)]
    assert f"{len(strays)} object(s) sealed anew" in a.run("keys", "init", *adopt).stdout
    assert "--adopt" not in a.run("keys", "init").stderr
    for device in (b, a, b):
        device.run("sync")
    assert a.files() == b.files()
    assert len([n for n in a.files() if n.startswith("project_")]) == COUNT
    assert b"Likes tea." in a.files()["user_role.md"]
    names = [p.relative_to(remote_dir).as_posix() for p in remote_dir.rglob("*") if p.is_file()]
    assert all("/_memsync/" in n or n.endswith(".memsync-lock") for n in names), names


@pytest.mark.skipif(shutil.which("age") is None, reason="the age CLI is not installed")
def test_a_file_decrypts_with_the_age_cli(trio, tmp_path):
    remote_dir, (a, _, _) = trio
    a.write("user_health.md", "Dentist on Tuesday.\n", type="user")
    a.run("sync")
    a.run("keys", "init")
    project = remote_dir / "e2e-project"
    # the device's own identity opens the recipients object's box, which holds the data key
    box = tmp_path / "box.age"
    recipients = json.loads((project / "_memsync/crypt.json").read_text())
    box.write_bytes(base64.b64decode(recipients["box"]))
    identity = a.home / "keys" / "identity.txt"
    inner = json.loads(_age("-d", "-i", str(identity), str(box)))
    data_key = tmp_path / "data-key.txt"
    data_key.write_text(inner["data_key"] + "\n")
    assert inner["data_key"] == a.run("keys", "export").stdout.strip()
    objects = [p for p in (project / "_memsync" / "x").rglob("*") if p.is_file()]
    # memsync's own writer (the keyed stanza beside the X25519 one) and pyrage's alike
    assert any(b"\n-> memsync-v2 " in p.read_bytes()[:300] for p in objects)
    plain = [_age("-d", "-i", str(data_key), str(p)) for p in objects]
    ours = [p for p in plain if b"Dentist on Tuesday." in p]
    assert len(ours) == 1
    header, _, body = ours[0].partition(b"\n")
    assert header.startswith(b"memsync-crypt 1 ") and body == a.files()["user_health.md"]


def _age(*args: str) -> bytes:
    return subprocess.run(["age", *args], capture_output=True, check=True, timeout=30).stdout


@pytest.mark.azure
def test_on_azurite_join_write_revoke_and_every_blob_read(tmp_path, azurite, azure_url):
    env = {"AZURE_STORAGE_CONNECTION_STRING": azurite.connection_string}
    a, b = (make_device(tmp_path, n, azure_url, **env) for n in ("a", "b"))
    a.write("relationship_pat_quigley.md", "Pat loves pineapple.\n")
    a.run("sync")
    _key(a)
    assert "memsync keys add" in b.run("sync", check=1).stderr
    a.run("keys", "add", _key(b))
    b.run("sync")
    b.write("project_kilimanjaro.md", "Climb kilimanjaro with the dentist.\n", type="project")
    a.append("relationship_pat_quigley.md", "Pat plays saxophone.\n")
    for device in (b, a, b):
        device.run("sync")
    assert a.files() == b.files() and len(a.files()) == 2
    a.run("keys", "remove", _key(b))
    assert "memsync keys add" in b.run("sync", check=1).stderr
    from memsync.stores import open_store

    raw = open_store(azure_url, "e2e-project").inner  # the blobs as they are, no wrapper
    seen = []
    for key in raw.list():
        data, _, edited = raw.fetch(key)
        seen += [key.encode(), data, str(edited).encode()]
    every = b"\n".join(seen).lower()
    for word in (*WORDS, *NAMES):
        assert word.encode() not in every, f"{word!r} is readable on the remote"
    assert len(seen) > 6  # the check read something


@pytest.mark.parametrize("switch", ["keys init", "keys remove"])
def test_a_file_created_after_a_switch_settled_is_sealed_by_its_writer(trio, monkeypatch, switch):
    """b's sync runs in this process and listed before the switch; a's whole switch (copy,
    switch, settle) runs before b's create lands, so b creates the file in plaintext or under
    the rotated-out key. b's command seals it under the current key before it ends: no
    `keys init`, and nothing is left that a device with access refuses."""
    remote_dir, (a, b, c) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    for key, value in b.env().items():
        monkeypatch.setenv(key, value)
    from memsync.cli.plain import engine_for
    from memsync.stores.crypt_keys import create_identity, public_key

    key_b = public_key(create_identity()[0])
    if switch == "keys remove":
        _key(a)
        a.run("keys", "add", key_b)
        a.run("keys", "add", _key(c))
        b.run("sync")
    b.write("project_late.md", "Written across the switch.\n", type="project")
    engine = engine_for(None, None, None)
    inner = engine.store.inner
    said: list[str] = []

    def racing(write):
        def wrapped(*args, **kwargs):
            if not said:  # the whole switch happens before b's first write lands
                if switch == "keys init":
                    said.append(a.run("keys", "init").stdout)
                    a.run("keys", "add", key_b)
                else:
                    said.append(a.run("keys", "remove", _key(c)).stdout)
            return write(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(inner, "create", racing(inner.create))
    try:
        engine.run("sync")
    finally:
        engine.close()
    assert said and "sealed anew" in said[0]
    project = remote_dir / "e2e-project"
    plain = [p.name for p in project.rglob("*") if p.is_file() and "_memsync" not in p.parts]
    assert plain == [] or all(n.endswith(".memsync-lock") for n in plain), plain
    data_key = a.run("keys", "export").stdout.strip()
    assert b"written across the switch." in _decrypted(remote_dir, data_key)
    synced = a.run("sync", check=None)
    assert "not trusted" not in synced.stdout + synced.stderr
    assert (a.memory / "project_late.md").read_text().endswith("Written across the switch.\n")
    assert "sealed anew" not in a.run("keys", "init").stdout  # nothing left to fold in
    b.run("sync")
    assert a.files() == b.files()


@pytest.mark.s3
def test_on_s3_three_devices_join_write_revoke_and_every_object_read(tmp_path, s3_url):
    a, b, c = (make_device(tmp_path, n, s3_url) for n in ("a", "b", "c"))
    a.write("relationship_pat_quigley.md", "Pat loves pineapple.\n")
    a.run("sync")
    with pytest.raises(AssertionError, match="is readable"):  # the check can fail
        _no_plaintext_on_s3(s3_url)
    _key(a)
    for device in (b, c):  # no key yet: each is told the key it just made
        said = device.run("sync", check=1).stderr
        key = re.search(r"run `memsync keys add (age1\w+)`", said)
        assert key and said.count("\n") == 1 and "Traceback" not in said
        a.run("keys", "add", key[1])
    b.run("sync")
    c.run("sync")
    b.write("project_kilimanjaro.md", "Climb kilimanjaro with the dentist.\n", type="project")
    c.write("user_health.md", "Dentist on Tuesday.\n", type="user")
    a.append("relationship_pat_quigley.md", "Pat plays saxophone.\n")
    for device in (b, c, a, b, c):
        device.run("sync")
    assert a.files() == b.files() == c.files() and len(a.files()) == 3
    a.run("keys", "remove", _key(c))
    assert "memsync keys add" in c.run("sync", check=1).stderr
    b.append("user_health.md", "Moved to Friday.\n")
    b.run("sync")
    a.run("sync")
    assert a.files() == b.files() and b"Friday" in a.files()["user_health.md"]
    _no_plaintext_on_s3(s3_url)


def _no_plaintext_on_s3(s3_url: str) -> None:
    """Every object of the bucket read as another S3 client sees it: keys, bodies, user
    metadata and the headers S3 keeps (content type, disposition and the like)."""
    import os

    import botocore.session

    bucket = s3_url.split("/")[2]
    client = botocore.session.get_session().create_client(
        "s3",
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        region_name=os.environ["AWS_REGION"],
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    )
    seen = []
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        got = client.get_object(Bucket=bucket, Key=item["Key"])
        headers = got["ResponseMetadata"]["HTTPHeaders"]
        seen += [item["Key"].encode(), got["Body"].read(), json.dumps(headers).encode()]
        seen.append(json.dumps(got.get("Metadata", {})).encode())
    every = b"\n".join(seen).lower()
    for word in (*WORDS, *NAMES):
        assert word.encode() not in every, f"{word!r} is readable on the remote"
    assert len(seen) > 12  # the check read something


def test_a_push_file_after_a_switch_it_has_not_seen_leaves_no_plaintext(trio):
    """`push FILE` of a known file reads nothing first (a hook's push is one conditional
    write): on a remote switched since, its plaintext write finds no object with its ETag,
    and the device follows the switch instead."""
    remote_dir, (a, b, _) = trio
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    _key(a)  # a turns encryption on; b has not heard of it
    path = b.append("user_role.md", "Likes oolong tea.\n")
    pushed = b.run("push", str(path), check=None)
    assert pushed.returncode != 0 and "encrypted" in pushed.stdout + pushed.stderr
    assert b"oolong" not in _remote_bytes(remote_dir)  # a longer word than random bytes hold
    a.run("keys", "add", _key(b))
    b.run("sync")
    a.run("sync")
    assert b"Likes oolong tea." in a.files()["user_role.md"]
    assert b"oolong" not in _remote_bytes(remote_dir)
