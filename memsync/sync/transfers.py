"""How a run's transfers run: how many at once (widened over a slow network), in daemon
threads that a stalled download cannot hold the process on, and one small GET sent ahead,
whose round trip overlaps the listing's. Nothing here knows what a transfer does."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from memsync.stores.base import Store

Item = TypeVar("Item")  # what one transfer works on: a sync's action, a migration's key

# Over a slow network (the quickest of the first transfers took SLOW_ROUND_TRIP or more: a WAN,
# not the loopback or a LAN, nor a busy loopback's queueing), transfers widen past the
# `concurrency` setting, up to one connection a file and MAX_WORKERS in all, so a 500-file pull
# is a few round trips; on a fast network more threads only add contention (benchmarks.md).
SLOW_ROUND_TRIP = 0.04
LOCAL_READ = 0.002  # a read this quick is this machine's disk, not a network's round trip
MAX_WORKERS = 128


class GetAhead:
    """One small GET sent now, in a daemon thread, whose answer is wanted a little later: its
    round trip overlaps the listing's instead of following it."""

    def __init__(self, store: Store, key: str) -> None:
        self._store, self._key = store, key
        self._got: tuple[bytes, str] | None = None
        self.took: float | None = None  # seconds it took, once done
        self._thread = threading.Thread(target=self._get, name="memsync-ahead", daemon=True)
        self._thread.start()

    def _get(self) -> None:
        started = time.monotonic()
        # any failure: asked again when needed, and its error met and reported there
        with contextlib.suppress(Exception):
            self._got = self._store.get(self._key)
        self.took = time.monotonic() - started

    def result(self) -> tuple[bytes, str] | None:
        """(bytes, ETag), or None if it failed."""
        self._thread.join()
        return self._got


def run_daemons(
    work: Callable[[Item], None],
    items: list[Item],
    workers: int,
    wanted: Callable[[], int] | None = None,
) -> None:
    """`work` on every item, `workers` at a time, in daemon threads; after each item,
    `wanted()` may ask for more threads (the network turned out slow). Not a
    ThreadPoolExecutor: its threads are joined when the interpreter exits, so a hook whose pull
    thread gave up on a stalled download still waited minutes for it to end; daemon threads are
    abandoned (every write they make is atomic, so nothing is left half-written)."""
    queue = list(reversed(items))
    lock = threading.Lock()
    failed: list[BaseException] = []
    threads: list[threading.Thread] = []

    def grow(count: int) -> None:  # with `lock` held
        # each new thread is handed its first item: no more threads start than items are left
        while len(threads) < count and queue and not failed:
            thread = threading.Thread(target=loop, args=(queue.pop(),), daemon=True)
            threads.append(thread)
            thread.start()

    def loop(item: Item) -> None:
        while True:
            try:
                work(item)
            except BaseException as exc:  # raised in the caller, as pool.map does
                with lock:
                    failed.append(exc)
                return
            if wanted is not None:
                more = wanted()
                if more > len(threads):
                    with lock:
                        grow(more)
            with lock:
                if not queue or failed:
                    return
                item = queue.pop()

    with lock:
        grow(max(1, workers))
    try:
        _join_all(threads, lock)
    except BaseException:
        # Ctrl-C or SIGTERM (entry.py makes both a KeyboardInterrupt): the transfers under
        # way finish (each request has its deadline), the rest are not started, and run()
        # saves what was done
        with lock:
            queue.clear()
        _join_all(threads, lock)
        raise
    if failed:
        raise failed[0]


def _join_all(threads: list[threading.Thread], lock: threading.Lock) -> None:
    joined = 0
    while True:
        with lock:
            if joined == len(threads):
                return
            thread = threads[joined]
        thread.join()
        joined += 1
