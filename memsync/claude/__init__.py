"""Claude Code and the Claude API: hooks, primer, install, watch, transcripts, digests, the log."""
