"""Load: 8 devices × 50 writes each into four shared append-type files through Azurite.

Each device is its own process (a small driver using memsync's Engine directly): it appends
one entry to one of the shared files, then syncs, fifty times, while the seven others do the
same. Afterwards every device syncs (two rounds) and the test checks that every one of the 400
entries is on the remote exactly once, in the file it was written to, and that every device
holds the remote's bytes. It prints `LOAD devices=8 writes=400 seconds=...`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsync.context.config import resolve
from memsync.stores import open_store
from memsync.sync.engine import Engine
from tests.conftest import python_path
from tests.devices import REPO

DEVICES = 8
WRITES = 50
PROJECT = "load"
FILES = {
    "voice_calibration.md": ("voice_calibration", ("Rules learned", "2026-11-20")),
    "carry_forward.md": ("carry_forward", ("Pending", "Consumed")),
    "running_commitments.md": ("commitments", ("Open", "Delivered")),
    "running_jokes_and_callbacks.md": ("callbacks", ("Active", "Retired")),
}

DRIVER = r"""
import json, os, sys, time
from pathlib import Path

memory, remote, go = sys.argv[1], sys.argv[2], sys.argv[5]
device, writes = int(sys.argv[3]), int(sys.argv[4])
files = json.loads(sys.argv[6])

from memsync.context import config
from memsync.sync.engine import Engine

ctx = config.resolve(memory_dir=memory, remote=remote, project="load")
engine = Engine(ctx)  # one engine (and one HTTP connection pool) for all fifty syncs


def add_entry(path, entry):
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    headings = [i for i, line in enumerate(lines) if line.startswith("## ")]
    start = headings[0]
    end = headings[1] if len(headings) > 1 else len(lines)
    bullets = [i for i in range(start, end) if lines[i].startswith("- ")]
    lines.insert((bullets[-1] if bullets else start) + 1, f"- {entry}\n")
    path.write_text("".join(lines), encoding="utf-8")


stats = {"device": device, "syncs": 0, "merged": 0, "errors": 0, "offline": 0, "conflicts": 0}
first = engine.run("sync")
assert not first.errors and not first.offline, first
Path(f"{go}.ready{device}").touch()
while not os.path.exists(go):
    time.sleep(0.005)
t0 = time.monotonic()
for n in range(writes):
    name = files[(device + n) % len(files)]
    add_entry(Path(memory) / name, f"L{device}-{n}: load entry {n} from device {device}.")
    result = engine.run("sync")
    stats["syncs"] += 1
    stats["merged"] += len(result.merged)
    stats["errors"] += len(result.errors)  # e.g. gave up after 8 merge attempts: next sync retries
    stats["offline"] += bool(result.offline)
    stats["conflicts"] += len(result.conflicts)
stats["seconds"] = time.monotonic() - t0
print(json.dumps(stats))
"""


def doc(name: str) -> str:
    mtype, (first, *rest) = FILES[name]
    body = f"\n## {first}\n- The shared starting entry of {name}.\n"
    for title in rest:
        body += f"\n## {title}\n- Placeholder under {title.lower()}.\n"
    return f"---\nname: {name[:-3]}\ndescription: {mtype} file\ntype: {mtype}\n---\n{body}"


def engine_for(root: Path, device: str, remote: str, mp: pytest.MonkeyPatch) -> Engine:
    mp.setenv("MEMSYNC_HOME", str(root / device / "home"))
    mp.setenv("MEMSYNC_DEVICE", device)
    return Engine(resolve(memory_dir=root / device / "memory", remote=remote, project=PROJECT))


def sync(root: Path, device: str, remote: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        engine = engine_for(root, device, remote, mp)
        result = engine.run("sync")
        engine.store.close()
    assert not (result.errors or result.offline or result.refused), result


def entries(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith("- L")]


@pytest.mark.azure
@pytest.mark.slow
def test_8_devices_x_50_writes_into_4_shared_files_on_azurite(tmp_path, azure_url):
    names = sorted(FILES)
    for d in range(DEVICES):
        (tmp_path / f"dev{d}" / "memory").mkdir(parents=True)
    for name in names:
        (tmp_path / "dev0" / "memory" / name).write_text(doc(name), encoding="utf-8")
    sync(tmp_path, "dev0", azure_url)

    go = tmp_path / "go"
    procs = []
    for d in range(DEVICES):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
        env.update(
            MEMSYNC_HOME=str(tmp_path / f"dev{d}" / "home"),
            MEMSYNC_DEVICE=f"dev{d}",
            PYTHONPATH=python_path(REPO),
        )
        args = [str(tmp_path / f"dev{d}" / "memory"), azure_url, str(d), str(WRITES), str(go)]
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", DRIVER, *args, json.dumps(names)],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"go.ready{d}").exists() for d in range(DEVICES)):
        dead = [p for p in procs if p.poll() is not None]
        assert not dead, dead[0].communicate()
        assert time.monotonic() < deadline, "the drivers did not start"
        time.sleep(0.01)
    t0 = time.monotonic()
    go.touch()
    stats = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        stats.append(json.loads(out.strip().splitlines()[-1]))
    writing = time.monotonic() - t0
    for _ in range(2):  # the final syncs: every device, twice round
        for d in range(DEVICES):
            sync(tmp_path, f"dev{d}", azure_url)
    elapsed = time.monotonic() - t0

    store = open_store(azure_url, PROJECT)
    remote = {name: store.get(name)[0] for name in names}
    store.close()
    for name in names:
        found = entries(remote[name].decode())
        expected = [
            f"L{d}-{n}: load entry {n} from device {d}."
            for d in range(DEVICES)
            for n in range(WRITES)
            if names[(d + n) % len(names)] == name
        ]
        missing = sorted(set(expected) - set(found))
        assert not missing, f"{name} lost {len(missing)} writes, e.g. {missing[:5]}"
        dupes = sorted({e for e in found if found.count(e) > 1})
        assert not dupes, f"{name} holds duplicated writes: {dupes[:5]}"
        assert sorted(found) == sorted(expected), f"{name} holds writes nobody made"
        assert remote[name].count(f"The shared starting entry of {name}.".encode()) == 1
    for d in range(DEVICES):
        memory = tmp_path / f"dev{d}" / "memory"
        local = {p.name: p.read_bytes() for p in memory.iterdir() if p.is_file()}
        assert local == remote, f"dev{d} did not converge to the remote's bytes"

    total = sum(s["syncs"] for s in stats)
    retried = sum(s["merged"] for s in stats)
    errors = sum(s["errors"] for s in stats)
    print(
        f"\nLOAD devices={DEVICES} writes={DEVICES * WRITES} syncs={total} "
        f"merges={retried} sync_errors_retried={errors} "
        f"offline={sum(s['offline'] for s in stats)} "
        f"conflicts={sum(s['conflicts'] for s in stats)} "
        f"writing_seconds={writing:.1f} seconds={elapsed:.1f} "
        f"slowest_device_seconds={max(s['seconds'] for s in stats):.1f}"
    )
    assert total == DEVICES * WRITES
