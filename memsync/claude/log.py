"""memsync's own log: a rotating file under MEMSYNC_HOME/logs, private, and masked.

Hooks print nothing the agent would see by mistake: everything they have to say goes here.

A departure for speed, kept to this module: the lines are written here, not through the
standard `logging` package. Claude Code waits for every hook, and importing `logging` (which
imports `traceback` and more) was a tenth of the session-start hook's own time
(docs/benchmarks.md, "Where a hook's time goes"). The file is what `logging` wrote before:
`2026-11-29 06:17:02,791 INFO [pid] message`, 1 MB × 3 files, 0600.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

LOG_NAME = "memsync.log"
MAX_BYTES = 1_000_000
BACKUPS = 3


class Log:
    """The log file of one MEMSYNC_HOME. `info`, `warning`, `error` and `exception` take a
    literal format string and its arguments, as `logging` does (tests/test_index_limit_hooks.py
    holds every call to that). Writing never raises: a broken log must not fail a hook."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def info(self, fmt: str, *args: object) -> None:
        self._write("INFO", fmt, args)

    def warning(self, fmt: str, *args: object) -> None:
        self._write("WARNING", fmt, args)

    def error(self, fmt: str, *args: object) -> None:
        self._write("ERROR", fmt, args)

    def exception(self, fmt: str, *args: object) -> None:
        """An error with the traceback of the exception being handled."""
        import traceback

        self._write("ERROR", fmt, args, traceback.format_exc().rstrip("\n"))

    def _write(self, level: str, fmt: str, args: tuple[object, ...], trace: str = "") -> None:
        try:
            text = fmt % args if args else fmt
        except (TypeError, ValueError):  # a format that does not fit its arguments
            text = f"{fmt} {args!r}"
        if trace:
            text += "\n" + trace
        if trace or not all(type(a) in (int, float) for a in args):
            # every line goes through the secret scanner's `mask`, except one made only of
            # memsync's own wording and numbers (`"pulled %d, merged %d"`): no secret can be
            # in it, and such a line does not pay for loading the scanner
            from memsync.privacy.scanner import mask

            text = mask(text)
        now = time.time()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        line = f"{stamp},{int(now * 1000) % 1000:03d} {level} [{os.getpid()}] {text}\n"
        with contextlib.suppress(OSError):  # nowhere to say it: the hook goes on
            self._append(line.encode("utf-8", "surrogateescape"))

    def _append(self, data: bytes) -> None:
        path = str(self.path)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_size >= MAX_BYTES:
                self._roll_over(path)
        # one write of one line on a descriptor opened to append: lines from processes
        # logging at once stay whole
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    @staticmethod
    def _roll_over(path: str) -> None:
        for i in range(BACKUPS - 1, 0, -1):
            if os.path.exists(f"{path}.{i}"):
                os.replace(f"{path}.{i}", f"{path}.{i + 1}")
        os.replace(path, f"{path}.1")


def get_logger(home: Path) -> Log:
    """The log writing to HOME/logs/memsync.log (1 MB × 3, 0600)."""
    from memsync.util.fsutil import private_dir

    private_dir(home / "logs")
    return Log(home / "logs" / LOG_NAME)
