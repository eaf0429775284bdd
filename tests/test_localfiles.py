"""The scan's quick check: unchanged files are not read again, changed ones always are."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memsync.context import config
from memsync.sync import localfiles
from memsync.sync import scan as scan_mod
from memsync.sync.engine import Engine
from memsync.sync.localfiles import COARSE_MARGIN_NS, FINE_MARGIN_NS, LocalFiles, settled
from memsync.util.errors import UserError
from memsync.util.fsutil import sha256
from tests.conftest import write_memory


def stat_with(mtime_ns: int, ctime_ns: int) -> os.stat_result:
    # st_mode, st_ino, st_dev, st_nlink, st_uid, st_gid, st_size, then the float times
    # (atime, mtime, ctime) and, past index 10, the integer ns times Python fills in
    fields = [0o100600, 1, 1, 1, 0, 0, 10, 0, mtime_ns / 1e9, ctime_ns / 1e9]
    fields += [0, 0, 0, 0, mtime_ns, ctime_ns]
    return os.stat_result(fields)


def test_a_file_is_settled_only_once_its_timestamps_are_a_margin_old():
    now = 1_800_000_000_123_456_789
    fine = now - FINE_MARGIN_NS - 1
    assert settled(stat_with(fine, fine), now)
    assert not settled(stat_with(fine, now - 5_000_000), now)  # ctime counts too
    assert not settled(stat_with(now, fine), now)
    # whole-second stamps (FAT, some shares) could hide a change for up to two seconds
    whole = (now // 1_000_000_000 - 1) * 1_000_000_000
    assert not settled(stat_with(whole, whole), now)
    older = whole - COARSE_MARGIN_NS
    assert settled(stat_with(older, older), now)


def make_engine(tmp_path: Path) -> Engine:
    (tmp_path / "remote").mkdir(exist_ok=True)
    ctx = config.resolve(
        memory_dir=tmp_path / "memory", remote=(tmp_path / "remote").as_uri(), project="p"
    )
    ctx.memory_dir.mkdir(parents=True, exist_ok=True)
    return Engine(ctx)


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The memory files the scan reads, by name."""
    seen: list[str] = []
    real = scan_mod.read_if_there

    def counting(path: str) -> bytes | None:
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(scan_mod, "read_if_there", counting)
    return seen


def settle() -> None:
    time.sleep(FINE_MARGIN_NS / 1e9 + 0.05)


def test_an_untouched_synced_file_is_not_read_again(tmp_path, reads):
    for i in range(3):
        write_memory(tmp_path / "memory", f"project_{i}.md", f"fact {i}\n", type="project")
    settle()
    assert make_engine(tmp_path).run("sync").uploaded == [f"project_{i}.md" for i in range(3)]
    assert len(reads) == 3

    reads.clear()
    result = make_engine(tmp_path).run("sync")
    assert result.changes == 0 and reads == []

    path = write_memory(tmp_path / "memory", "project_1.md", "fact 1, revised\n", type="project")
    result = make_engine(tmp_path).run("sync")
    assert result.uploaded == ["project_1.md"] and reads == ["project_1.md"]
    assert (tmp_path / "remote" / "p" / "project_1.md").read_bytes() == path.read_bytes()


def test_an_in_place_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path, reads):
    path = write_memory(tmp_path / "memory", "user_role.md", "Role: AAAA\n", type="user")
    settle()
    make_engine(tmp_path).run("sync")
    before = path.stat()
    settle()
    with open(path, "r+b") as f:  # same inode, same size
        data = f.read()
        f.seek(0)
        f.write(data.replace(b"AAAA", b"BBBB"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `touch -r` would
    assert path.stat().st_size == before.st_size and path.stat().st_ino == before.st_ino
    reads.clear()
    result = make_engine(tmp_path).run("sync")
    assert result.uploaded == ["user_role.md"] and reads == ["user_role.md"]
    assert b"BBBB" in (tmp_path / "remote" / "p" / "user_role.md").read_bytes()


def test_a_file_written_just_before_a_scan_is_read_again_next_time(tmp_path, reads, monkeypatch):
    write_memory(tmp_path / "memory", "project_new.md", "fresh\n", type="project")
    with monkeypatch.context() as patch:  # "just before" however slow this machine is right now
        patch.setattr(localfiles, "FINE_MARGIN_NS", 60_000_000_000)
        make_engine(tmp_path).run("sync")  # within the margin, so not remembered
    assert "project_new.md" not in make_engine(tmp_path).state.seen
    settle()
    reads.clear()
    make_engine(tmp_path).run("sync")
    assert reads == ["project_new.md"]
    assert "project_new.md" in make_engine(tmp_path).state.seen


def test_a_lost_or_torn_cache_only_means_files_are_read_again(tmp_path, reads):
    write_memory(tmp_path / "memory", "project_a.md", "a\n", type="project")
    settle()
    make_engine(tmp_path).run("sync")
    cache = make_engine(tmp_path).ctx.state_dir / "seen.json"
    cache.write_text('{"project_a.md": [1, 2')
    reads.clear()
    assert make_engine(tmp_path).run("sync").changes == 0
    assert reads == ["project_a.md"]


def test_content_the_scan_did_not_read_is_refused_if_it_changed_since(tmp_path):
    path = tmp_path / "project_x.md"
    path.write_bytes(b"planned\n")
    files = LocalFiles(tmp_path)
    files.add("project_x.md", sha256(b"planned\n"))
    assert files["project_x.md"] == b"planned\n"

    files = LocalFiles(tmp_path)
    files.add("project_x.md", sha256(b"planned\n"))
    path.write_bytes(b"changed after the scan\n")
    with pytest.raises(UserError, match="project_x.md changed while memsync was syncing it"):
        files["project_x.md"]


def test_a_pulled_file_gets_the_remote_edit_time_and_a_later_edit_is_still_seen(tmp_path, reads):
    """A download lands with the edit time the remote carries as its mtime (an untouched
    pulled copy is no edit made at pull time; finding F5, s28b). The quick check is not
    fooled by the old mtime: the stat it caches is the one after it was set (the ctime is
    the pull's), and an edit that keeps size and mtime still moves the ctime."""
    edited = time.time() - 3 * 3600
    path_a = write_memory(tmp_path / "memory", "user_role.md", "Role: AAAA\n", type="user")
    os.utime(path_a, (edited, edited))
    make_engine(tmp_path).run("sync")
    there = config.resolve(
        memory_dir=tmp_path / "other", remote=(tmp_path / "remote").as_uri(), project="p"
    )
    there.memory_dir.mkdir()
    assert Engine(there).run("sync").downloaded == ["user_role.md"]
    path_b = there.memory_dir / "user_role.md"
    assert abs(path_b.stat().st_mtime - edited) < 0.01
    settle()
    Engine(there).run("sync")  # read again (written within the margin), then remembered
    assert "user_role.md" in Engine(there).state.seen
    reads.clear()
    assert Engine(there).run("sync").changes == 0 and reads == []
    before = path_b.stat()
    settle()
    with open(path_b, "r+b") as f:  # same inode, same size, the pulled mtime put back
        data = f.read()
        f.seek(0)
        f.write(data.replace(b"AAAA", b"BBBB"))
    os.utime(path_b, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = Engine(there).run("sync")
    assert result.uploaded == ["user_role.md"] and reads == ["user_role.md"]
    assert b"BBBB" in (tmp_path / "remote" / "p" / "user_role.md").read_bytes()
