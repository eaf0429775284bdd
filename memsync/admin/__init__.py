"""Looking after a remote and a device: the archive, status and doctor."""
