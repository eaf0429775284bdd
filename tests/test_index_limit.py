"""MEMORY.md and what Claude Code loads of it: the limit as the CLI computes it, the warnings,
and `memsync compact --index` on two and three devices through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsync.memory import index_limit
from memsync.memory.index_limit import MAX_CHARS, MAX_LINES, fits, load, split, unseen
from memsync.memory.index_links import link_targets
from tests.devices import Device, make_device

TYPES = ("project", "feedback", "user", "reference")


def memory(name: str, kind: str, description: str = "") -> bytes:
    desc = description or f"memory {name}"
    return (
        f"---\nname: {name.removesuffix('.md')}\ndescription: {desc}\nmetadata:\n"
        f"  type: {kind}\n---\nThe fact of {name}.\n"
    ).encode()


def memories(tag: str, count: int, pad: int = 0) -> dict[str, bytes]:
    """`count` memory files named after `tag`, types in turn; `pad` lengthens descriptions."""
    out = {}
    for i in range(count):
        kind = TYPES[i % len(TYPES)]
        out[f"{kind}_{tag}{i:03d}.md"] = memory(f"{kind}_{tag}{i:03d}.md", kind, "x" * pad)
    return out


def index_of(files: dict[str, bytes], head: str = "# Memory index\n\n", pad: int = 0) -> str:
    lines = [
        f"- [{n.removesuffix('.md')}]({n}) — a short hook{' ' + 'y' * pad if pad else ''}\n"
        for n in sorted(files)
    ]
    return head + "".join(lines)


def reachable(files: dict[str, bytes]) -> set[str]:
    """What Claude can reach: links in the loaded part of MEMORY.md, and in the sub-indexes
    those link (one level)."""
    loaded = load(files["MEMORY.md"].decode()).loaded
    found: set[str] = set()
    for line in loaded.splitlines():
        for target in link_targets(line):
            found.add(target)
            sub = files.get(target)
            if sub is not None and index_limit.is_subindex(target, sub.decode()):
                for line2 in sub.decode().splitlines():
                    found |= link_targets(line2)
    return found


def memory_names(files: dict[str, bytes]) -> set[str]:
    return {
        n
        for n, d in files.items()
        if n != "MEMORY.md" and not index_limit.is_subindex(n, d.decode())
    }


# --- the limit, as the CLI computes it (function Pyo of the 2.1.330 bundle) ----------------


def test_the_load_follows_the_cli_line_and_character_cut():
    text = "\n".join(f"line {i}" for i in range(1, 263)) + "\n\n"
    cut = load(text)
    assert (cut.lines, cut.whole) == (262, False)
    assert cut.loaded.splitlines()[-1] == "line 200" and cut.rest.startswith("\nline 201")
    assert load("  \n" + "a\n" * 199 + "a\n\n\n").whole  # trimmed: 200 lines
    # past 25,000 characters with fewer lines: cut at the last line end before 25,000
    long = "".join(f"{i:04d} " + "z" * 194 + "\n" for i in range(150))  # 200 chars a line
    cut = load(long)
    assert cut.lines == 150 and not cut.whole
    assert len(cut.loaded) == 124 * 200 + 199 and cut.loaded.endswith("z")
    # characters are UTF-16 code units, as JavaScript counts them: an emoji is two
    assert index_limit.js_length("😀é") == 3
    assert not fits("😀" * (MAX_CHARS // 2 + 1)) and fits("é" * MAX_CHARS)


def test_the_warning_counts_the_memories_claude_cannot_see():
    files = memories("a", 262)
    text = index_of(files)
    said = index_limit.warning(text, lambda n: None)
    assert said is not None
    assert f"264 lines long, past the {MAX_LINES} lines Claude Code loads" in said
    assert "Claude cannot see 64 memories" in said and "memsync compact --index" in said
    assert index_limit.warning(index_of(memories("a", 100)), lambda n: None) is None
    # long descriptions: fewer than 200 lines, past 25,000 characters
    few = memories("b", 150)
    said = index_limit.warning(index_of(few, pad=200), lambda n: None)
    assert said is not None and "characters long, past the 25,000 characters" in said
    assert "Claude cannot see" in said


# --- the split ---------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "pad"), [(262, 0), (150, 200), (900, 0)])
def test_the_split_loads_whole_keeps_every_memory_reachable_and_is_stable(count, pad):
    files = memories("m", count)
    head = "# My memory\n\nRead the feedback first.\n\n"
    files["MEMORY.md"] = index_of(files, head, pad).encode()
    before = files["MEMORY.md"].decode().splitlines(keepends=True)
    new = split(files)
    assert set(new) >= {"MEMORY.md"}
    files.update(new)
    index = files["MEMORY.md"].decode()
    assert fits(index)
    assert reachable(files) >= memory_names(files), "a memory is no longer reachable"
    # the lines that stay are the first ones, in the user's order and wording
    kept = [line for line in index.splitlines(keepends=True) if "more memories" not in line]
    assert kept == before[: len(kept)] and len(kept) > 4
    assert split(files) == {}, "a second split changes something"
    for name, data in new.items():
        if name != "MEMORY.md":
            assert index_limit.is_subindex(name, data.decode())
            assert unseen(index, lambda n: files[n].decode() if n in files else None) == []


def test_a_split_index_that_grows_again_moves_only_the_new_lines():
    files = memories("m", 262)
    files["MEMORY.md"] = index_of(files).encode()
    files.update(split(files))
    first = dict(files)
    extra = memories("n", 60)
    files.update(extra)
    files["MEMORY.md"] += index_of(extra, head="").encode()
    new = split(files)
    files.update(new)
    assert fits(files["MEMORY.md"].decode()) and reachable(files) >= memory_names(files)
    # the sub-indexes kept what they held, the new lines were added to them
    for name in first:
        if name.startswith("index_"):
            assert set(first[name].decode().splitlines()) <= set(files[name].decode().splitlines())
    assert split(files) == {}


def test_a_memory_already_named_like_a_sub_index_is_left_alone():
    files = memories("m", 262)
    files["index_project.md"] = memory("index_project.md", "project")
    others = {n: d for n, d in files.items() if not n.startswith("project_")}
    last = {n: d for n, d in files.items() if n.startswith("project_")}
    files["MEMORY.md"] = (index_of(others) + index_of(last, head="")).encode()
    new = split(files)
    assert "index_project.md" not in new and "index_project_2.md" in new
    files.update(new)
    assert reachable(files) >= memory_names(files)


# --- through the CLI, on several devices -------------------------------------------------


def _device_files(device: Device) -> dict[str, bytes]:
    return {n: d for n, d in device.files().items() if n.endswith(".md")}


def _add(device: Device, files: dict[str, bytes], pad: int = 0) -> None:
    for name, data in files.items():
        (device.memory / name).write_bytes(data)
    index = device.memory / "MEMORY.md"
    old = index.read_text() if index.exists() else "# Memory index\n\n"
    index.write_text(old + index_of(files, head="", pad=pad))


@pytest.mark.parametrize("pad", [0, 170], ids=["lines", "characters"])
def test_devices_merge_past_the_limit_are_told_and_converge_after_compact_index(
    tmp_path: Path, pad: int
):
    """Two devices each add memories (the index of each fits); their merge is past what
    Claude Code loads: sync, status, validate, doctor and the primer say so; `compact --index`
    on one brings it within, nothing unreachable, both converge; a second run changes
    nothing. `pad`: long descriptions, past 25,000 characters with fewer than 200 lines."""
    (tmp_path / "remote").mkdir()
    remote = (tmp_path / "remote").as_uri()
    a, b = make_device(tmp_path, "a", remote), make_device(tmp_path, "b", remote)
    count = 130 if not pad else 75
    _add(a, memories("a", count), pad)
    a.run("sync")
    b.run("sync")
    _add(b, memories("b", count), pad)
    b.run("sync")
    done = a.run("sync")
    assert "Claude Code loads" in done.stderr and "memsync compact --index" in done.stderr
    index = (a.memory / "MEMORY.md").read_text()
    assert not fits(index) and (load(index).lines < MAX_LINES) == bool(pad)
    status = json.loads(a.run("status", "--json").stdout)
    said = status.get("data", status)["index_warning"]
    assert "Claude cannot see" in said
    assert "Claude cannot see" in a.run("validate").stderr
    doctor = json.loads(a.run("doctor", "--json", check=None).stdout)
    checks = {c["name"]: c for c in doctor.get("data", doctor)["checks"]}
    assert not checks["index"]["ok"] and "compact --index" in checks["index"]["fix"]
    assert "Claude cannot see" in a.run("context").stdout

    a.run("compact", "--index")
    b.run("sync")
    files_a, files_b = _device_files(a), _device_files(b)
    assert files_a == files_b
    assert fits(files_a["MEMORY.md"].decode())
    assert reachable(files_a) >= memory_names(files_a)
    assert len(memory_names(files_a)) == 2 * count
    assert "Claude cannot see" not in a.run("status").stdout
    again = b.run("compact", "--index")
    assert "Nothing to compact" in again.stdout
    assert _device_files(b) == files_b


def test_three_devices_that_add_and_compact_apart_converge(tmp_path: Path):
    (tmp_path / "remote").mkdir()
    remote = (tmp_path / "remote").as_uri()
    devices = [make_device(tmp_path, name, remote) for name in ("a", "b", "c")]
    for i, device in enumerate(devices):
        device.run("sync")
        _add(device, memories(f"d{i}", 90))
        device.run("sync")
    for device in devices:
        device.run("sync")
    # two compact the same merged index apart, the third adds more meanwhile
    devices[0].run("compact", "--index")
    devices[1].run("compact", "--index")
    _add(devices[2], memories("late", 40))
    for _ in range(2):
        for device in devices:
            device.run("sync")
    devices[2].run("compact")  # the regular compaction splits the index too
    for device in devices:
        device.run("sync")
    seen = [_device_files(d) for d in devices]
    assert seen[0] == seen[1] == seen[2]
    files = seen[0]
    assert fits(files["MEMORY.md"].decode())
    assert reachable(files) >= memory_names(files) and len(memory_names(files)) == 310
    status = json.loads(devices[0].run("status", "--json").stdout)
    assert not status.get("data", status)["conflicts"]
    for device in devices:
        assert "Nothing to compact" in device.run("compact", "--index").stdout


def test_forget_takes_a_forgotten_files_line_out_of_its_sub_index_too(tmp_path: Path):
    """A sub-index line carries the file's description, as a MEMORY.md line does: `forget FILE`
    takes it on every device."""
    (tmp_path / "remote").mkdir()
    remote = (tmp_path / "remote").as_uri()
    a, b = make_device(tmp_path, "a", remote), make_device(tmp_path, "b", remote)
    _add(a, memories("a", 262))
    a.run("sync")
    a.run("compact", "--index")
    b.run("sync")
    gone = "user_a258.md"  # past the cut: listed in index_user.md only
    assert gone in (a.memory / "index_user.md").read_text()
    assert gone not in (a.memory / "MEMORY.md").read_text()
    a.run("forget", gone, "--yes")
    b.run("sync")
    for device in (a, b):
        assert gone not in (device.memory / "index_user.md").read_text(), device.name
        assert not (device.memory / gone).exists()
    assert _device_files(a) == _device_files(b)


def test_a_write_of_the_index_past_the_limit_is_said_to_claude_at_once(tmp_path: Path):
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "a", (tmp_path / "remote").as_uri())
    _add(device, memories("a", 100))
    device.run("sync")
    quiet = device.post_tool_use(device.memory / "MEMORY.md", "Edit")
    assert quiet.stdout.strip() == ""
    _add(device, memories("b", 120))
    told = device.post_tool_use(device.memory / "MEMORY.md", "Edit")
    context = json.loads(told.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Claude cannot see" in context and "MEMORY.md is 222 lines long" in context
