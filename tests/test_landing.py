"""A pull of many new files flushes once at the end; after a power cut before that flush, the
files it was landing are fetched again, never taken for local edits."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memsync.context import config
from memsync.context.boot import boot_id, boot_time
from memsync.sync import durability
from memsync.sync.durability import LAND_WITHOUT_FSYNC_AT
from memsync.sync.engine import Engine
from memsync.util import fsutil
from tests.conftest import write_memory

N = LAND_WITHOUT_FSYNC_AT + 8


@pytest.fixture
def make_engine(tmp_path: Path, monkeypatch) -> Callable[[str], Engine]:
    """An engine for one device: its own MEMSYNC_HOME and memory dir, one folder remote."""

    def make(device: str) -> Engine:
        monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / f"home-{device}"))
        return _engine(tmp_path, device)

    return make


def _engine(tmp_path: Path, device: str) -> Engine:
    (tmp_path / "remote").mkdir(exist_ok=True)
    ctx = config.resolve(
        memory_dir=tmp_path / device, remote=(tmp_path / "remote").as_uri(), project="p"
    )
    ctx.memory_dir.mkdir(parents=True, exist_ok=True)
    return Engine(ctx)


@pytest.fixture
def remote_with_files(tmp_path, make_engine) -> dict[str, bytes]:
    for i in range(N):
        body = "".join(f"- fact {i}.{j} the user taught in an earlier session\n" for j in range(8))
        write_memory(tmp_path / "a", f"project_{i:02}.md", body, type="project")
    assert len(make_engine("a").run("push").uploaded) == N
    return {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()}


def test_a_pull_of_many_new_files_flushes_once_instead_of_file_by_file(
    make_engine, remote_with_files, monkeypatch
):
    flushes: list[Path] = []
    fsyncs: list[int] = []
    real_syncfs, real_fsync = fsutil.sync_filesystem, os.fsync
    monkeypatch.setattr(
        durability, "sync_filesystem", lambda p: flushes.append(p) or real_syncfs(p)
    )
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))

    b = make_engine("b")
    assert len(b.run("pull").downloaded) == N
    assert flushes == [b.ctx.memory_dir]
    assert len(fsyncs) < 10  # the state files and directories, not one per pulled file
    assert {p.name: p.read_bytes() for p in b.ctx.memory_dir.iterdir()} == remote_with_files
    assert make_engine("b").state.meta.landing is None


def test_files_an_interrupted_pull_was_landing_are_fetched_again(
    tmp_path, make_engine, remote_with_files
):
    b = make_engine("b")
    names = sorted(remote_with_files)
    # what a power cut leaves: the names saved, files renamed into place but torn, no records,
    # and a machine that has booted since
    b.state.meta.landing = {"names": names, "boot": "the boot before the power cut"}
    b.state.save_meta()
    before_boot = boot_time() - 60
    for name in names[:5]:
        data = remote_with_files[name]
        path = b.ctx.memory_dir / name
        path.write_bytes(data[: len(data) * 2 // 3])
        os.utime(path, (before_boot, before_boot))

    result = make_engine("b").run("sync")
    assert sorted(result.downloaded) == names
    assert result.uploaded == [] and result.merged == []
    assert {p.name: p.read_bytes() for p in b.ctx.memory_dir.iterdir()} == remote_with_files
    remote = tmp_path / "remote" / "p"
    assert {n: (remote / n).read_bytes() for n in names} == remote_with_files
    kept = make_engine("b").state.history(names[0])
    torn = remote_with_files[names[0]]
    assert [v.path.read_bytes() for v in kept] == [torn[: len(torn) * 2 // 3]]
    assert make_engine("b").state.meta.landing is None


def _interrupted_landing(b: Engine, names: list[str], boot: str | None) -> None:
    """A pull killed after saving its landing list, before its final flush and records."""
    b.state.meta.landing = {"names": names, "boot": boot}
    b.state.save_meta()


def test_a_file_written_after_a_killed_pull_is_kept_and_pushed_not_deleted(
    tmp_path, make_engine, remote_with_files
):
    """Defect 18: the SessionStart hook returns at its budget while its pull runs (or the pull
    is killed); Claude then writes one of the files the pull was landing. The next run must
    not take the list for torn files: same boot, nothing was torn."""
    b = make_engine("b")
    names = sorted(remote_with_files)
    for name in names:  # the killed pull got every file into place
        (b.ctx.memory_dir / name).write_bytes(remote_with_files[name])
    _interrupted_landing(b, names, boot_id())
    claude = remote_with_files[names[0]].replace(b"- fact 0.0", b"- fact 0.0 (Claude, later)")
    (b.ctx.memory_dir / names[0]).write_bytes(claude)

    result = make_engine("b").run("sync")
    assert result.downloaded == [] and result.deleted_local == []
    # no base was saved for the landed file: a both-sides merge, the newer edit (Claude's) kept
    assert all(c.startswith(names[0]) for c in result.conflicts)
    assert (b.ctx.memory_dir / names[0]).read_bytes() == claude
    assert (tmp_path / "remote" / "p" / names[0]).read_bytes() == claude
    assert make_engine("b").state.meta.landing is None


def test_after_a_restart_a_file_written_since_the_boot_is_not_taken_for_a_torn_one(
    tmp_path, make_engine, remote_with_files
):
    b = make_engine("b")
    names = sorted(remote_with_files)
    _interrupted_landing(b, names, "the boot before the power cut")
    claude = remote_with_files[names[1]] + b"- written by Claude after the restart\n"
    (b.ctx.memory_dir / names[1]).write_bytes(claude)  # mtime: now, after this boot

    make_engine("b").run("sync")
    assert (b.ctx.memory_dir / names[1]).read_bytes() == claude
    assert (tmp_path / "remote" / "p" / names[1]).read_bytes() == claude
