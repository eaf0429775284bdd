"""Stands in for the `fcntl` module when the suite runs as on Windows (MEMSYNC_TEST_NO_FCNTL=1):
this folder goes first on the PYTHONPATH of every memsync subprocess the tests start, so
`import fcntl` fails there as it does on Windows (conftest.py hides it in the test process)."""

raise ImportError("fcntl is hidden by MEMSYNC_TEST_NO_FCNTL (the suite runs as on Windows)")
