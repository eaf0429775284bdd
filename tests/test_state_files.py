"""memsync's own state files when they are not what it wrote: each is one sentence naming the
file and what to do, never read as empty (which would drop the queue or the tombstone ETag),
and the file itself is left as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memsync.context import config
from memsync.sync.engine import Engine
from memsync.util.errors import StateError
from memsync.util.fsutil import file_lock
from tests.conftest import write_memory


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    (tmp_path / "remote").mkdir()
    (tmp_path / "mem").mkdir()
    ctx = config.resolve(
        memory_dir=tmp_path / "mem", remote=(tmp_path / "remote").as_uri(), project="p"
    )
    return Engine(ctx)


def _reopen(engine: Engine) -> Engine:
    return Engine(engine.ctx)


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("meta.json", "[]", "holds a JSON list where memsync keeps an object"),
        ("records.json", "[]", "holds a JSON list where memsync keeps an object"),
        ("meta.json", '{"pending": "user_a.md"', "is damaged (not valid JSON)"),
        ("records.json", "\x00\x00\x00", "is damaged (not valid JSON)"),
        ("meta.json", '{"pending": "user_a.md"}', "holds a 'pending' memsync did not write"),
        ("records.json", '{"a.md": [1]}', "holds a JSON list where memsync keeps an object"),
        ("records.json", '{"a.md": {"etag": 1}}', "holds a record memsync did not write"),
    ],
)
def test_a_state_file_of_the_wrong_shape_is_one_sentence_and_left_alone(
    engine: Engine, name: str, content: str, words: str
) -> None:
    path = engine.ctx.state_dir / name
    path.write_text(content)
    with pytest.raises(StateError) as caught:
        _reopen(engine)
    message = str(caught.value)
    assert str(path) in message and words in message
    assert f"mv {path} {path}.bad" in message
    assert "\n" not in message
    assert path.read_text() == content  # nothing rewritten, nothing lost


def test_an_unreadable_meta_json_is_reported_and_the_queue_is_still_there_after(
    engine: Engine,
) -> None:
    engine.state.queue(["user_a.md"])
    engine.state.meta.tombstones_etag = "etag-1"
    engine.state.save()
    path = engine.ctx.state_dir / "meta.json"
    saved = path.read_bytes()
    path.unlink()
    path.mkdir()  # unreadable whoever runs the test (root reads through permissions)
    with pytest.raises(StateError, match=r"meta.json cannot be read \(Is a directory\)"):
        _reopen(engine)
    path.rmdir()
    path.write_bytes(saved)
    state = _reopen(engine).state
    assert state.pending == ["user_a.md"] and state.meta.tombstones_etag == "etag-1"


def test_a_file_where_the_state_folder_should_be_is_named(engine: Engine, tmp_path) -> None:
    state_root = engine.ctx.home / "state"
    project_dir = engine.ctx.state_dir
    for path in (project_dir, state_root):
        for child in sorted(path.rglob("*"), reverse=True) if path.is_dir() else []:
            child.unlink() if child.is_file() else child.rmdir()
        path.rmdir() if path.is_dir() else None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not a folder")
        with pytest.raises(StateError) as caught:
            _reopen(engine)
        assert f"{path} is a file where memsync keeps its state folder" in str(caught.value)
        assert path.read_text() == "not a folder"
        path.unlink()


def test_waiting_too_long_for_the_state_lock_is_one_sentence(engine: Engine) -> None:
    held = file_lock(engine.ctx.state_dir / "lock")
    with held, pytest.raises(StateError) as caught, engine.locked(timeout=0.1):
        pass
    assert "another memsync process has held this project's state lock" in str(caught.value)


def test_a_damaged_bases_database_is_started_again_and_reported(engine: Engine) -> None:
    write_memory(engine.ctx.memory_dir, "user_a.md", "one\n")
    engine.run("push")
    bases = engine.ctx.state_dir / "bases.sqlite"
    bases.write_bytes(b"not a database " * 500)
    write_memory(engine.ctx.memory_dir, "user_a.md", "two\n")
    result = _reopen(engine).run("sync")
    assert result.uploaded == ["user_a.md"]
    assert any("merge-base database" in n and "was damaged" in n for n in result.notes)
    assert sqlite3.connect(bases).execute("SELECT count(*) FROM bases").fetchone() == (1,)


def test_other_database_errors_are_reported_not_a_reason_to_delete_the_bases(
    engine: Engine, monkeypatch
) -> None:
    write_memory(engine.ctx.memory_dir, "user_a.md", "one\n")
    engine.run("push")
    bases = engine.ctx.state_dir / "bases.sqlite"
    before = bases.read_bytes()
    fresh = _reopen(engine)

    def busy(db):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(fresh.state.bases, "_connect", lambda: busy(None))
    with pytest.raises(StateError, match="merge-base database .* cannot be used"):
        fresh.state.bases.get("0" * 64)
    assert bases.read_bytes() == before


def test_a_no_op_sync_flushes_nothing_yet_the_last_sync_time_advances(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_memory(engine.ctx.memory_dir, "user_a.md", "Pat.\n", type="user")
    engine.run("sync")
    first = _reopen(engine).state.meta.last_sync
    flushes: list[int] = []
    monkeypatch.setattr("os.fsync", flushes.append)
    assert _reopen(engine).run("sync").changes == 0
    assert flushes == []
    assert _reopen(engine).state.meta.last_sync > first


def test_the_sync_times_are_kept_apart_and_survive_a_torn_file(engine: Engine) -> None:
    state_dir = engine.ctx.state_dir
    engine.state.meta.pending, engine.state.meta.last_sync = ["user_a.md"], 1000.0
    engine.state.save_meta()
    assert "last_sync" not in (state_dir / "meta.json").read_text()
    assert _reopen(engine).state.meta.last_sync == 1000.0
    (state_dir / "times.json").write_text('{"last_sync": 10')  # torn by a power cut
    state = _reopen(engine).state
    assert state.meta.last_sync is None and state.pending == ["user_a.md"]
