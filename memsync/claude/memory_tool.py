"""A synced backend for the Claude API's memory tool, for the `anthropic` SDK's tool runner.

    from anthropic import Anthropic
    from memsync.claude.memory_tool import MemsyncMemoryTool

    memory = MemsyncMemoryTool(project="support-bot", remote="file:///srv/memory")
    runner = Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-5-5", max_tokens=2048, tools=[memory],
        messages=[{"role": "user", "content": "Remember that I take my coffee black."}])
    for message in runner: ...

`/memories` is one project's memsync memory: the memory dir and remote are resolved like every
memsync command (arguments > MEMSYNC_* environment > settings file > Claude Code's memory dir of
the current directory), so an agent can share its memory with Claude Code sessions on other
machines. The rules live in `memsync.claude.tool_backend` and the modules it uses; this module
only adapts them to the SDK's `BetaAbstractMemoryTool` (and its async twin), whose handlers
return the text the model reads and raise `ToolError` for what comes back with `is_error: true`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError

from memsync.claude.tool_backend import MemoryToolError, ToolMemory
from memsync.context import config
from memsync.util.errors import MemsyncError

if TYPE_CHECKING:
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )

__all__ = ["AsyncMemsyncMemoryTool", "MemsyncMemoryTool", "open_memory"]

# what each field of a memory tool command holds; view_range alone may be left out
_KINDS: dict[str, type | tuple[type, ...]] = {"insert_line": int, "view_range": (list, tuple)}
_KIND_NAMES = {"insert_line": "a number", "view_range": "a list"}
_OPTIONAL = {"view_range"}


def open_memory(
    *,
    memory_dir: str | os.PathLike[str] | None = None,
    remote: str | None = None,
    project: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    context: config.Context | None = None,
    pull_timeout: float | None = None,
    refresh_after: float | None = None,
    index: bool = True,
) -> ToolMemory:
    """The memory behind both tool classes (options: see ToolMemory). A bad setting raises
    memsync's ConfigError here, when the application starts, not in a conversation."""
    ctx = context or config.resolve(memory_dir, remote, project, cwd=Path(cwd) if cwd else None)
    return ToolMemory(ctx, pull_timeout=pull_timeout, refresh_after=refresh_after, index=index)


def _run(method: Callable[..., str], command: Any, *fields: str) -> str:
    """Run `method` on the command's `fields`; what the model must act on becomes a ToolError
    (`is_error: true`), a malformed input included (the SDK builds commands unchecked)."""
    args = [getattr(command, field, None) for field in fields]
    missing = [f for f, a in zip(fields, args, strict=True) if a is None and f not in _OPTIONAL]
    if missing:
        name = getattr(command, "command", "memory")
        raise ToolError(f"The {name} command needs {', '.join(missing)}.")
    wrong = [
        f"{f} must be {_KIND_NAMES.get(f, 'text')}, not {type(a).__name__}"
        for f, a in zip(fields, args, strict=True)
        if a is not None and (isinstance(a, bool) or not isinstance(a, _KINDS.get(f, str)))
    ]
    if wrong:
        raise ToolError(f"The command's input is malformed: {'; '.join(wrong)}.")
    try:
        return method(*args)
    except MemoryToolError as exc:
        raise ToolError(str(exc)) from None
    except MemsyncError as exc:
        raise ToolError(f"memsync could not do that: {exc}") from None
    except OSError as exc:
        raise ToolError(f"the memory dir could not be written ({exc.strerror or exc})") from None


class MemsyncMemoryTool(BetaAbstractMemoryTool):
    """The memory tool (`memory_20250818`) over memsync: pass it in `tools=[...]` of
    `client.beta.messages.tool_runner(...)`. Keyword arguments as `open_memory`; `backend` is
    the ToolMemory behind it (`backend.pull()` refreshes from the remote mid-session)."""

    def __init__(
        self,
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        **options: Any,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.backend = open_memory(**options)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return _run(self.backend.view, command, "path", "view_range")

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return _run(self.backend.create, command, "path", "file_text")

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return _run(self.backend.str_replace, command, "path", "old_str", "new_str")

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return _run(self.backend.insert, command, "path", "insert_line", "insert_text")

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return _run(self.backend.delete, command, "path")

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return _run(self.backend.rename, command, "old_path", "new_path")


class AsyncMemsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """The async twin, for `AsyncAnthropic().beta.messages.tool_runner(...)`: each command runs
    on a worker thread (file and network I/O block), one at a time."""

    def __init__(
        self,
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
        **options: Any,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.backend = open_memory(**options)

    async def _call(self, method: Callable[..., str], command: Any, *fields: str) -> str:
        from anyio.to_thread import run_sync  # the SDK's own dependency

        return await run_sync(functools.partial(_run, method, command, *fields))

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._call(self.backend.view, command, "path", "view_range")

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._call(self.backend.create, command, "path", "file_text")

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._call(self.backend.str_replace, command, "path", "old_str", "new_str")

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._call(self.backend.insert, command, "path", "insert_line", "insert_text")

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._call(self.backend.delete, command, "path")

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._call(self.backend.rename, command, "old_path", "new_path")
