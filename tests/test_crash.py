"""kill -9 a `memsync sync` at seeded random moments, then check nothing was lost.

Scenario (per kill): device A holds ~30 memory files (four append-type files with `## `
sections and `- ` entries, the rest `user_*.md` facts), part of them synced, with local
appends, edits, new files and a deletion. Device B appended other entries to the same append
files, edited and deleted facts, and synced first. A's `memsync sync` is then killed with
SIGKILL after a random delay drawn from `random.Random(seed)`.

After the kill: every visible file in A's memory dir is a complete, valid memory file (no half
write) and A's own entries are all still on disk; the state files are valid JSON and every
record points at a kept base. Then A syncs (must exit 0), B syncs, A syncs: every entry either
device wrote is on both, exactly once, and both devices hold identical bytes.

The store calls are slowed by a few milliseconds (a `sitecustomize` on the subprocess's
PYTHONPATH, like network latency) so that the sync's own work is a large enough share of the
process's run time for random kill points to land inside it; every kill is classified as
before the work started, in the middle of it, or after the process had already finished, and
the test requires a share of them to land in the middle.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memsync.context.config import resolve
from memsync.memory.memtypes import check as check_memory
from memsync.stores import open_store
from memsync.sync.bases import Bases
from memsync.sync.engine import Engine
from tests.conftest import python_path
from tests.devices import REPO, Device, make_device

PROJECT = "e2e-project"
STORE_DELAY_MS = {"folder": 20, "azure": 5}
# seeds; MEMSYNC_CRASH_RUNS=N runs N kills per remote instead (the longer profile)
_RUNS = int(os.environ.get("MEMSYNC_CRASH_RUNS", "0"))
FOLDER_KILLS = range(1000, 1000 + (_RUNS or 15))
AZURE_KILLS = range(2000, 2000 + (_RUNS or 8))

# name -> (type, sections); new entries go at the end of the first section
APPEND_FILES: dict[str, tuple[str, tuple[str, ...]]] = {
    "voice_calibration.md": ("voice_calibration", ("Rules learned", "2026-11-20")),
    "carry_forward.md": ("carry_forward", ("Pending", "Consumed")),
    "running_commitments.md": ("commitments", ("Open", "Delivered")),
    "running_jokes_and_callbacks.md": ("callbacks", ("Active", "Retired")),
}
SYNCED_FACTS = [f"user_fact{i:02d}.md" for i in range(16)]  # synced before the kill run
UNSYNCED_FACTS = [f"user_new{i:02d}.md" for i in range(10)]  # created on A, never synced
A_EDITS = ["user_fact00.md", "user_fact03.md", "user_fact04.md", "user_fact05.md"]
B_EDITS = ["user_fact00.md", "user_fact01.md", "user_fact02.md"]  # fact00: both sides edit
A_DELETES = ["user_fact14.md"]
B_DELETES = ["user_fact15.md"]
B_NEW = ["user_from_b.md"]
ENTRIES_PER_FILE = 3

SLOW_SITE = '''
import itertools, os, threading, time
_delay = float(os.environ.get("MEMSYNC_TEST_STORE_DELAY_MS", "0")) / 1000.0
_marker = os.environ.get("MEMSYNC_TEST_MARKER")  # touched at the first remote call
_log = os.environ.get("MEMSYNC_TEST_CALL_LOG")  # one line per remote call
_freeze_at = int(os.environ.get("MEMSYNC_TEST_FREEZE_WRITE", "0"))  # the n-th write freezes...
_freeze_after = os.environ.get("MEMSYNC_TEST_FREEZE_PHASE") == "after"  # ...once answered
_WRITES = ("create", "replace", "delete")
if _delay or _marker or _log or _freeze_at:
    import memsync.stores as _stores

    _open = _stores.open_store
    _count = itertools.count(1)
    _mutex = threading.Lock()

    def _freeze():
        open(_marker + ".frozen", "w").close()  # the test kills the process now
        time.sleep(600)

    class _SlowStore:
        """Adds latency around every remote call: half before, half after the server acts."""

        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            attr = getattr(self._inner, name)
            if name not in ("list", "get") + _WRITES:
                return attr

            def call(*args, **kwargs):
                with _mutex:
                    if _marker and not os.path.exists(_marker):
                        open(_marker, "w").close()
                    if _log:
                        with open(_log, "a") as fh:
                            fh.write(name + "\\n")
                    nth = next(_count) if name in _WRITES else 0
                freeze = _freeze_at and nth == _freeze_at
                if freeze and not _freeze_after:
                    _freeze()
                time.sleep(_delay / 2)
                try:
                    return attr(*args, **kwargs)
                finally:
                    if freeze:
                        _freeze()
                    time.sleep(_delay / 2)

            return call

    def open_store(url, prefix):
        return _SlowStore(_open(url, prefix))

    _stores.open_store = open_store

_block = os.environ.get("MEMSYNC_TEST_BLOCK_RENAME_INTO")
if _block:
    _replace = os.replace

    def _blocking_replace(src, dst, *args, **kwargs):
        """Freeze between writing a temp file in the memory dir and renaming it over the file:
        the test kills the process there."""
        if os.path.dirname(os.path.abspath(dst)) == _block:
            open(_block + ".frozen", "w").close()
            time.sleep(600)
        return _replace(src, dst, *args, **kwargs)

    os.replace = _blocking_replace

    import memsync.sync.localswap as _localswap

    _flagged = _localswap._flagged_rename

    def _blocking_flagged(src, dst, flag):
        """The same freeze where a platform's exchanging rename puts a file in place."""
        if os.path.dirname(os.path.abspath(dst)) == _block:
            open(_block + ".frozen", "w").close()
            time.sleep(600)
        return _flagged(src, dst, flag)

    _localswap._flagged_rename = _blocking_flagged
'''

TALLY: dict[str, dict[str, int]] = {}


# --- building the scenario -------------------------------------------------------------------


def append_doc(name: str, mtype: str, sections: tuple[str, ...], entries: list[str]) -> str:
    first, *rest = sections
    body = f"\n## {first}\n" + "".join(f"- {e}\n" for e in entries)
    for title in rest:
        body += f"\n## {title}\n- Placeholder under {title.lower()} for {name}.\n"
    front = f"name: {name.removesuffix('.md')}\ndescription: {mtype} file\ntype: {mtype}"
    return f"---\n{front}\n---\n{body}"


def add_entry(path: Path, entry: str) -> None:
    """Append `- entry` at the end of the first `## ` section, as an agent would."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    headings = [i for i, line in enumerate(lines) if line.startswith("## ")]
    start = headings[0]
    end = headings[1] if len(headings) > 1 else len(lines)
    bullets = [i for i in range(start, end) if lines[i].startswith("- ")]
    at = (bullets[-1] if bullets else start) + 1
    lines.insert(at, f"- {entry}\n")
    path.write_text("".join(lines), encoding="utf-8")


def entry_text(device: str, name: str, n: int) -> str:
    return f"{device}-{name.removesuffix('.md')}-{n}: remembered on device {device}."


@dataclass
class Scenario:
    a: Device
    b: Device
    remote_url: str
    a_entries: list[str] = field(default_factory=list)
    b_entries: list[str] = field(default_factory=list)
    expected_files: set[str] = field(default_factory=set)


@contextlib.contextmanager
def as_device(device: Device):
    """This process's environment as `device`'s, for an in-process sync."""
    env = device.env()
    with pytest.MonkeyPatch.context() as mp:
        for key in ("MEMSYNC_HOME", "MEMSYNC_DEVICE", "MEMSYNC_PROJECT", "HOME"):
            mp.setenv(key, env[key])
        yield


def engine_sync(device: Device) -> None:
    """A sync through memsync's Engine in this process: the same code as the CLI without the
    interpreter start-up, for the set-up and for the syncs after the recovery one."""
    with as_device(device):
        engine = Engine(resolve(memory_dir=device.memory, remote=device.remote, project=PROJECT))
        try:
            result = engine.run("sync")
        finally:
            engine.store.close()
    assert not (result.errors or result.offline or result.refused), result


def site_env(root: Path) -> dict[str, str]:
    """Environment that loads SLOW_SITE into the memsync subprocesses (inactive by default)."""
    site = root / "slowsite"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SLOW_SITE)
    return {"PYTHONPATH": python_path(site, REPO), "MEMSYNC_TEST_STORE_DELAY_MS": "0"}


def local_work(
    device: Device, label: str, entries: list[str], edits: list[str], deletes: list[str]
) -> None:
    """Entries in every append file (recorded in `entries`), fact edits and deletions."""
    for name in APPEND_FILES:
        for n in range(ENTRIES_PER_FILE):
            entry = entry_text(label, name, n)
            add_entry(device.memory / name, entry)
            entries.append(entry)
    for name in edits:
        device.write(name, f"Fact {name} as edited on {label}.\n", type="user")
    for name in deletes:
        (device.memory / name).unlink()


def build(root: Path, remote_url: str, delay_ms: int) -> Scenario:
    env = site_env(root)
    a = make_device(root, "A", remote_url, **env)
    b = make_device(root, "B", remote_url, **env)
    sc = Scenario(a, b, remote_url)

    for name, (mtype, sections) in APPEND_FILES.items():
        base = [
            f"base-{name.removesuffix('.md')}-{i}: the shared starting entry." for i in range(2)
        ]
        (a.memory / name).write_text(append_doc(name, mtype, sections, base), encoding="utf-8")
        sc.a_entries += base
    for name in SYNCED_FACTS:
        a.write(name, f"Fact {name} as first written.\n", type="user")
    engine_sync(a)
    engine_sync(b)

    # B: its own entries in every append file, fact edits, a deletion, a new file; synced
    local_work(b, "B", sc.b_entries, B_EDITS, B_DELETES)
    for name in B_NEW:
        b.write(name, "A fact only B knew.\n", type="user")
    engine_sync(b)

    # A: local work not yet synced
    local_work(a, "A", sc.a_entries, A_EDITS, A_DELETES)
    for name in UNSYNCED_FACTS:
        a.write(name, f"Fact {name}, new on A.\n", type="user")

    sc.expected_files = (
        (set(APPEND_FILES) | set(SYNCED_FACTS) | set(UNSYNCED_FACTS) | set(B_NEW))
        - set(A_DELETES)
        - set(B_DELETES)
    )
    for device in (a, b):
        device.env_extra["MEMSYNC_TEST_STORE_DELAY_MS"] = str(delay_ms)
    a.env_extra["MEMSYNC_TEST_MARKER"] = str(root / "work-started")
    return sc


# --- observing a device ----------------------------------------------------------------------


def state_dir(device: Device) -> Path:
    dirs = list((device.home / "state").iterdir())
    assert len(dirs) == 1, dirs
    return dirs[0]


def snapshot(device: Device) -> dict[str, bytes]:
    """Every file under the memory dir and the state dir (except the lock), hidden ones too."""
    out = {}
    for top in (device.memory, state_dir(device)):
        for p in sorted(top.rglob("*")):
            if p.is_file() and p.name != "lock":
                out[str(p)] = p.read_bytes()
    return out


def remote_etags(url: str) -> dict[str, str]:
    store = open_store(url, PROJECT)
    try:
        return {k: e.etag for k, e in store.list().items()}
    finally:
        store.close()


def temp_files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file()
        and (p.name.endswith(".tmp") or ".memsync-" in p.name)
        and p.name != ".memsync-lock"
    )


def entries_of(text: str) -> list[str]:
    return [line[2:].rstrip("\n") for line in text.splitlines() if line.startswith("- ")]


def check_after_kill(sc: Scenario, before_local: dict[str, bytes]) -> dict[str, list[str]]:
    """The invariants right after SIGKILL. Returns the leftover temp files found, by place.

    A kill inside fsutil.atomic_write leaves its hidden temp file behind (SIGKILL runs no
    cleanup); sync never uploads hidden files, so they are counted here, and the recovery
    sync must remove them (checked in kill_once)."""
    a = sc.a
    visible = a.files()
    allowed = set(before_local) | sc.expected_files | set(B_DELETES)
    assert set(visible) <= allowed, f"unexpected files {set(visible) - allowed}"
    for name, data in visible.items():
        check_memory(name, data)  # raises RefusedFile on a partial/corrupt file
    for name in APPEND_FILES:
        text = (a.memory / name).read_text(encoding="utf-8")
        mine = [e for e in sc.a_entries if e.startswith(("A-", "base-")) and name[:-3] in e]
        missing = [e for e in mine if f"- {e}\n" not in text]
        assert not missing, f"{name} lost A's entries on disk after the kill: {missing}"
    for name in UNSYNCED_FACTS + [n for n in A_EDITS if n not in B_EDITS]:
        assert visible.get(name) == before_local[name], f"{name} changed by the killed sync"
    sdir = state_dir(a)
    records = {}
    for path in sdir.rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))  # valid JSON or the test fails
        if path.name == "records.json":
            records = data
    bases = Bases(sdir)
    for name, rec in records.items():
        assert bases.get(rec["sha"]) is not None, f"record for {name} has no base"
    bases.close()
    keys = remote_etags(sc.remote_url)
    assert not [k for k in keys if k.endswith(".tmp") or "/." in f"/{k}"], keys
    leftovers = {"memory": temp_files(a.memory), "state": temp_files(sdir), "remote": []}
    if sc.remote_url.startswith("file:"):
        leftovers["remote"] = temp_files(Path(sc.remote_url.removeprefix("file://")))
    return leftovers


def check_converged(sc: Scenario) -> None:
    a_files, b_files = sc.a.files(), sc.b.files()
    assert sorted(a_files) == sorted(sc.expected_files), (
        f"A holds {sorted(set(a_files) ^ sc.expected_files)} unexpectedly"
    )
    assert a_files == b_files, "devices must converge to identical bytes: " + ", ".join(
        n for n in sorted(set(a_files) | set(b_files)) if a_files.get(n) != b_files.get(n)
    )
    for name in APPEND_FILES:
        entries = entries_of(a_files[name].decode())
        for e in sc.a_entries + sc.b_entries:
            if name[:-3] in e:
                assert entries.count(e) == 1, f"{name}: entry {e!r} found {entries.count(e)} times"
    for name in A_EDITS:
        if name not in B_EDITS:
            assert b"edited on A" in a_files[name], f"A's edit of {name} was lost"
    for name in B_EDITS:
        if name not in A_EDITS:
            assert b"edited on B" in a_files[name], f"B's edit of {name} was lost"


# --- killing ---------------------------------------------------------------------------------


def start_sync(device: Device, **env: str) -> subprocess.Popen[bytes]:
    marker = Path(device.env_extra["MEMSYNC_TEST_MARKER"])
    marker.unlink(missing_ok=True)
    Path(f"{marker}.frozen").unlink(missing_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "memsync", "sync"],
        env={**device.env(), **env},
        cwd=device.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> bool:
    """Wait until `path` exists (a marker the site hook touches); False if the sync exited."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


@dataclass
class Window:
    startup: float  # from Popen to the first remote call
    work: float  # from the first remote call to the exit
    writes: int  # remote writes (create, replace, delete) in one uninterrupted sync


def calibrate(sc: Scenario) -> Window:
    """Measure one uninterrupted sync of a scenario that is then thrown away."""
    log = sc.a.root / "calls.log"
    marker = Path(sc.a.env_extra["MEMSYNC_TEST_MARKER"])
    t0 = time.monotonic()
    proc = start_sync(sc.a, MEMSYNC_TEST_CALL_LOG=str(log))
    assert wait_for(marker, proc)
    t1 = time.monotonic()
    assert proc.wait(60) == 0
    writes = sum(call in ("create", "replace", "delete") for call in log.read_text().split())
    return Window(t1 - t0, time.monotonic() - t1, writes)


def kill_once(
    sc: Scenario, seed: int, window: Window, delay_ms: int, tally: dict[str, int]
) -> None:
    """One seeded kill, at one of three kinds of moment:

    - "start": a random delay after Popen, up to the measured end of a whole sync;
    - "timed": a random delay after the sync's first remote call, up to its measured end;
    - "write": the n-th remote write (n random) is held just before it reaches the server or
      just after the server answered, and the kill follows 0-2 store latencies later, while
      the other worker threads go on; this lands in the middle however loaded the machine is.
    """
    t_start = time.monotonic()
    rng = random.Random(seed)
    mode = rng.choices(["start", "timed", "write"], weights=[1, 2, 2])[0]
    marker = Path(sc.a.env_extra["MEMSYNC_TEST_MARKER"])
    env: dict[str, str] = {}
    if mode == "start":
        delay = rng.uniform(0, window.startup + window.work)
        label = f"start +{delay * 1000:.0f} ms"
    elif mode == "timed":
        delay = rng.uniform(0, window.work)
        label = f"first call +{delay * 1000:.0f} ms"
    else:
        nth, phase = rng.randint(1, max(1, window.writes)), rng.choice(["before", "after"])
        env = {"MEMSYNC_TEST_FREEZE_WRITE": str(nth), "MEMSYNC_TEST_FREEZE_PHASE": phase}
        delay = rng.uniform(0, 2 * delay_ms / 1000)
        label = f"write {nth} {phase} server +{delay * 1000:.0f} ms"
    before_local = sc.a.files()
    before_a = snapshot(sc.a)
    before_remote = remote_etags(sc.remote_url)

    proc = start_sync(sc.a, **env)
    if mode == "timed":
        wait_for(marker, proc)
    elif mode == "write":
        wait_for(Path(f"{marker}.frozen"), proc)
    time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    if finished:
        where = "after"
    elif snapshot(sc.a) == before_a and remote_etags(sc.remote_url) == before_remote:
        where = "before"  # killed before it had changed anything, locally or remotely
    else:
        where = "mid"
    tally[where] += 1
    tally["kills"] += not finished

    leftovers = check_after_kill(sc, before_local)
    for place, names in leftovers.items():
        tally[f"temp_{place}"] += len(names)

    t_killed = time.monotonic()
    sc.a.run("sync")  # the real CLI must recover on its own
    t_recovered = time.monotonic()
    after = {"memory": temp_files(sc.a.memory), "state": temp_files(state_dir(sc.a))}
    if sc.remote_url.startswith("file:"):
        after["remote"] = temp_files(Path(sc.remote_url.removeprefix("file://")))
    assert not any(after.values()), f"the recovery sync left temp files behind: {after}"
    engine_sync(sc.b)
    engine_sync(sc.a)
    check_converged(sc)
    tally["survived"] += not finished
    left = {k: v for k, v in leftovers.items() if v}
    print(
        f"  seed {seed}: {label}: landed {where}; leftover temp files {left or 'none'} "
        f"[kill {t_killed - t_start:.1f} s, recovery {t_recovered - t_killed:.1f} s, "
        f"rest {time.monotonic() - t_recovered:.1f} s]"
    )


def report(label: str, tally: dict[str, int]) -> None:
    TALLY[label] = tally
    print(
        f"\nKILLS remote={label} survived={tally['survived']} kills={tally['kills']} "
        f"mid={tally['mid']} before={tally['before']} after={tally['after']} "
        f"temp_left_memory={tally['temp_memory']} temp_left_state={tally['temp_state']} "
        f"temp_left_remote={tally['temp_remote']}"
    )


def new_tally() -> dict[str, int]:
    keys = ("kills", "survived", "mid", "before", "after", "temp_memory", "temp_state")
    return dict.fromkeys((*keys, "temp_remote"), 0)


def assert_enough_mid(tally: dict[str, int], runs: int) -> None:
    assert tally["mid"] >= max(2, runs // 5), (
        f"only {tally['mid']} of {runs} kills landed in the middle of a sync: {tally}"
    )


# --- the tests -------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_during_sync_on_the_folder_remote(tmp_path):
    run = tmp_path / "run"
    template = tmp_path / "template"
    remote_url = (run / "remote").as_uri()
    (run / "remote").mkdir(parents=True)
    sc = build(run, remote_url, STORE_DELAY_MS["folder"])
    shutil.copytree(run, template, symlinks=True)
    window = calibrate(sc)
    print(f"\nfolder: {window}")
    tally = new_tally()
    for seed in FOLDER_KILLS:
        shutil.rmtree(run)
        shutil.copytree(template, run, symlinks=True)  # the same paths, so the same state dirs
        kill_once(sc, seed, window, STORE_DELAY_MS["folder"], tally)
    report("folder", tally)
    assert_enough_mid(tally, len(FOLDER_KILLS))


@pytest.mark.slow
@pytest.mark.azure
def test_kill_9_during_sync_on_azurite(tmp_path, azurite, azure_url):
    delay = STORE_DELAY_MS["azure"]
    window = calibrate(build(tmp_path / "calibration", azure_url, delay))
    print(f"\nazure: {window}")
    tally = new_tally()
    for seed in AZURE_KILLS:
        t0 = time.monotonic()
        sc = build(tmp_path / f"seed{seed}", azurite.url(), delay)
        print(f"  seed {seed}: set-up {time.monotonic() - t0:.1f} s")
        kill_once(sc, seed, window, delay, tally)
    report("azure", tally)
    assert_enough_mid(tally, len(AZURE_KILLS))


def test_a_temp_file_left_by_a_kill_is_cleaned_up_by_the_next_sync(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    env = site_env(tmp_path)
    a = make_device(tmp_path, "A", remote.as_uri(), **env)
    b = make_device(tmp_path, "B", remote.as_uri(), **env)
    name = "voice_calibration.md"
    (a.memory / name).write_text(append_doc(name, *APPEND_FILES[name], ["base entry."]))
    a.run("sync")
    b.run("sync")
    add_entry(b.memory / name, "an entry from B.")
    b.run("sync")

    # A downloads B's version and is killed after writing the temp file, before the rename
    a.env_extra["MEMSYNC_TEST_BLOCK_RENAME_INTO"] = str(a.memory.resolve())
    frozen = Path(f"{a.memory.resolve()}.frozen")
    proc = subprocess.Popen([sys.executable, "-m", "memsync", "sync"], env=a.env(), cwd=a.root)
    deadline = time.monotonic() + 60
    while not frozen.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert frozen.exists(), "the sync never reached the rename into the memory dir"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    del a.env_extra["MEMSYNC_TEST_BLOCK_RENAME_INTO"]
    assert temp_files(a.memory), "the kill should have left the temp file"

    a.run("sync")
    assert "- an entry from B.\n" in (a.memory / name).read_text()
    assert a.files() == b.files()
    assert temp_files(a.memory) == [], "the temp file of the killed write is still there"
