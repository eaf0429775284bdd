"""memsync's own log: a rotating file under MEMSYNC_HOME/logs, private, and masked.

Hooks print nothing the agent would see by mistake: everything they have to say goes here.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

from memsync.util.fsutil import private_dir

LOG_NAME = "memsync.log"
MAX_BYTES = 1_000_000
BACKUPS = 3


class _RotatingFile(logging.FileHandler):
    """memsync.log rolled over to .1 .. .3 past MAX_BYTES: `logging.handlers`' rotating handler,
    whose module (sockets, pickle, queues) every hook would otherwise load for this."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.stream is not None and self.stream.tell() >= MAX_BYTES:
                self._roll_over()
        except OSError:
            self.handleError(record)
        super().emit(record)

    def _open(self) -> io.TextIOWrapper:
        """The log opened to append, private (0600) whenever it is created, a rolled-over
        log's successor too."""
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    def _roll_over(self) -> None:
        if self.stream is not None:
            self.stream.close()
        self.stream = None  # reopened by emit
        for i in range(BACKUPS - 1, 0, -1):
            if os.path.exists(f"{self.baseFilename}.{i}"):
                os.replace(f"{self.baseFilename}.{i}", f"{self.baseFilename}.{i + 1}")
        os.replace(self.baseFilename, f"{self.baseFilename}.1")


class _MaskingFormatter(logging.Formatter):
    """Every line goes through the secret scanner's `mask`, except one made only of memsync's
    own wording and numbers (`"pulled %d, merged %d"`): no secret can be in it, and such a line
    does not pay for loading the scanner (a fifth of a session-start hook, benchmarks.md).
    Every log call in memsync passes a literal format string (tests/test_index_limit_hooks.py)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        args = record.args if isinstance(record.args, tuple) else None
        if args is not None and not record.exc_info and all(type(a) in (int, float) for a in args):
            return text
        from memsync.privacy.scanner import mask

        return mask(text)


def get_logger(home: Path) -> logging.Logger:
    """The `memsync` logger writing to HOME/logs/memsync.log (1 MB × 3, 0600)."""
    logger = logging.getLogger("memsync")
    target = str(home / "logs" / LOG_NAME)
    if any(getattr(h, "baseFilename", None) == target for h in logger.handlers):
        return logger
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    private_dir(home / "logs")
    handler = _RotatingFile(target, encoding="utf-8")
    handler.setFormatter(_MaskingFormatter("%(asctime)s %(levelname)s [%(process)d] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger
