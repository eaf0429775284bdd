"""A local write that lands between the engine's re-read of a file and its rename of a
download or a merge over it is kept and merged, never replaced and lost (issue 16, defect 20)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memsync.context import config
from memsync.memory.frontmatter import render
from memsync.sync import localswap
from memsync.sync.engine import Engine


def _engine(tmp_path: Path, device: str, monkeypatch) -> Engine:
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / f"home-{device}"))
    (tmp_path / "remote").mkdir(exist_ok=True)
    (tmp_path / device).mkdir(exist_ok=True)
    ctx = config.resolve(
        memory_dir=tmp_path / device, remote=(tmp_path / "remote").as_uri(), project="p"
    )
    return Engine(ctx)


def _doc(*entries: str) -> str:
    body = "\n## Notes\n" + "".join(f"- {e}\n" for e in entries)
    return render({"name": "callbacks", "description": "jokes", "type": None}, body)


NAME = "running_jokes_and_callbacks.md"


@pytest.fixture(params=["exchange", "re-check"])
def platform(request, monkeypatch) -> str:
    """Both ways of putting a file in place: the atomic exchange, and (where the platform
    has none) the re-check right before the rename."""
    if request.param == "re-check":
        monkeypatch.setattr(localswap, "_flagged_rename", lambda src, dst, flag: None)
    return request.param


def _land_a_write_just_before_the_swap(monkeypatch, path: Path, text: str) -> list[int]:
    real = localswap.replace
    fired: list[int] = []

    def racing(target, data, expected, mode=0o600, *, sync=True, mtime=None):
        if Path(target) == path and not fired:
            fired.append(1)
            path.write_text(text)  # Claude writes, after the engine's last read of the file
        return real(target, data, expected, mode, sync=sync, mtime=mtime)

    monkeypatch.setattr(localswap, "replace", racing)
    return fired


@pytest.mark.parametrize("mode", ["pull", "sync"])
def test_a_write_landing_before_a_download_replaces_the_file_is_merged(
    tmp_path, monkeypatch, platform, mode
) -> None:
    a = _engine(tmp_path, "a", monkeypatch)
    (a.ctx.memory_dir / NAME).write_text(_doc("base"))
    a.run("push")
    b = _engine(tmp_path, "b", monkeypatch)
    b.run("pull")
    (a.ctx.memory_dir / NAME).write_text(_doc("base", "from A"))
    a.run("push")

    path = b.ctx.memory_dir / NAME
    fired = _land_a_write_just_before_the_swap(monkeypatch, path, _doc("base", "Claude on B"))
    result = b.run(mode)
    assert fired
    text = path.read_text()
    assert "- Claude on B" in text and "- from A" in text, text
    remote = (tmp_path / "remote" / "p" / NAME).read_text()
    assert "- Claude on B" in remote and "- from A" in remote
    assert result.errors == {}


def test_a_write_landing_before_a_merge_is_written_is_merged_too(
    tmp_path, monkeypatch, platform
) -> None:
    a = _engine(tmp_path, "a", monkeypatch)
    (a.ctx.memory_dir / NAME).write_text(_doc("base"))
    a.run("push")
    b = _engine(tmp_path, "b", monkeypatch)
    b.run("pull")
    (a.ctx.memory_dir / NAME).write_text(_doc("base", "from A"))
    a.run("push")
    path = b.ctx.memory_dir / NAME
    path.write_text(_doc("base", "from B"))  # a both-sides change: a merge

    fired = _land_a_write_just_before_the_swap(
        monkeypatch, path, _doc("base", "from B", "Claude on B")
    )
    b.run("sync")
    assert fired
    for text in (path.read_text(), (tmp_path / "remote" / "p" / NAME).read_text()):
        for entry in ("from A", "from B", "Claude on B"):
            assert f"- {entry}" in text, text


def test_a_write_landing_before_a_remote_deletion_is_applied_is_kept(tmp_path, monkeypatch) -> None:
    a = _engine(tmp_path, "a", monkeypatch)
    (a.ctx.memory_dir / NAME).write_text(_doc("base"))
    (a.ctx.memory_dir / "MEMORY.md").write_text("- [Callbacks](running_jokes_and_callbacks.md)\n")
    a.run("push")
    b = _engine(tmp_path, "b", monkeypatch)
    b.run("pull")
    (a.ctx.memory_dir / NAME).unlink()
    a.run("push")

    path = b.ctx.memory_dir / NAME
    real = localswap.remove

    def racing(target, expected):
        path.write_text(_doc("base", "Claude on B"))
        return real(target, expected)

    monkeypatch.setattr(localswap, "remove", racing)
    b.run("sync")
    assert "- Claude on B" in path.read_text()
    assert "- Claude on B" in (tmp_path / "remote" / "p" / NAME).read_text()


def test_replace_and_remove_leave_what_landed_in_place(tmp_path, platform) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"landed")
    assert localswap.replace(path, b"new", b"read earlier") == b"landed"
    assert path.read_bytes() == b"landed"
    assert localswap.replace(path, b"new", b"landed") is None
    assert path.read_bytes() == b"new"
    assert localswap.replace(tmp_path / "b.md", b"x", None) is None
    assert localswap.replace(tmp_path / "b.md", b"y", None) == b"x"
    assert localswap.remove(path, b"read earlier") == b"new" and path.read_bytes() == b"new"
    assert localswap.remove(path, b"new") is None and not path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.md"]  # no temp file left
    shutil.rmtree(tmp_path)
