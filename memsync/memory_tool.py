"""`from memsync.memory_tool import MemsyncMemoryTool`, the import README gave before the tree
had domains (issue 20), keeps working: the memory tool lives in memsync.claude.memory_tool."""

from memsync.claude.memory_tool import AsyncMemsyncMemoryTool, MemsyncMemoryTool, open_memory

__all__ = ["AsyncMemsyncMemoryTool", "MemsyncMemoryTool", "open_memory"]
