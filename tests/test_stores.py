"""The storage contract against the in-memory and folder stores, plus folder-specific checks."""

from __future__ import annotations

import multiprocessing
import posixpath
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsync.stores import check_key, open_store
from memsync.stores.folder import FolderStore
from memsync.stores.memory import MemoryStore
from memsync.util.errors import ConfigError, PreconditionFailed, Unreachable, UnsafeKey
from tests.store_contract import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self):
        return MemoryStore("proj")


class TestFolderStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path):
        (tmp_path / "remote").mkdir()
        return FolderStore(tmp_path / "remote", "proj")


def test_projects_are_the_prefixes_beside_this_one(tmp_path):
    """What a first sync lists to find this repository's memory under another name."""
    (tmp_path / "remote").mkdir()
    for name in ("alpha", "beta-4f72ac06b2b5"):
        FolderStore(tmp_path / "remote", name).create("x.md", b"x")
    (tmp_path / "remote" / ".hidden").mkdir()
    assert FolderStore(tmp_path / "remote", "gamma").projects() == ("alpha", "beta-4f72ac06b2b5")
    MemoryStore.named("projects-test", "alpha").create("x.md", b"x")
    assert MemoryStore.named("projects-test", "gamma").projects() == ("alpha",)
    assert MemoryStore("proj").projects() is None  # not a named remote: cannot tell


def test_folder_writes_are_private_and_leave_no_temp_files(tmp_path):
    store = FolderStore(tmp_path / "remote", "proj")
    store.ensure()
    store.create("a.md", b"x")
    path = tmp_path / "remote" / "proj" / "a.md"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == [".memsync-lock", "a.md"]


def test_folder_remote_that_is_missing_is_unreachable(tmp_path):
    store = FolderStore(tmp_path / "not-mounted", "proj")
    with pytest.raises(Unreachable):
        store.list()
    with pytest.raises(Unreachable):
        store.create("a.md", b"x")


def _cas_worker(root: str, n: int, rounds: int) -> int:
    store = FolderStore(root, "proj")
    wins = 0
    while wins < rounds:
        data, etag = store.get("counter.md")
        try:
            store.replace("counter.md", data + f"{n}\n".encode(), etag)
            wins += 1
        except PreconditionFailed:
            continue
    return wins


def test_folder_compare_and_swap_is_atomic_across_processes(tmp_path):
    root = str(tmp_path / "remote")
    FolderStore(root, "proj").ensure()
    FolderStore(root, "proj").create("counter.md", b"")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(_cas_worker, [(root, n, 10) for n in range(4)])
    assert results == [10] * 4
    lines = FolderStore(root, "proj").get("counter.md")[0].decode().split()
    assert sorted(lines) == sorted(str(n) for n in range(4) for _ in range(10))


def test_open_store_by_url(tmp_path):
    store = open_store((tmp_path / "r").as_uri(), "proj")
    assert isinstance(store.inner, FolderStore)  # inside the encrypting wrapper
    assert store.base == tmp_path / "r" / "proj"
    with pytest.raises(ConfigError):
        open_store("ftp://example/x", "proj")
    with pytest.raises(ConfigError):
        open_store("file://otherhost/x", "proj")


def test_a_no_op_sync_leaves_the_records_file_alone(tmp_path, monkeypatch):
    """Rewriting thousands of records was a fifth of a no-op sync at 5000 files."""
    from memsync.context.config import resolve
    from memsync.sync.engine import Engine
    from tests.conftest import write_memory

    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    memory = tmp_path / "memory"
    write_memory(memory, "user_role.md", "Engineer.\n", type="user")
    (tmp_path / "remote").mkdir()
    ctx = resolve(memory_dir=memory, remote=(tmp_path / "remote").as_uri(), project="p")
    assert Engine(ctx).run("sync").uploaded == ["user_role.md"]
    records = ctx.state_dir / "records.json"
    before = records.stat().st_ino
    assert not Engine(ctx).run("sync").uploaded
    assert records.stat().st_ino == before
    write_memory(memory, "user_role.md", "Staff engineer.\n", type="user")
    assert Engine(ctx).run("sync").uploaded == ["user_role.md"]
    assert records.stat().st_ino != before


_KEY_PARTS = st.sampled_from(["a", "b.md", ".", "..", "", "x y", "é", "\x07", "\\", ":", "|"])


@given(st.lists(_KEY_PARTS, min_size=1, max_size=5).map("/".join) | st.text(max_size=12))
def test_an_accepted_key_stays_inside_the_directory_it_is_joined_to(key):
    """check_key is the one gate every remote name passes: whatever it accepts, joined to a
    folder, names a file strictly inside that folder, by its own plain segments."""
    root = "/srv/memory"
    try:
        check_key(key)
    except UnsafeKey:
        return
    joined = posixpath.normpath(posixpath.join(root, key))
    assert joined.startswith(root + "/")
    assert joined == f"{root}/{key}"  # nothing collapsed: no '.', '..' or empty segment
    assert not any(ord(c) < 32 or c in '\\:*?"<>|' for c in key)


def test_a_refused_name_is_shown_as_typed_with_the_characters_named():
    with pytest.raises(UnsafeKey) as refused:
        check_key("user's \"best\".md")
    said = str(refused.value)
    assert said == (
        "refused the name `user's \"best\".md`: it contains \", which Windows does not allow "
        "in file names"
    )
    with pytest.raises(UnsafeKey, match=r"'bell\\x07.md': it contains control characters"):
        check_key("bell\x07.md")


def test_atomic_writes_replace_whole_or_not_at_all(tmp_path):
    from memsync.util.fsutil import atomic_file, atomic_write

    target = tmp_path / "sub" / "f.md"
    atomic_write(target, b"one", 0o640)  # the parent is created on demand
    assert target.read_bytes() == b"one" and stat.S_IMODE(target.stat().st_mode) == 0o640
    with pytest.raises(RuntimeError), atomic_file(target) as fh:
        fh.write(b"half")
        raise RuntimeError("interrupted")
    assert target.read_bytes() == b"one"
    atomic_write(target, b"two", sync=False)
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.md"]  # no temp file left
