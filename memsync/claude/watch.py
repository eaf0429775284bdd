"""`memsync watch`: push edits made outside Claude's tools (an editor, a shell command).

A watchdog observer collects changed names; after `debounce` seconds of quiet one push runs
for all of them. An outage only queues the work (the engine's pending queue); the next push
drains it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memsync.sync.engine import Engine
from memsync.sync.mode import Mode
from memsync.sync.walk import is_ignored
from memsync.util.errors import GuardError, MemsyncError


class _Collector:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.changed: set[str] = set()
        self.last = 0.0
        self.lock = threading.Lock()

    def note(self, path: str | bytes) -> None:
        path = path.decode() if isinstance(path, bytes) else path
        try:
            name = Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return
        if name == "." or is_ignored(name):
            return
        with self.lock:
            self.changed.add(name)
            self.last = time.monotonic()

    def take(self, debounce: float) -> set[str]:
        with self.lock:
            if not self.changed or time.monotonic() - self.last < debounce:
                return set()
            names, self.changed = self.changed, set()
            return names


def watch(
    engine: Engine,
    debounce: float = 2.0,
    stop: threading.Event | None = None,
    report: Callable[[str, Any], None] | None = None,
) -> None:
    """Watch until `stop` is set (or KeyboardInterrupt), pushing after each quiet spell."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    root = engine.ctx.memory_dir.resolve()
    root.mkdir(parents=True, exist_ok=True)
    collector = _Collector(root)
    stop = stop or threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            if event.is_directory or event.event_type in ("opened", "closed_no_write"):
                return
            collector.note(event.src_path)
            if getattr(event, "dest_path", None):
                collector.note(event.dest_path)

    observer = Observer()
    observer.schedule(Handler(), str(root), recursive=True)
    observer.start()
    try:
        while not stop.is_set():
            names = collector.take(debounce)
            if names:
                try:
                    outcome: Any = engine.run(Mode.PUSH)
                except GuardError as exc:  # watch has no --force: say what does
                    outcome = GuardError(
                        str(exc).replace(
                            "run it again with --force",
                            "run `memsync push --force` once (watching goes on meanwhile)",
                        )
                    )
                except (MemsyncError, OSError) as exc:
                    # a bad remote setting, a full disk: said, and watching goes on; the next
                    # change pushes everything again (a push scans the whole dir)
                    outcome = exc
                if report:
                    report("pushed", (sorted(names), outcome))
            stop.wait(min(0.2, debounce / 2) if debounce > 0 else 0.05)
    except KeyboardInterrupt:
        pass
    finally:
        observer.stop()
        observer.join(5)
