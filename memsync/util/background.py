"""Requests a command starts and nothing waits for (removing the objects of a service check):
they run beside the command's own, and are finished before the process ends, also where it
ends with `os._exit` (hooks end so, without the interpreter's teardown)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

_running: list[threading.Thread] = []


def start(work: Callable[[], object]) -> None:
    thread = threading.Thread(target=work)  # not a daemon: a normal exit waits for it too
    thread.start()
    _running.append(thread)


def finish() -> None:
    """Wait for the work started (each request has its deadline)."""
    while _running:
        _running.pop().join()


def exit_now(code: int) -> NoReturn:
    """End the process at once, the work started finished and the output flushed."""
    finish()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
