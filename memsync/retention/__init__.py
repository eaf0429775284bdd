"""What to keep and for how long: compaction's pure planner and its schedule."""
