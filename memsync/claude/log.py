"""memsync's own log: a rotating file under MEMSYNC_HOME/logs, private, and masked.

Hooks print nothing the agent would see by mistake: everything they have to say goes here.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path

from memsync.util.fsutil import private_dir

LOG_NAME = "memsync.log"


class _MaskingFormatter(logging.Formatter):
    """Every line goes through the secret scanner's `mask`, except one made only of memsync's
    own wording and numbers (`"pulled %d, merged %d"`): no secret can be in it, and such a line
    does not pay for loading the scanner (a fifth of a session-start hook, benchmarks.md).
    Every log call in memsync passes a literal format string (tests/test_index_limit_hooks.py)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        args = record.args if isinstance(record.args, tuple) else None
        if (
            args is not None
            and not record.exc_info
            and all(type(a) in (int, float) for a in args)
        ):
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
    old_umask = os.umask(0o077)
    try:
        handler = logging.handlers.RotatingFileHandler(
            target, maxBytes=1_000_000, backupCount=3, encoding="utf-8", delay=False
        )
    finally:
        os.umask(old_umask)
    handler.setFormatter(
        _MaskingFormatter(f"%(asctime)s %(levelname)s [{os.getpid()}] %(message)s")
    )
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger
