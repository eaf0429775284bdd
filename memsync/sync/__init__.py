"""Making a memory dir and its remote the same: scan, plan, execute, and the state kept durable."""
