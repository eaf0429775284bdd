"""Search for a lost write: three devices, one remote, random edits, syncs and faults.

Invariants: every entry a device wrote to an append-type file is present everywhere once all
devices have synced; devices converge to identical bytes; every both-sides fact edit is either
merged or reported as a conflict with the losing version in local history; the last-synced
records always point at content that exists.

MEMSYNC_STATEFUL_EXAMPLES raises the number of examples (default 60) for a longer hunt.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memsync.config import resolve
from memsync.engine import Engine
from memsync.memory import render
from memsync.stores.folder import FolderStore
from memsync.stores.memory import MemoryStore
from tests.faults import FaultyStore

APPEND_FILES = ["voice_calibration.md", "running_jokes_and_callbacks.md", "self_observations.md"]
FACT_FILES = ["user_role.md", "project_alpha.md"]
DEVICES = 3
EXAMPLES = int(os.environ.get("MEMSYNC_STATEFUL_EXAMPLES", "60"))
_ids = itertools.count()


def append_doc(name: str, entries: list[str]) -> str:
    body = "\n## Notes\n" + "".join(f"- {e}\n" for e in entries)
    return render({"name": name, "description": "state machine file", "type": None}, body)


class SyncMachine(RuleBasedStateMachine):
    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memsync-sm-"))
        if self.backend == "memory":
            inner = MemoryStore("sm")
        else:
            (self.tmp / "remote").mkdir()
            inner = FolderStore(self.tmp / "remote", "sm")
        self.store = FaultyStore(inner)
        self.engines: list[Engine] = []
        for i in range(DEVICES):
            home = self.tmp / f"home{i}"
            os.environ["MEMSYNC_HOME"] = str(home)
            mem = self.tmp / f"mem{i}"
            mem.mkdir()
            ctx = resolve(memory_dir=mem, remote="memory://sm", project="sm")
            ctx.settings["concurrency"] = 1
            self.engines.append(Engine(ctx, self.store))
        self.written: set[str] = set()  # every entry any device wrote

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, device: int, name: str) -> Path:
        return self.engines[device].ctx.memory_dir / name

    def entries(self, device: int, name: str) -> list[str]:
        path = self.path(device, name)
        if not path.exists():
            return []
        return [line[2:].strip() for line in path.read_text().splitlines() if line.startswith("- ")]

    @rule(device=st.integers(0, DEVICES - 1), name=st.sampled_from(APPEND_FILES))
    def append_entry(self, device: int, name: str) -> None:
        entry = f"entry-{next(_ids)} from device {device}"
        current = self.entries(device, name)
        stem = name.removesuffix(".md")
        self.path(device, name).write_text(append_doc(stem, [*current, entry]))
        self.written.add(entry)

    @rule(device=st.integers(0, DEVICES - 1), name=st.sampled_from(FACT_FILES))
    def edit_fact(self, device: int, name: str) -> None:
        body = f"\nVersion {next(_ids)} written on device {device}.\n"
        meta = {"name": name.removesuffix(".md"), "description": "a fact", "type": "project"}
        self.path(device, name).write_text(render(meta, body))

    @rule(device=st.integers(0, DEVICES - 1), name=st.sampled_from(FACT_FILES))
    def delete_fact(self, device: int, name: str) -> None:
        self.path(device, name).unlink(missing_ok=True)

    @rule(fault=st.sampled_from([None, "refuse", "drop", "move"]))
    def arm_fault(self, fault: str | None) -> None:
        self.store.arm(fault)

    @rule(device=st.integers(0, DEVICES - 1), mode=st.sampled_from(["sync", "push", "pull"]))
    def sync(self, device: int, mode: str) -> None:
        result = self.engines[device].run(mode, force=True)
        assert not result.errors, result.errors
        assert not result.refused, result.refused
        for conflict in result.conflicts:
            assert conflict  # reported with a sentence

    @precondition(lambda self: self.written)
    @rule()
    def converge(self) -> None:
        self.store.arm(None)
        for _ in range(2):
            for engine in self.engines:
                result = engine.run("sync", force=True)
                assert not result.offline and not result.errors
        first = self._snapshot(0)
        for device in range(1, DEVICES):
            assert self._snapshot(device) == first, "devices must converge to identical bytes"
        for device in range(DEVICES):
            present = set().union(*(self.entries(device, n) for n in APPEND_FILES))
            missing = self.written - present
            assert not missing, f"device {device} lost {sorted(missing)}"
            for name in APPEND_FILES:
                entries = self.entries(device, name)
                assert len(entries) == len(set(entries)), f"duplicated entries in {name}"

    def _snapshot(self, device: int) -> dict[str, bytes]:
        root = self.engines[device].ctx.memory_dir
        return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}

    @invariant()
    def records_point_at_existing_bases(self) -> None:
        for engine in self.engines:
            for name in engine.state.records:
                assert engine.state.base(name) is not None, f"record for {name} has no base"


class FolderSyncMachine(SyncMachine):
    backend = "folder"


TestSyncMachine = SyncMachine.TestCase
TestSyncMachine.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestFolderSyncMachine = FolderSyncMachine.TestCase
TestFolderSyncMachine.settings = settings(
    max_examples=max(10, EXAMPLES // 4),
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
pytestmark = pytest.mark.slow
