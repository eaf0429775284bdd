"""A lost memory dir is not a deletion (issue 16, defect 8): pull restores it, push and sync
refuse to delete the remote (with --force too) and say to pull; status says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memsync.admin.forget import forget_files
from memsync.admin.status import status
from memsync.context import config
from memsync.sync.engine import Engine
from memsync.util.errors import GuardError
from tests.conftest import write_memory

N = 12


def _engine(tmp_path: Path, device: str = "a") -> Engine:
    (tmp_path / "remote").mkdir(exist_ok=True)
    ctx = config.resolve(
        memory_dir=tmp_path / device, remote=(tmp_path / "remote").as_uri(), project="p"
    )
    return Engine(ctx)


@pytest.fixture
def synced(tmp_path: Path) -> dict[str, bytes]:
    mem = tmp_path / "a"
    for i in range(N):
        write_memory(mem, f"project_{i:02}.md", f"fact {i}\n", type="project")
    assert len(_engine(tmp_path).run("sync").uploaded) == N
    return {p.name: p.read_bytes() for p in mem.iterdir()}


def _remote(tmp_path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (tmp_path / "remote" / "p").glob("*.md")}


@pytest.mark.parametrize("loss", ["removed", "emptied"])
@pytest.mark.parametrize("mode", ["sync", "push"])
@pytest.mark.parametrize("force", [False, True])
def test_a_sync_or_push_of_a_lost_memory_dir_deletes_nothing_and_says_to_pull(
    tmp_path, synced, loss, mode, force
) -> None:
    mem = tmp_path / "a"
    shutil.rmtree(mem)
    if loss == "emptied":
        mem.mkdir()
    with pytest.raises(GuardError) as caught:
        _engine(tmp_path).run(mode, force=force)
    message = str(caught.value)
    assert f"{mem} is {'missing' if loss == 'removed' else 'empty'}" in message
    assert "`memsync pull`" in message and "--force" not in message
    assert _remote(tmp_path) == synced


def test_a_pull_restores_a_lost_memory_dir_and_says_so(tmp_path, synced) -> None:
    shutil.rmtree(tmp_path / "a")
    engine = _engine(tmp_path)
    assert status(engine).memory_dir_lost
    result = engine.run("pull")
    assert sorted(result.downloaded) == sorted(synced)
    assert any("was missing; restoring the 12 file(s)" in n for n in result.notes)
    assert {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()} == synced
    again = _engine(tmp_path)
    assert not status(again).memory_dir_lost
    assert again.run("sync").changes == 0
    assert _remote(tmp_path) == synced


def test_a_restore_counts_only_the_files_still_on_the_remote(tmp_path, synced) -> None:
    """Fresh-eyes s30f: a file another device forgot (or deleted) while this memory dir was
    lost does not come back, and the restore's note no longer counts it."""
    other = _engine(tmp_path, "b")
    other.run("pull")
    forget_files(other, ["project_00.md"])
    other.run("sync")
    shutil.rmtree(tmp_path / "a")
    result = _engine(tmp_path).run("pull")
    assert "project_00.md" not in result.downloaded and len(result.downloaded) == N - 1
    assert any(f"was missing; restoring the {N - 1} file(s)" in n for n in result.notes), result
    assert result.restored is not None and f"the {N - 1} file(s)" in result.restored


def test_deleting_some_files_is_still_a_deletion(tmp_path, synced) -> None:
    mem = tmp_path / "a"
    (mem / "project_00.md").unlink()
    result = _engine(tmp_path).run("sync")
    assert result.deleted_remote == ["project_00.md"]


def test_status_with_sync_off_lists_local_changes_only(tmp_path, synced, monkeypatch) -> None:
    monkeypatch.setenv("MEMSYNC_SYNC", "off")
    write_memory(tmp_path / "a", "project_00.md", "changed here\n", type="project")
    st = status(_engine(tmp_path))
    assert not st.sync_enabled
    assert st.deleted_remote == [] and st.remote_only == []
    assert st.modified_local == ["project_00.md"]
    assert st.in_sync == N - 1
