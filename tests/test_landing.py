"""A pull of many new files flushes once at the end; after a power cut before that flush, the
files it was landing are fetched again, never taken for local edits."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memsync import config, fsutil
from memsync import engine as engine_mod
from memsync.engine import LAND_WITHOUT_FSYNC_AT, Engine
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
        engine_mod, "sync_filesystem", lambda p: flushes.append(p) or real_syncfs(p)
    )
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))

    b = make_engine("b")
    assert len(b.run("pull").downloaded) == N
    assert flushes == [b.ctx.memory_dir]
    assert len(fsyncs) < 10  # the state files and directories, not one per pulled file
    assert {p.name: p.read_bytes() for p in b.ctx.memory_dir.iterdir()} == remote_with_files
    assert "landing" not in make_engine("b").state.meta


def test_files_an_interrupted_pull_was_landing_are_fetched_again(
    tmp_path, make_engine, remote_with_files
):
    b = make_engine("b")
    names = sorted(remote_with_files)
    # what a power cut leaves: the names saved, files renamed into place but torn, no records
    b.state.meta["landing"] = names
    b.state.save_meta()
    for name in names[:5]:
        data = remote_with_files[name]
        (b.ctx.memory_dir / name).write_bytes(data[: len(data) * 2 // 3])

    result = make_engine("b").run("sync")
    assert sorted(result.downloaded) == names
    assert result.uploaded == [] and result.merged == []
    assert {p.name: p.read_bytes() for p in b.ctx.memory_dir.iterdir()} == remote_with_files
    remote = tmp_path / "remote" / "p"
    assert {n: (remote / n).read_bytes() for n in names} == remote_with_files
    kept = make_engine("b").state.history(names[0])
    torn = remote_with_files[names[0]]
    assert [v.path.read_bytes() for v in kept] == [torn[: len(torn) * 2 // 3]]
    assert "landing" not in make_engine("b").state.meta
