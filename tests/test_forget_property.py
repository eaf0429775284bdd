"""The forget rule as a property of two devices syncing one folder remote (docs/forget.md):
for any memory content, any edits not synced yet and any forget text, once the forget has
arrived on both devices, no memory file, history version, merge base or queued upload on
either, and nothing on the remote, holds the text; every line not holding
it is still there; and a line holding it written after the device learned of the forget
stays. MEMSYNC_FORGET_EXAMPLES sets the number of examples (default 25)."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsync.admin import forget
from memsync.context.config import resolve
from memsync.sync.engine import Engine
from tests.conftest import write_memory
from tests.privacy_oracle import assert_forgotten

EXAMPLES = int(os.environ.get("MEMSYNC_FORGET_EXAMPLES", "25"))
WORDS = ["dentist", "Dentist", "garden", "milk", "plan", "tuesday", "DENTIST", "roses"]
FILES = ["voice_calibration.md", "self_observations.md"]  # append-type: merges keep both


class World:
    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="memsync-forget-"))
        self.remote = self.tmp / "remote"
        self.remote.mkdir()
        self.engines: list[Engine] = []
        saved = {k: os.environ.get(k) for k in ("MEMSYNC_HOME", "MEMSYNC_DEVICE")}
        try:
            for i in range(2):
                os.environ["MEMSYNC_HOME"] = str(self.tmp / f"home{i}")
                os.environ["MEMSYNC_DEVICE"] = f"dev{i}"
                (self.tmp / f"mem{i}").mkdir()
                ctx = resolve(
                    memory_dir=self.tmp / f"mem{i}", remote=self.remote.as_uri(), project="fp"
                )
                ctx.settings["concurrency"] = 1
                self.engines.append(Engine(ctx))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def lines(self, dev: int, name: str) -> list[str]:
        path = self.engines[dev].ctx.memory_dir / name
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def append(self, dev: int, name: str, lines: list[str]) -> None:
        memory = self.engines[dev].ctx.memory_dir
        if not (memory / name).exists():
            write_memory(memory, name, "## Notes\n", type=None)
        path = memory / name
        path.write_text(path.read_text() + "".join(f"{x}\n" for x in lines))

    def sync(self, dev: int) -> None:
        self.engines[dev].run("sync", force=True)

    def roots(self) -> list[Path]:
        return [self.remote] + [p for e in self.engines for p in (e.ctx.home, e.ctx.memory_dir)]


_ids = itertools.count()


def _entry(words: list[str]) -> str:
    """A line of its own (a fresh token first): the merge reads no two as one reworded."""
    n = next(_ids)
    return f"- item{n:05d} {chr(97 + n % 26)}{n * 7919 % 10007} " + " ".join(words)


entry = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(_entry)
content = st.dictionaries(st.sampled_from(FILES), st.lists(entry, min_size=1, max_size=4))


def _holds(line: str, needle: str) -> bool:
    return needle.casefold() in line.casefold()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    synced=content,
    unsynced=content,
    needle=st.sampled_from(["dentist", "milk", "roses", "plan tuesday"]),
    forgetter=st.integers(0, 1),
)
def test_a_forget_takes_exactly_the_lines_holding_its_text_everywhere(
    synced, unsynced, needle, forgetter
) -> None:
    world = World()
    try:
        other = 1 - forgetter
        for name, lines in synced.items():
            world.append(forgetter, name, lines)
        world.sync(forgetter)
        world.sync(other)
        for name, lines in unsynced.items():  # edits on the other device, not synced yet
            world.append(other, name, lines)
        for name in synced:  # the history here holds the versions before
            world.append(forgetter, name, [f"- {name} seen"])
        world.sync(forgetter)

        engine = world.engines[forgetter]
        forget.apply_match(engine, forget.plan_match(engine, needle))
        world.sync(other)  # it learns here
        world.sync(forgetter)

        assert_forgotten([needle], world.roots())  # quarantine included
        for name in FILES:
            want = [
                x for x in synced.get(name, []) + unsynced.get(name, []) if not _holds(x, needle)
            ]
            for dev in (0, 1):
                have = world.lines(dev, name)
                assert all(x in have for x in want), (name, dev, want, have)

        late = f"- {needle} written after the forget"
        world.append(other, FILES[0], [late])
        world.sync(other)
        world.sync(forgetter)
        for dev in (0, 1):
            assert late in world.lines(dev, FILES[0])
    finally:
        shutil.rmtree(world.tmp, ignore_errors=True)
