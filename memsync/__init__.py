"""memsync: keep an AI agent's Claude Code memory safe and the same on every machine."""
