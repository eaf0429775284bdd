"""Sessions on one machine as the hooks see them: which are live, which ended uncleanly (the
primer says only what is true), and a remote known to be unreachable carried from hook to hook.

Each session's hooks run as children of a stand-in for the Claude Code process (through `sh
-c`, as Claude Code runs them), which stays alive until the test ends or kills it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.devices import Device, make_device
from tests.test_hooks import folder_device, hook, log_text, primer, start_payload, write_payload

STAND_IN = """
import subprocess, sys, time
proc = subprocess.run(["sh", "-c", sys.argv[1]], input=sys.stdin.read(), capture_output=True,
                      text=True)
sys.stdout.write(proc.stdout)
sys.stdout.flush()
import os
os.close(1)
time.sleep(300)  # the session goes on until the test kills it
"""


class Session:
    """A running stand-in for one Claude Code session on `device`."""

    def __init__(self, device: Device, session_id: str) -> None:
        self.device, self.id = device, session_id
        command = f"'{sys.executable}' -m memsync hook session-start"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", STAND_IN, command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=device.env(),
            cwd=device.root,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(start_payload(device, session_id)))
        self.proc.stdin.close()
        self.out = self.proc.stdout.read()  # the stand-in closes stdout after the hook

    @property
    def primer(self) -> str:
        return primer(subprocess.CompletedProcess([], 0, self.out, ""))

    def end(self) -> None:
        payload = {**start_payload(self.device, self.id), "hook_event_name": "SessionEnd"}
        hook(self.device, "session-end", {**payload, "reason": "exit"})
        self.kill()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def sessions():
    started: list[Session] = []

    def start(device: Device, session_id: str) -> Session:
        started.append(Session(device, session_id))
        return started[-1]

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.kill()


def wait_for(condition, seconds: float = 30) -> bool:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.05)
    return condition()


def test_a_session_still_running_is_not_an_unclean_end(tmp_path, sessions):
    device = folder_device(tmp_path)
    first = sessions(device, "s-1")
    assert "did not end cleanly" not in first.primer
    second = sessions(device, "s-2")
    assert "did not end cleanly" not in second.primer  # s-1 still runs: no claim about it
    second.end()
    assert wait_for(lambda: "flush:" in log_text(device))
    # s-1 writes a memory file no hook sees (Bash), then is killed -9
    device.write("feedback_crash.md", "Keep going.\n", type="feedback")
    first.kill()
    third = sessions(device, "s-3")
    assert "a previous session" in third.primer and "did not end cleanly" in third.primer
    assert "1 memory file(s) it left unsynced were pushed now" in third.primer
    assert (tmp_path / "remote" / "e2e-project" / "feedback_crash.md").exists()
    # handled once: the next session does not repeat it
    assert "did not end cleanly" not in sessions(device, "s-4").primer


def test_a_killed_session_that_left_nothing_unsynced_is_reported_as_such(tmp_path, sessions):
    device = folder_device(tmp_path)
    sessions(device, "s-1").kill()
    context = sessions(device, "s-2").primer
    assert "did not end cleanly" in context
    assert "had already been synced" in context  # it wrote nothing: the primer says only that


class DeadRemote:
    """A loopback port that accepts connections and drops them at once (an outage as the
    client sees it), counting every attempt."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def stop(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() so the port really closes
        self.sock.close()


def test_offline_hooks_queue_without_waiting_and_a_probe_retries_later(tmp_path):
    from memsync.sync import offline

    dead = DeadRemote()
    account = "devstoreaccount1"
    conn = f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey=a2V5;"
    device = make_device(
        tmp_path,
        "d",
        f"http://127.0.0.1:{dead.port}/{account}/memsync",
        AZURE_STORAGE_CONNECTION_STRING=conn,
    )
    context = primer(hook(device, "session-start", start_payload(device)))
    assert "not refreshed from the remote" in context
    tried = dead.connections
    assert tried >= 1  # the first hook found the remote down (after its retries)
    state_dir = next((device.home / "state").iterdir())
    assert offline.read(state_dir) is not None
    # later hooks within the marker's TTL queue at once: not one connection
    path = device.write("feedback_offline.md", "Still works offline.\n", type="feedback")
    hook(device, "post-tool-use", write_payload(device, path))
    device.write("user_role.md", "Engineer.\n", type="user")
    hook(device, "stop", {"session_id": "s-1", "cwd": str(device.root), "hook_event_name": "Stop"})
    context = primer(hook(device, "session-start", start_payload(device, "s-2", "resume")))
    assert dead.connections == tried
    assert "not refreshed from the remote" in context  # the primer still warns
    assert "feedback_offline.md" in context and "user_role.md" in context  # queued, named
    assert "queued, the remote is unreachable" in log_text(device)
    # once the marker is old, one cheap probe: the port answers, so the hook syncs again
    marker = state_dir / "offline.json"
    marker.write_text(json.dumps({"at": time.time() - 3600, "reason": "old"}))
    hook(device, "stop", {"session_id": "s-2", "cwd": str(device.root), "hook_event_name": "Stop"})
    assert dead.connections > tried + 1  # the probe, then the sync's own attempts
    assert offline.read(state_dir)["reason"] != "old"  # still down: a fresh marker
    # the port closed: the probe alone says so, and the marker is renewed without a sync
    dead.stop()
    marker.write_text(json.dumps({"at": time.time() - 3600, "reason": "old"}))
    assert offline.probe(f"http://127.0.0.1:{dead.port}/x") is not None
    hook(device, "stop", {"session_id": "s-2", "cwd": str(device.root), "hook_event_name": "Stop"})
    renewed = offline.read(state_dir)
    assert renewed["reason"] == "old" and time.time() - renewed["at"] < 60
    assert os.stat(marker).st_size > 0


def test_a_lost_memory_dir_is_restored_at_the_start_after_a_crash(tmp_path, sessions):
    """Fresh-eyes s29d, finding 1: after a session that did not end cleanly, SessionStart
    syncs (to push what the crash left) instead of pulling, and a sync refuses a lost memory
    dir: the folder Claude had started anew stayed without the synced files. It now pulls
    when the folder is lost, restores them and says so."""
    import shutil

    device = folder_device(tmp_path)
    for n in range(8):
        device.write(f"user_fact{n}.md", f"Fact {n}.\n", type="user")
    device.run("push")
    sessions(device, "s-1").kill()
    shutil.rmtree(device.memory)
    device.memory.mkdir()
    (device.memory / "MEMORY.md").write_text("# Memory\n- [Dog](user_dog.md) — the dog\n")
    device.write("user_dog.md", "The user has a dog named Rex.\n", type="user")
    context = sessions(device, "s-2").primer
    assert "did not end cleanly" in context
    assert "restoring the 8 file(s)" in context, context
    assert "had already been synced" not in context and "were pushed now" not in context
    assert len(device.files()) == 10  # the 8 back, the index and Claude's new file kept
    assert len(list((tmp_path / "remote" / "e2e-project").glob("user_fact*.md"))) == 8
