"""`memsync new` from templates, and `memsync watch` pushing edits made outside Claude."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pytest

from memsync.memory import frontmatter as memory
from memsync.memory.memtypes import TYPES, type_of
from memsync.memory.newfile import create
from memsync.util import resources
from memsync.util.errors import UsageError, UserError
from tests.devices import make_device


def test_every_type_has_a_template_that_parses_and_declares_its_type():
    names = {p.name for p in (Path(__file__).parent.parent / "templates").glob("*.md")}
    assert "MEMORY.md" in names
    for filename in names - {"MEMORY.md"}:
        doc = memory.parse(resources.template_text(filename))
        # Claude Code's shape: name and description on top, everything else under metadata
        assert doc.meta and set(doc.meta) == {"name", "description", "metadata"}, filename
        assert doc.meta["metadata"]["node_type"] == "memory", filename
        assert memory.field(doc.meta, "type") in TYPES, filename
        for field in TYPES[memory.field(doc.meta, "type")].required:
            assert field in doc.meta, (filename, field)
    declared = {
        memory.field(memory.parse(resources.template_text(f)).meta, "type")
        for f in names - {"MEMORY.md"}
    }
    assert declared == set(TYPES) - {"index"}


@pytest.mark.parametrize("type_name", [t for t in TYPES if t != "index"])
def test_new_creates_a_valid_file_and_indexes_it(tmp_path, type_name):
    from memsync.privacy.gate import check_outbound

    path = create(tmp_path, type_name, "Ana López", today=date(2026, 11, 22))
    data = path.read_bytes()
    check_outbound(path.name, data)
    assert type_of(path.name, memory.parse(data.decode()).meta).name == type_name
    assert f"]({path.name})" in (tmp_path / "MEMORY.md").read_text()
    with pytest.raises(UserError, match="already exists"):
        create(tmp_path, type_name, "Ana López", today=date(2026, 11, 22))


def test_new_names_files_by_convention(tmp_path):
    day = date(2026, 11, 22)
    assert create(tmp_path, "session_digest", today=day).name == "session_digest_2026-11-22.md"
    assert (
        create(tmp_path, "relationship", "Ana López", today=day).name == "relationship_ana_l_pez.md"
    )
    assert (
        create(tmp_path, "feedback", "tone in banter", today=day).name
        == "feedback_tone_in_banter.md"
    )
    with pytest.raises(UserError, match="unknown memory type"):
        create(tmp_path, "diary")
    with pytest.raises(UsageError, match="needs a NAME"):
        create(tmp_path, "user")


def test_watch_pushes_outside_edits_and_stops_cleanly(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    device = make_device(tmp_path, "d", remote.as_uri())
    proc = subprocess.Popen(
        [sys.executable, "-m", "memsync", "watch", "--debounce", "0.3"],
        env=device.env(),
        cwd=device.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)  # let the observer start
        device.write(
            "self_observations.md", "## Failure modes\n- lecturing\n", type="self_observations"
        )
        (device.memory / ".self_observations.md.swp").write_text("editor junk")
        (device.memory / "notes.md~").write_text("backup junk")
        # wait for what watch prints, not for the file: the file lands on the remote before
        # the run that pushed it has finished, and SIGINT then would cut that run short
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")))
        reader.start()
        deadline = time.monotonic() + 30
        while not any("pushed self_observations.md" in x for x in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    pushed = sorted(
        p.name
        for p in (remote / "e2e-project").iterdir()
        if not p.name.startswith((".", "_memsync"))
    )
    assert pushed == ["self_observations.md"]


def test_watch_queues_during_an_outage(tmp_path):
    import threading

    from memsync.claude.watch import watch
    from memsync.context import config
    from memsync.sync.engine import Engine

    mem = tmp_path / "mem"
    mem.mkdir()
    ctx = config.resolve(memory_dir=mem, remote=(tmp_path / "absent").as_uri(), project="p")
    engine = Engine(ctx)
    stop = threading.Event()
    reports = []
    thread = threading.Thread(
        target=watch,
        args=(engine,),
        kwargs={"debounce": 0.2, "stop": stop, "report": lambda k, d: reports.append(d)},
    )
    thread.start()
    try:
        time.sleep(1.0)
        (mem / "user_x.md").write_text("---\nname: x\ndescription: y\ntype: user\n---\nbody\n")
        deadline = time.monotonic() + 20
        while not reports and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(10)
    assert reports and reports[0][1].offline
    assert "user_x.md" in engine.state.pending
