"""memsync: keep an AI agent's Claude Code memory safe and the same on every machine."""

__version__ = "0.1.0"
