"""Trials: scenarios a user can cause, run through the installed `memsync` CLI on two or
three devices (tests/devices.py), asserting what the user sees on each device and the remote."""
