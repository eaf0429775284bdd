"""`migrate_remote` in process, over in-memory and folder remotes: what travels (memory files,
memsync's records, edit times, local history), what does not (forgotten content), what is
never overwritten, bad input that changes nothing, a run cut short and finished, and an
encrypted source. The same code path runs between the real remotes in
tests/test_migrate_trial.py."""

from __future__ import annotations

import json
import uuid

import pytest

from memsync.admin.migrate import migrate_remote
from memsync.context import config
from memsync.context.identity import MANIFEST
from memsync.stores import open_store
from memsync.stores.base import Store
from memsync.sync.conflicts import entry
from memsync.sync.forgotten import Forget, text_mark, with_forget
from memsync.sync.remote_keys import CONFLICTS, COPIES, PURGED, TOMBSTONES
from memsync.sync.state import State
from memsync.util.errors import ConfigError, Unreachable, UserError
from memsync.util.fsutil import sha256

PROJECT = "proj"
ROLE = b"---\nname: role\ndescription: role\ntype: user\n---\nEngineer.\n"
NOTES = (
    b"---\nname: notes\ndescription: notes\ntype: project\n---\n"
    b"- The launch is in May.\n- The zebra plan is secret.\n"
)
SECRET = b"---\nname: secret\ndescription: secret\ntype: project\n---\nA thing to forget.\n"
INDEX = (
    b"- [Role](user_role.md) \xe2\x80\x94 the role\n"
    b"- [Secret](project_secret.md) \xe2\x80\x94 gone\n"
)


def _url() -> str:
    return f"memory://m{uuid.uuid4().hex[:12]}"


def _ctx(tmp_path, remote: str):
    (tmp_path / "memory").mkdir(exist_ok=True)
    return config.resolve(memory_dir=tmp_path / "memory", remote=remote, project=PROJECT)


def _objects(store: Store) -> dict[str, bytes]:
    return {key: store.get(key)[0] for key in store.list()}


def _source() -> tuple[str, Store]:
    """A remote that forgot "zebra" and project_secret.md, and holds both again: written
    after the forgets by devices that had learned of them, so new content (the forget rule)."""
    url = _url()
    src = open_store(url, PROJECT)
    forgets = with_forget(None, Forget("f1", text=text_mark("zebra")))
    forgets = with_forget(forgets, Forget("f2", file="project_secret.md"))
    conflicts = {
        "version": 1,
        "conflicts": [
            entry("project_secret.md", "edited on both devices", "laptop"),
            entry("user_role.md", "edited on both devices", "desktop"),
        ],
    }
    src.create(MANIFEST, json.dumps({"version": 1, "fingerprint": "origin:x/y"}).encode())
    src.create(TOMBSTONES, forgets)
    src.create(CONFLICTS, json.dumps(conflicts).encode())
    src.create("user_role.md", ROLE, edited=1_700_000_000.0)
    src.create("sub/notes.md", NOTES, edited=1_700_000_100.0)
    src.create("project_secret.md", SECRET)
    src.create("MEMORY.md", INDEX)
    src.create("team/shared.md", b"what a team keeps beside the memory\n")  # no sync's: kept
    return url, src


def test_everything_travels_as_the_source_holds_it_and_a_second_run_copies_nothing(tmp_path):
    """The source's content already keeps the source's forgets: it travels as it is."""
    url, src = _source()
    dest = _url()
    result = migrate_remote(_ctx(tmp_path, dest), url, dest)
    assert sorted(result.copied) == sorted(
        [MANIFEST, TOMBSTONES, CONFLICTS, "user_role.md", "sub/notes.md", "MEMORY.md"]
        + ["team/shared.md", "project_secret.md"]
    )
    assert result.forgotten == [] and result.scrubbed == []
    dst = open_store(dest, PROJECT)
    copied = _objects(dst)
    # and the destination's record of what the move copied (a later mover's merge base)
    assert json.loads(copied.pop(COPIES)) == {
        key: sha256(data) for key, data in copied.items() if not key.startswith("_memsync/")
    }
    assert copied == _objects(src)
    assert dst.fetch("user_role.md")[2] == 1_700_000_000.0  # the edit time came along

    again = migrate_remote(_ctx(tmp_path, dest), url, dest)
    assert again.copied == [] and again.left_out == 0
    assert sorted(again.same) == sorted(result.copied)


def test_a_forget_only_the_destination_holds_is_applied_on_the_way(tmp_path):
    """The source's writers never learned of the destination's forgets: what those take does
    not land there."""
    url, _ = _source()
    dest = _url()
    dst = open_store(dest, PROJECT)
    theirs = with_forget(None, Forget("d1", text=text_mark("zebra")))
    dst.create(TOMBSTONES, with_forget(theirs, Forget("d2", file="project_secret.md")))
    result = migrate_remote(_ctx(tmp_path, dest), url, dest)
    assert result.forgotten == ["project_secret.md"]
    assert sorted(result.scrubbed) == ["MEMORY.md", "sub/notes.md"]
    got = _objects(dst)
    assert "project_secret.md" not in got
    assert b"zebra" not in got["sub/notes.md"] and b"launch is in May" in got["sub/notes.md"]
    assert got["MEMORY.md"] == b"- [Role](user_role.md) \xe2\x80\x94 the role\n"
    assert got["user_role.md"] == ROLE
    kept = json.loads(got[CONFLICTS])["conflicts"]
    assert [c["file"] for c in kept] == ["user_role.md"]  # the one about the forgotten file went


def test_other_content_at_the_destination_is_reported_and_never_overwritten(tmp_path):
    url, _ = _source()
    dest = _url()
    dst = open_store(dest, PROJECT)
    dst.create("user_role.md", b"---\nname: role\ndescription: role\ntype: user\n---\nChef.\n")
    # the same project's manifest, as a device of it stamped it there: the same project
    dst.create(MANIFEST, json.dumps({"fingerprint": "origin:x/y", "commit": "abc"}).encode())
    result = migrate_remote(_ctx(tmp_path, dest), url, dest)
    assert result.different == ["user_role.md"] and result.left_out == 1
    assert MANIFEST in result.same
    assert b"Chef." in dst.get("user_role.md")[0]
    assert "MEMORY.md" in result.copied


def test_a_run_cut_short_finishes_when_run_again(tmp_path, monkeypatch):
    url, _ = _source()
    dest = _url()
    from memsync.stores.memory import MemoryStore

    real = MemoryStore.create
    made = []

    def failing(self, key, data, edited=None):
        if len(made) == 3:
            raise Unreachable("the remote went away")
        made.append(key)
        return real(self, key, data, edited)

    monkeypatch.setattr(MemoryStore, "create", failing)
    with pytest.raises(Unreachable):
        migrate_remote(_ctx(tmp_path, dest), url, dest)
    monkeypatch.setattr(MemoryStore, "create", real)
    assert sorted(open_store(dest, PROJECT).list()) == sorted(made)
    assert made[:2] == [MANIFEST, TOMBSTONES]  # the project and its forgets land first
    finished = migrate_remote(_ctx(tmp_path, dest), url, dest)
    assert sorted(finished.same) == sorted(made) and len(finished.copied) == 5
    assert finished.left_out == 0


def test_bad_input_is_one_sentence_and_changes_nothing(tmp_path):
    url, src = _source()
    before = _objects(src)
    folder = tmp_path / "remote"
    folder.mkdir()
    ctx = _ctx(tmp_path, folder.as_uri())
    cases = [
        (folder.as_uri(), folder.as_uri() + "/", "both name the remote"),
        ("ftp://host/x", url, "--from: the remote 'ftp://host/x' is not a file:/// folder"),
        (url, "relative/path", "--to: the remote 'relative/path' is not a file:/// folder"),
        (_url(), url, "holds nothing of project 'proj'"),
    ]
    for source, dest, said in cases:
        with pytest.raises((UserError, ConfigError)) as refused:
            migrate_remote(ctx, source, dest)
        assert said in str(refused.value) and "\n" not in str(refused.value)
    assert _objects(src) == before

    other = _url()  # another project under this name, and a purged one
    open_store(other, PROJECT).create(MANIFEST, json.dumps({"fingerprint": "origin:a/b"}).encode())
    purged = _url()
    open_store(purged, PROJECT).create(PURGED, b'{"purged": 1}')
    for dest, said in ((other, "another project"), (purged, "marks project 'proj' purged")):
        with pytest.raises(UserError, match=said):
            migrate_remote(ctx, url, dest)
        assert len(open_store(dest, PROJECT).list()) == 1


def test_this_devices_local_history_comes_along(tmp_path):
    url, _ = _source()
    dest = _url()
    ctx = _ctx(tmp_path, dest)
    old = State(config.state_dir_for(ctx.home, url, PROJECT, ctx.memory_dir))
    old.keep("user_role.md", b"an earlier role\n", "replaced by a pull")
    result = migrate_remote(ctx, url, dest)
    assert result.history == 1
    new = State(ctx.state_dir).history("user_role.md")
    assert [v.reason for v in new] == ["replaced by a pull"]
    assert new[0].path.read_bytes() == b"an earlier role\n"
    assert migrate_remote(ctx, url, dest).history == 0  # carried once


def test_an_encrypted_source_goes_only_to_an_encrypted_destination(tmp_path):
    pytest.importorskip("pyrage")
    from memsync.stores.crypt import HIDDEN
    from memsync.stores.crypt_keys import CRYPT_KEY, create_identity
    from memsync.stores.crypt_migrate import turn_on

    create_identity()
    url, src = _source()
    turn_on(src, "laptop")  # type: ignore[arg-type]
    plain = _url()
    with pytest.raises(UserError, match="is encrypted and the destination .* is not"):
        migrate_remote(_ctx(tmp_path, plain), url, plain)
    assert open_store(plain, PROJECT).list() == {}

    sealed = _url()
    turn_on(open_store(sealed, PROJECT), "laptop")  # type: ignore[arg-type]
    result = migrate_remote(_ctx(tmp_path, sealed), url, sealed)
    assert "user_role.md" in result.copied and result.left_out == 0
    dst = open_store(sealed, PROJECT)
    assert dst.get("user_role.md")[0] == ROLE
    raw = dst.inner.list()  # type: ignore[attr-defined]
    assert all(k.startswith(HIDDEN) or k == CRYPT_KEY for k in raw)


def test_a_plain_source_is_sealed_on_the_way_into_an_encrypted_destination(tmp_path):
    pytest.importorskip("pyrage")
    from memsync.stores.crypt import HIDDEN
    from memsync.stores.crypt_keys import CRYPT_KEY, create_identity
    from memsync.stores.crypt_migrate import turn_on

    create_identity()
    url, _ = _source()
    sealed = _url()
    turn_on(open_store(sealed, PROJECT), "laptop")  # type: ignore[arg-type]
    result = migrate_remote(_ctx(tmp_path, sealed), url, sealed)
    assert result.left_out == 0 and "sub/notes.md" in result.copied
    raw = open_store(sealed, PROJECT).inner.list()  # type: ignore[attr-defined]
    assert all(k.startswith(HIDDEN) or k == CRYPT_KEY for k in raw)


def test_the_command_line_says_one_sentence_with_its_exit_code(tmp_path):
    """Through the CLI: usage (2), bad input (1), an unreachable source (3), a missing
    destination folder made with a note; nothing is written by a refused run."""
    from tests.devices import make_device

    folder = tmp_path / "remote"
    folder.mkdir()
    device = make_device(tmp_path, "laptop", folder.as_uri())
    device.write("user_role.md", "Engineer.\n", type="user")
    device.run("sync")
    gone = (tmp_path / "unplugged" / "drive").as_uri()
    other = tmp_path / "other"
    other.mkdir()
    cases = [
        (["--to", other.as_uri()], 2, "--to goes with --from"),
        (["--from", folder.as_uri(), "--source", "x=y"], 2, "cannot be combined"),
        (["--from", "ftp://host/x"], 1, "--from: the remote 'ftp://host/x' is not"),
        (["--from", folder.as_uri() + "/"], 1, "both name the remote"),
        (["--from", gone, "--to", other.as_uri()], 3, "is not there (is the drive mounted?"),
    ]
    for args, code, said in cases:
        run = device.run("migrate", *args, check=code)
        assert run.stderr.count("\n") == 1 and said in run.stderr, run.stderr
        assert "Traceback" not in run.stderr
    assert list(other.iterdir()) == []
    moved = device.run("migrate", "--from", folder.as_uri(), "--to", other.as_uri())
    assert "Copied: 2, Already there: 0," in moved.stdout  # the file and the manifest
    assert "created the remote" not in moved.stderr  # the folder was there: only the project's
    # folder in it was made, as every write to a folder remote makes it
    assert (other / "e2e-project" / "user_role.md").read_bytes() == (
        device.memory / "user_role.md"
    ).read_bytes()
