"""The engine's transfer threads: every item done once, no more threads started than items,
widening when asked, the first failure raised."""

from __future__ import annotations

import threading

import pytest

from memsync.sync.transfers import run_daemons


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    started: list[threading.Thread] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self)
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def test_widening_starts_no_thread_without_an_item(monkeypatch):
    started = _counting(monkeypatch)
    done: list[int] = []
    lock = threading.Lock()

    def work(item: int) -> None:
        with lock:
            done.append(item)

    run_daemons(work, list(range(26)), 16, lambda: 50)  # type: ignore[arg-type]
    assert sorted(done) == list(range(26))
    assert len(started) <= 26  # widening to 50 for 26 items started at most one per item


def test_fewer_items_than_workers_and_none_at_all(monkeypatch):
    started = _counting(monkeypatch)
    run_daemons(lambda item: None, list(range(5)), 16)  # type: ignore[arg-type]
    assert len(started) == 5
    started.clear()
    run_daemons(lambda item: None, [], 16)
    assert started == []


def test_the_first_failure_is_raised_and_stops_the_rest():
    done: list[int] = []

    def work(item: int) -> None:
        if item == 3:
            raise ValueError("item 3")
        done.append(item)

    with pytest.raises(ValueError, match="item 3"):
        run_daemons(work, list(range(100)), 1)  # type: ignore[arg-type]
    assert done == [0, 1, 2]
