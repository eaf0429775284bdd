"""Warm hooks (memsync/claude/warm.py): a hook answered by the warm process says and does what
the same hook says and does in a process of its own, in the caller's environment and folder;
the warm process leaves when idle, when its socket goes, on uninstall and for other code; a
dead, hung or refused warm process never fails a hook. Each call runs the real client in a
fresh interpreter; it reports on stderr whether it answered warm (the hooks module never
imported in the client) or the ordinary way."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import NO_FCNTL
from tests.devices import Device, make_device, wait_until

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="reads /proc to find the warm process"
    ),
    pytest.mark.skipif(NO_FCNTL, reason="the warm process, not the lock: the first pass covers it"),
]

CLIENT = """
import sys
from memsync.claude.warm import run_hook
code = run_hook(sys.argv[1:])
sys.stdout.flush()
print("warm" if "memsync.claude.hooks" not in sys.modules else "ordinary", file=sys.stderr)
sys.exit(code)
"""


PENDING = "## Pending\n- Ask about the marathon.\n"


def warm_device(tmp_path: Path, name: str = "d", **env: str) -> Device:
    """A device with memsync's hooks installed (a warm process starts only for installed
    hooks; `install` starts the first)."""
    (tmp_path / "remote").mkdir(exist_ok=True)
    extra = {"MEMSYNC_WARM_HOOKS": "1", "MEMSYNC_WARM_IDLE": "30", **env}
    device = make_device(tmp_path, name, (tmp_path / "remote").as_uri(), **extra)
    device.run("install")
    return device


def call(device: Device, event: str, payload: dict, **env: str) -> tuple[str, str]:
    """(what the hook printed, "warm" or "ordinary")."""
    proc = subprocess.run(
        [sys.executable, "-c", CLIENT, event],
        env={**device.env(), **env},
        cwd=device.root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr.strip().splitlines()[-1]


def warm_pids(device: Device) -> list[int]:
    """The warm processes serving `device`'s MEMSYNC_HOME."""
    folder = str(device.home / "run")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"memsync.claude.warm" in words and folder.encode() in words and state != "Z":
            found.append(int(entry.name))
    return found


def answers(sock: Path) -> bool:
    """Whether a warm process takes a call on `sock` (it answers `+` at once)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    try:
        probe.settimeout(1)
        os.chdir(sock.parent)  # a test's folder may be longer than a socket's path may be
        probe.connect(sock.name)
        return probe.recv(1) == b"+"
    except OSError:
        return False
    finally:
        os.chdir(here)
        probe.close()


def warmed(device: Device) -> int:
    """Wait for `device`'s warm process to take calls; its pid."""
    sock = device.home / "run" / "hooks.sock"
    assert wait_until(lambda: len(warm_pids(device)) == 1 and answers(sock)), warm_pids(device)
    return warm_pids(device)[0]


@pytest.fixture(autouse=True)
def _no_warm_process_left(tmp_path):
    yield
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"memsync.claude.warm" in words and any(str(tmp_path).encode() in w for w in words):
            os.kill(int(entry.name), signal.SIGKILL)


def start_payload(device: Device) -> dict:
    return {"session_id": "s-1", "cwd": str(device.root), "hook_event_name": "SessionStart",
            "source": "startup"}  # fmt: skip


def write_payload(device: Device, path: Path) -> dict:
    return {"session_id": "s-1", "cwd": str(device.root), "hook_event_name": "PostToolUse",
            "tool_name": "Write", "tool_input": {"file_path": str(path)}}  # fmt: skip


def test_a_warm_answer_is_the_ordinary_answer(tmp_path):
    device = warm_device(tmp_path)
    device.write("carry_forward.md", PENDING, type="carry_forward")
    device.run("push")
    alone, how = call(device, "session-start", start_payload(device), MEMSYNC_WARM_HOOKS="off")
    assert how == "ordinary"
    warmed(device)
    again, how = call(device, "session-start", start_payload(device))
    assert how == "warm"
    assert again == alone
    assert "Ask about the marathon." in json.loads(again)["hookSpecificOutput"]["additionalContext"]


def test_a_warm_write_hook_tells_a_refused_secret_at_once_and_pushes_a_clean_write(tmp_path):
    device = warm_device(tmp_path, MEMSYNC_HOOK_PUSH_WAIT="off")
    device.run("push")
    call(device, "session-start", start_payload(device))
    warmed(device)
    secret = device.write("feedback_x.md", "password: hunter2-Secret9\n", type="feedback")
    said, how = call(device, "post-tool-use", write_payload(device, secret))
    assert how == "warm"
    context = json.loads(said)["hookSpecificOutput"]["additionalContext"]
    assert "feedback_x.md was NOT synced" in context and "hunter2" not in context
    clean = device.write("feedback_y.md", "Likes short answers.\n", type="feedback")
    said, how = call(device, "post-tool-use", write_payload(device, clean))
    assert (said, how) == ("", "warm")
    remote = tmp_path / "remote" / "e2e-project"
    assert wait_until(lambda: (remote / "feedback_y.md").exists())  # pushed after the answer
    assert not (remote / "feedback_x.md").exists()


def test_each_warm_call_runs_in_its_callers_environment_and_folder(tmp_path):
    device = warm_device(tmp_path)
    device.run("push")
    call(device, "session-start", start_payload(device))
    warmed(device)
    other_dir, other_remote = tmp_path / "other_memory", tmp_path / "other_remote"
    other_dir.mkdir()
    other_remote.mkdir()
    other = {"MEMSYNC_MEMORY_DIR": str(other_dir), "MEMSYNC_REMOTE": other_remote.as_uri(),
             "MEMSYNC_PROJECT": "other-project", "MEMSYNC_HOOK_PUSH_WAIT": "on"}  # fmt: skip
    path = other_dir / "user_role.md"
    path.write_text("---\nname: role\ndescription: d\nmetadata:\n  type: user\n---\n\nA.\n")
    said, how = call(device, "post-tool-use", write_payload(device, path), **other)
    assert how == "warm"
    assert (other_remote / "other-project" / "user_role.md").exists()
    assert not (tmp_path / "remote" / "other-project").exists()
    assert not (tmp_path / "remote" / "e2e-project" / "user_role.md").exists()


def copy_of_memsync(tmp_path: Path) -> Path:
    """A copy of this checkout's memsync package, to edit in place."""
    import shutil

    site, repo = tmp_path / "site", Path(__file__).resolve().parent.parent
    for part in ("memsync", "skills", "templates", "hooks"):  # what install reads beside it
        if (repo / part).is_dir():
            shutil.copytree(repo / part, site / part, ignore=shutil.ignore_patterns("__pycache__"))
    return site


@pytest.mark.parametrize("change", ["PYTHONPATH", "TZ", "LD_LIBRARY_PATH", "an edit"])
def test_other_code_is_answered_the_ordinary_way_and_replaces_the_warm_process(tmp_path, change):
    """Another PYTHONPATH, a variable a process reads once at start-up (the time zone), or a
    file of memsync edited in place since the warm process started."""
    site = copy_of_memsync(tmp_path)
    shim = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if "nofcntl" in p]
    device = warm_device(tmp_path, PYTHONPATH=os.pathsep.join([*shim, str(site)]))
    device.run("push")
    call(device, "session-start", start_payload(device))
    old = warmed(device)
    newer: dict[str, str] = {}
    if change == "PYTHONPATH":
        (tmp_path / "more").mkdir()
        newer["PYTHONPATH"] = os.pathsep.join([device.env()["PYTHONPATH"], str(tmp_path / "more")])
    elif change in ("TZ", "LD_LIBRARY_PATH"):
        newer[change] = "Pacific/Pago_Pago" if change == "TZ" else str(tmp_path)
    else:
        digests = site / "memsync" / "memory" / "digests.py"
        with digests.open("a") as out:  # in place, as an editor may save
            out.write("\n# edited\n")
        assert wait_until(lambda: old not in warm_pids(device))  # within a second
    _, how = call(device, "session-start", start_payload(device), **newer)
    assert how == "ordinary"
    assert wait_until(lambda: old not in warm_pids(device))  # the old one left
    assert wait_until(lambda: len(warm_pids(device)) == 1)  # and the new code's took over
    warmed(device)
    _, how = call(device, "session-start", start_payload(device), **newer)
    assert how == "warm"


def test_the_warm_process_leaves_when_idle_when_its_socket_goes_and_on_uninstall(tmp_path):
    device = warm_device(tmp_path, MEMSYNC_WARM_IDLE="1")
    device.run("push")
    call(device, "session-start", start_payload(device))
    pid = warmed(device)
    assert wait_until(lambda: pid not in warm_pids(device))  # a second without a hook
    assert not (device.home / "run" / "hooks.sock").exists()

    device.env_extra["MEMSYNC_WARM_IDLE"] = "30"
    call(device, "session-start", start_payload(device))
    pid = warmed(device)
    (device.home / "run" / "hooks.sock").unlink()
    assert wait_until(lambda: pid not in warm_pids(device))

    device.run("install")  # starts one, so a new session's first hook is warm
    pid = warmed(device)
    assert "a warm process answers hooks" in device.run("doctor", check=None).stdout
    _, how = call(device, "session-start", start_payload(device))
    assert how == "warm"
    device.run("uninstall")
    assert wait_until(lambda: pid not in warm_pids(device))
    # a session still running after the uninstall runs its hooks: they start none
    said, how = call(device, "session-start", start_payload(device))
    assert how == "ordinary" and said
    time.sleep(1)
    assert warm_pids(device) == []


def test_a_dead_or_hung_warm_process_never_fails_a_hook(tmp_path):
    device = warm_device(tmp_path)
    device.write("carry_forward.md", PENDING, type="carry_forward")
    device.run("push")
    call(device, "session-start", start_payload(device))
    pid = warmed(device)
    os.kill(pid, signal.SIGSTOP)  # hung: takes no call
    try:
        started = time.monotonic()
        said, how = call(device, "session-start", start_payload(device))
        assert how == "ordinary" and "Ask about the marathon." in said
        assert time.monotonic() - started < 15
    finally:
        os.kill(pid, signal.SIGKILL)  # dead: its socket stays behind
    assert wait_until(lambda: pid not in warm_pids(device))
    said, _ = call(device, "session-start", start_payload(device))
    assert "Ask about the marathon." in said
    warmed(device)  # a new one took the place of the dead one's socket
    _, how = call(device, "session-start", start_payload(device))
    assert how == "warm"


def test_the_warm_hooks_setting_off_starts_none_and_sends_a_running_one_away(tmp_path):
    device = warm_device(tmp_path)
    device.run("push")
    call(device, "session-start", start_payload(device))
    pid = warmed(device)
    assert "a warm process answers hooks" in device.run("doctor", check=None).stdout
    (device.home / "settings.json").write_text('{"warm_hooks": false}')
    _, how = call(device, "session-start", start_payload(device))
    assert how == "ordinary"  # the warm process reads the setting first, and leaves
    assert wait_until(lambda: pid not in warm_pids(device))
    for _ in range(2):
        _, how = call(device, "session-start", start_payload(device))
        assert how == "ordinary"
    time.sleep(1)
    assert warm_pids(device) == []
    assert "the warm_hooks setting" in device.run("doctor", check=None).stdout


def test_a_relative_memsync_home_logs_where_it_says(tmp_path):
    device = warm_device(tmp_path)
    device.run("push")
    relative = os.path.relpath(device.home, device.root)
    call(device, "session-start", start_payload(device), MEMSYNC_HOME=relative)
    warmed(device)
    _, how = call(device, "session-start", start_payload(device), MEMSYNC_HOME=relative)
    assert how == "warm"
    assert "answers hooks" in (device.home / "logs" / "memsync.log").read_text()
    assert not (device.home / "run" / relative).exists()


def test_a_hook_from_another_container_or_sandbox_is_other_code():
    """The stamp a hook sends holds its root folder and namespaces: a container sharing
    MEMSYNC_HOME sees other files and process ids than the warm process."""
    from memsync.claude.warm import code_stamp

    stamp = code_stamp().decode()
    root = os.stat("/")
    assert f"root={root.st_dev}:{root.st_ino}" in stamp
    for kind in ("mnt", "pid", "user"):
        assert os.readlink(f"/proc/self/ns/{kind}") in stamp


def test_uninstall_right_after_install_leaves_no_warm_process(tmp_path):
    """`install` starts a warm process that takes a moment to load: an `uninstall` at once
    (here: `stop` right after `start`, in one process) waits for it and sends it away."""
    device = warm_device(tmp_path)  # installs, which starts one
    warmed(device)
    snippet = "from memsync.claude.warm import start, stop\nstop()\nstart()\nstop()\n"
    proc = subprocess.run(
        [sys.executable, "-c", snippet], env=device.env(), cwd=device.root, timeout=60
    )
    assert proc.returncode == 0
    time.sleep(1.5)
    assert warm_pids(device) == []


def _stand_in(tmp_path, serve: str) -> tuple[Device, subprocess.Popen, str]:
    """A device whose warm process was sent away and a stand-in listening on its socket in
    its place: Python code `serve`, run with the listening socket `s` and the socket's path
    `sock`. Returns the device, the stand-in and the Python code that stops it (`stop()`)."""
    device = warm_device(tmp_path)
    warmed(device)
    stopping = "from memsync.claude.warm import stop\nstop()\n"
    subprocess.run(
        [sys.executable, "-c", stopping], env=device.env(), cwd=device.root, check=True, timeout=60
    )
    assert wait_until(lambda: warm_pids(device) == [])
    sock = device.home / "run" / "hooks.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.listen(4)
    head = f"import os, socket, time\ns = socket.socket(fileno={listener.fileno()})\n"
    stand_in = subprocess.Popen(
        [sys.executable, "-c", head + f"sock = {str(sock)!r}\n" + serve],
        pass_fds=[listener.fileno()],
    )
    listener.close()
    return device, stand_in, stopping


def test_uninstall_while_an_earlier_process_is_still_leaving_sends_the_new_one_away(tmp_path):
    """The process that answers `stop` may be an earlier one on its way out (told to leave a
    moment before) while `install`'s new one still loads: `stop` asks again until the
    start is over, so the new one is sent away too. The earlier one is a stand-in here that
    takes two calls (stop's dial and its request) and then is gone."""
    device, stand_in, _ = _stand_in(  # answers twice, then leaves as a told process does
        tmp_path,
        "for _ in range(2):\n    c, _ = s.accept(); c.sendall(b'+'); c.close()\nos.unlink(sock)\n",
    )
    snippet = "from memsync.claude.warm import start, stop\nstart()\nstop()\n"
    proc = subprocess.run(
        [sys.executable, "-c", snippet], env=device.env(), cwd=device.root, timeout=60
    )
    assert proc.returncode == 0
    assert stand_in.wait(timeout=10) == 0
    time.sleep(1.5)
    assert warm_pids(device) == []


def test_uninstall_asks_again_while_the_warm_process_is_busy_with_a_hook(tmp_path):
    """A warm process serving a hook takes no call within ACK_WAIT: `stop` asks again while
    something listens on the socket, so the process is told to leave once it is free. The
    process is a stand-in here, busy for a second and a half, gone once told."""
    device, stand_in, stopping = _stand_in(  # busy, then answers until a call brings a request
        tmp_path,
        "time.sleep(1.5)\n"
        "while True:\n"
        "    c, _ = s.accept()\n"
        "    try:\n"
        "        c.sendall(b'+'); told = c.recv(64)\n"
        "    except OSError:  # a call given up on while it was busy\n"
        "        told = b''\n"
        "    if told:\n"
        "        os.unlink(sock); break\n"
        "    c.close()\n",
    )
    proc = subprocess.run(
        [sys.executable, "-c", stopping], env=device.env(), cwd=device.root, timeout=60
    )
    assert proc.returncode == 0
    assert stand_in.wait(timeout=10) == 0  # it was told to leave
