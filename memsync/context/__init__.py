"""Where this run stands: the memory dir, the remote, the project's identity, the settings."""
