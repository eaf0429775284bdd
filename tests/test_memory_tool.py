"""The memory tool backend (claude.memory_tool) driven by the `anthropic` SDK's own tool runner
against the fake Messages API server, on the folder remote and on Azurite: every command, two
agents on two devices racing on one file, hostile paths, secrets, and Claude Code's files."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memsync.claude.memory_tool import AsyncMemsyncMemoryTool, MemsyncMemoryTool
from memsync.claude.tool_backend import MemoryToolError, ToolMemory
from memsync.context import config
from memsync.memory import frontmatter as memory
from memsync.stores import check_key, open_store
from tests.anthropic_server import AnthropicServer, Reply, tool_calls_message
from tests.devices import make_device

PROJECT = "e2e-project"  # what tests.devices gives the CLI devices
SECRET = "sk-" + "ant-api03-" + "Xq7vB2nK9pL4mR8tW1yZ3cF6hJ0dS5aG-Eu_QiO2x"


def device_ctx(root: Path, name: str, remote: str, **settings: Any) -> config.Context:
    """One simulated device: its own MEMSYNC_HOME and memory dir, the shared remote."""
    ctx = config.resolve(root / name / "memory", remote, PROJECT)
    return ctx._replace(
        home=root / name / "home", device=name, settings={**ctx.settings, **settings}
    )


def run_agent(server: AnthropicServer, tool: Any) -> list[Any]:
    """One conversation through the SDK's tool runner; the server plays the model."""
    client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
    runner = client.beta.messages.tool_runner(
        model="claude-test",
        max_tokens=1024,
        tools=[tool],
        messages=[{"role": "user", "content": "Hello again."}],
    )
    return list(runner)


def results(server: AnthropicServer) -> list[tuple[bool, str]]:
    """(is_error, text) of every tool result the runner sent back."""
    out = []
    for block in server.tool_results():
        content = block["content"]
        text = content if isinstance(content, str) else " ".join(b["text"] for b in content)
        out.append((bool(block.get("is_error")), text))
    return out


def remote_files(ctx: config.Context) -> dict[str, bytes]:
    store = open_store(ctx.remote, ctx.project)
    try:
        return {key: store.get(key)[0] for key in store.list() if not key.startswith("_")}
    finally:
        store.close()


def folder_remote(tmp_path: Path) -> str:
    folder = tmp_path / "remote"
    folder.mkdir(exist_ok=True)
    return folder.as_uri()


@pytest.fixture
def server() -> Any:
    fake = AnthropicServer().start()
    yield fake
    fake.stop()


# --- every command through the SDK's tool runner -----------------------------------------------


def test_every_command_through_the_tool_runner(
    server: AnthropicServer, remote_url: str, tmp_path: Path
) -> None:
    ctx = device_ctx(tmp_path, "server", remote_url)
    tool = MemsyncMemoryTool(context=ctx)
    profile = "/memories/user_profile.md"
    server.script(
        [{"command": "view", "path": "/memories"}],
        [
            {
                "command": "create",
                "path": profile,
                "file_text": "# Sam\nSam prefers terse answers.\n",
            }
        ],
        [
            {"command": "str_replace", "path": profile, "old_str": "terse", "new_str": "short"},
            {"command": "insert", "path": profile, "insert_line": 10, "insert_text": "Likes tea."},
        ],
        [{"command": "view", "path": profile, "view_range": [9, -1]}],
        [
            {"command": "create", "path": "/memories/notes/project_demo.md", "file_text": "Demo"},
            {"command": "rename", "old_path": profile, "new_path": "/memories/user_sam.md"},
        ],
        [
            {"command": "delete", "path": "/memories/notes"},
            {"command": "view", "path": "/memories"},
        ],
    )
    messages = run_agent(server, tool)
    assert messages[-1].content[0].text == "Done."
    got = results(server)
    assert [e for e, _ in got] == [False] * 9, got
    assert "0B\t/memories" in got[0][1] and "could not pull" not in got[0][1]
    assert got[1][1].startswith(f"File created successfully at: {profile}")
    assert "frontmatter its name implies" in got[1][1]
    assert "Sam prefers short answers." in got[2][1]
    assert got[4][1].splitlines()[1:] == [
        "     9\t# Sam",
        "    10\tSam prefers short answers.",
        "    11\tLikes tea.",
    ]
    listing = got[8][1]
    assert "/memories/user_sam.md" in listing and "notes" not in listing

    # what the tool wrote is a memory file like any other, on this device and on the remote
    local = (ctx.memory_dir / "user_sam.md").read_text()
    doc = memory.parse(local)
    assert doc.meta is not None and doc.meta["name"] == "user_sam"  # follows the rename
    assert doc.meta["description"] == "user sam"
    assert doc.meta["metadata"]["node_type"] == "memory"  # Claude Code's own shape
    assert memory.field(doc.meta, "type") == "user"
    assert doc.body == "# Sam\nSam prefers short answers.\nLikes tea.\n"
    assert sorted(remote_files(ctx)) == ["MEMORY.md", "user_sam.md"]
    assert remote_files(ctx)["user_sam.md"] == local.encode()
    index = remote_files(ctx)["MEMORY.md"].decode()
    assert "](user_sam.md)" in index and "user_profile.md" not in index
    assert "project_demo" not in index

    # and a Claude Code device syncing the same project sees exactly that
    laptop = make_device(tmp_path, "laptop", remote_url)
    laptop.run("sync")
    assert laptop.files() == {
        "MEMORY.md": index.encode(),
        "user_sam.md": local.encode(),
    }


def test_the_async_twin_through_the_async_tool_runner(
    server: AnthropicServer, tmp_path: Path
) -> None:
    remote = folder_remote(tmp_path)
    ctx = device_ctx(tmp_path, "server", remote)
    tool = AsyncMemsyncMemoryTool(context=ctx)
    path = "/memories/voice_calibration.md"
    server.script(
        [{"command": "create", "path": path, "file_text": "## 2026-11-24\n- dry humour landed\n"}],
        [{"command": "str_replace", "path": path, "old_str": "dry", "new_str": "Dry"}],
        [{"command": "view", "path": "/memories/../etc/passwd"}],
    )

    async def converse() -> list[Any]:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-test",
            max_tokens=512,
            tools=[tool],
            messages=[{"role": "user", "content": "hi"}],
        )
        return [m async for m in runner]

    asyncio.run(converse())
    got = results(server)
    assert [e for e, _ in got] == [False, False, True]
    assert "'..' segment" in got[2][1]
    assert b"- Dry humour landed" in remote_files(ctx)["voice_calibration.md"]


# --- two agents on two devices, one append-type file, at the same time -------------------------


def test_two_agents_append_to_one_file_at_the_same_time(remote_url: str, tmp_path: Path) -> None:
    path = "/memories/voice_calibration.md"
    seed = ToolMemory(device_ctx(tmp_path, "seed", remote_url))
    seed.create(path, "---\nname: voice\ndescription: tone notes\n---\n## 2026-11-24\n- start\n")
    servers = {name: AnthropicServer().start() for name in ("alpha", "beta")}
    agents = {
        name: MemsyncMemoryTool(context=device_ctx(tmp_path, name, remote_url)) for name in servers
    }
    both_have_read = threading.Barrier(2, timeout=30)
    for name, server in servers.items():
        entry = f"- {name} noticed the user likes short replies"
        server.script(
            [{"command": "view", "path": path}],  # the session's first read pulls the file
            # both write only after both have read: the second conditional write must lose
            Reply(
                200,
                tool_calls_message(
                    {"command": "insert", "path": path, "insert_line": 6, "insert_text": entry}
                ),
                before=both_have_read.wait,
            ),
        )
    threads = [
        threading.Thread(target=run_agent, args=(servers[name], agents[name])) for name in servers
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for server in servers.values():
            server.stop()
    answers = {name: results(server) for name, server in servers.items()}
    for name, got in answers.items():
        assert [e for e, _ in got] == [False, False], (name, got)
    merged_notes = [name for name, got in answers.items() if "memsync merged" in got[1][1]]
    assert len(merged_notes) == 1, answers  # exactly one lost the race, and was told

    entries = ["- alpha noticed the user likes short replies", "- beta noticed the user likes"]

    def holds_both_once(text: str) -> bool:
        return all(text.count(e) == 1 for e in entries) and text.count("- start") == 1

    remote = remote_files(seed.ctx)["voice_calibration.md"].decode()
    assert holds_both_once(remote), remote
    for name, agent in agents.items():
        agent.backend.pull()
        text = (agent.backend.root / "voice_calibration.md").read_text()
        assert holds_both_once(text), (name, text)
    laptop = make_device(tmp_path, "laptop", remote_url)  # Claude Code's side
    laptop.run("sync")
    assert holds_both_once(laptop.files()["voice_calibration.md"].decode())


def test_a_fact_edited_on_both_devices_merges_as_sync_does(
    server: AnthropicServer, tmp_path: Path
) -> None:
    remote = folder_remote(tmp_path)
    path = "/memories/user_role.md"
    alpha = ToolMemory(device_ctx(tmp_path, "alpha", remote))
    alpha.create(path, "---\nname: role\ndescription: the user's role\n---\nThe user is a PM.\n")
    beta = MemsyncMemoryTool(context=device_ctx(tmp_path, "beta", remote))
    beta.backend.view(path)  # beta's session has read it
    alpha.str_replace(path, "a PM", "an engineer")
    server.script(
        [{"command": "str_replace", "path": path, "old_str": "a PM", "new_str": "a designer"}]
    )
    run_agent(server, beta)
    [(is_error, text)] = results(server)
    assert not is_error, text
    assert "Another device changed /memories/user_role.md at the same time" in text
    assert "It now reads:" in text and "a designer" in text  # the later edit won
    kept = (beta.backend.root / "user_role.md").read_text()
    assert kept.split("---\n")[-1] in text  # the model sees what the file holds now
    assert b"a designer" in remote_files(alpha.ctx)["user_role.md"]
    history = beta.backend.engine.state.history("user_role.md")
    assert any(b"an engineer" in v.path.read_bytes() for v in history), "the other is kept"


def test_a_delete_that_raced_an_edit_is_undone_and_said(tmp_path: Path) -> None:
    remote = folder_remote(tmp_path)
    path = "/memories/project_launch.md"
    alpha = ToolMemory(device_ctx(tmp_path, "alpha", remote))
    alpha.create(path, "Launch is on Friday.\n")
    beta = ToolMemory(device_ctx(tmp_path, "beta", remote))
    beta.view(path)
    alpha.str_replace(path, "\nLaunch is on Friday", "\nLaunch is on Monday")
    with pytest.raises(MemoryToolError, match="edit wins over a deletion") as raised:
        beta.delete(path)
    assert "Launch is on Monday." in str(raised.value)
    assert "Monday" in (beta.root / "project_launch.md").read_text()


# --- paths -----------------------------------------------------------------------------------

HOSTILE = [
    "/memories/../outside/x.md",
    "/memories/sub/../../outside/x.md",
    "/memories/%2e%2e/outside/x.md",
    "/memories/%2E%2E%2Foutside%2Fx.md",
    "/memories/%252e%252e/outside/x.md",
    "/memories/..%2foutside/x.md",
    "/memories/..\\outside\\x.md",
    "/etc/passwd",
    "/outside/x.md",
    "memories/x.md",
    "../outside/x.md",
    "/memoriesX/x.md",
    "/memories//outside/x.md",
    "/memories/./x.md",
    "/memories/link/x.md",  # a link to the outside folder
    "/memories/escape.md",  # a link to a file outside
    "/memories/C:/x.md",
    "/memories/x\x00.md",
    "/memories/.hidden.md",
    "",
]


@pytest.fixture
def hostile_memory(tmp_path: Path) -> tuple[ToolMemory, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("outside\n")
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    ctx.memory_dir.mkdir(parents=True)
    (ctx.memory_dir / "link").symlink_to(outside, target_is_directory=True)
    (ctx.memory_dir / "escape.md").symlink_to(outside / "x.md")
    return ToolMemory(ctx), outside


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_every_hostile_path_is_refused_through_the_tool_runner(
    server: AnthropicServer, hostile_memory: tuple[ToolMemory, Path], tmp_path: Path
) -> None:
    backend, outside = hostile_memory
    tool = MemsyncMemoryTool(context=backend.ctx)
    before = _snapshot(outside)
    calls = []
    for bad in HOSTILE:
        calls += [
            {"command": "view", "path": bad},
            {"command": "create", "path": bad, "file_text": "pwned\n"},
            {"command": "str_replace", "path": bad, "old_str": "outside", "new_str": "pwned"},
            {"command": "insert", "path": bad, "insert_line": 0, "insert_text": "pwned"},
            {"command": "delete", "path": bad},
            {"command": "rename", "old_path": bad, "new_path": "/memories/ok.md"},
            {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": bad},
        ]
    server.script(calls)
    run_agent(server, tool)
    got = results(server)
    assert len(got) == len(calls)
    accepted = [
        (call, text) for call, (is_error, text) in zip(calls, got, strict=True) if not is_error
    ]
    assert accepted == []
    assert _snapshot(outside) == before
    assert not (tmp_path / "agent" / "outside").exists()
    assert all("pwned" not in p.read_text() for p in backend.root.rglob("*.md") if p.is_file())
    assert not (tmp_path / "remote").exists() or not any(
        "pwned" in p.read_text() for p in (tmp_path / "remote").rglob("*.md")
    )


_SEGMENTS = [
    "..",
    ".",
    "",
    "%2e%2e",
    "..%2f..",
    "link",
    "escape.md",
    "b.md",
    "x.md",
    "C:",
    "a\x00",
    "é.md",
    "..\\..",
]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prefix=st.sampled_from(
        ["/memories/", "/memories/link/", "/memories/sub/", "/memories", "/", "memories/"]
    ),
    segments=st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=3),
    joiner=st.sampled_from(["/", "/", "/", "//", "\\", "%2f"]),
)
@example(prefix="/memories/link/", segments=["b.md"], joiner="/")  # a link to the outside
@example(prefix="/memories/", segments=["escape.md"], joiner="/")  # a link to a file outside
def test_any_path_stays_under_the_memory_dir(
    hostile_memory: tuple[ToolMemory, Path], prefix: str, segments: list[str], joiner: str
) -> None:
    """Whatever the path, a command either refuses it or acts inside the memory dir."""
    backend, outside = hostile_memory
    backend.ctx.settings["sync"] = False  # the rule is local; a push per example would be slow
    before = _snapshot(outside)
    path = prefix + joiner.join(segments)
    try:
        name = backend.name_of(path)
    except MemoryToolError:
        name = None
    if name:
        check_key(name)  # a name the remote accepts too
        assert ".." not in name.split("/") and "%" not in name and "\\" not in name
        try:
            resolved = backend.local(name).resolve()
        except MemoryToolError:
            assert name.split("/")[0] in ("link", "escape.md")  # only links lead out
        else:
            assert backend.root.resolve() in resolved.parents
    for command in (
        lambda: backend.create(path, "x\n"),
        lambda: backend.insert(path, 0, "x"),
        lambda: backend.rename(path, "/memories/z.md"),
        lambda: backend.delete(path),
    ):
        with contextlib.suppress(MemoryToolError):
            command()
    assert _snapshot(outside) == before


def test_view_output_and_file_size_are_capped(tmp_path: Path) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path), max_file_bytes=20_000)
    backend = ToolMemory(ctx, view_max_chars=2_000)
    body = "".join(f"line {i} of a long memory\n" for i in range(400))
    backend.create("/memories/reference_long.md", body[:15_000])
    shown = backend.view("/memories/reference_long.md")
    assert len(shown) <= 2_000 + 200
    assert "view with view_range [" in shown
    lines = (ctx.memory_dir / "reference_long.md").read_text().splitlines()
    tail = backend.view("/memories/reference_long.md", [400, 10_000])  # past the end: to the end
    assert tail.splitlines()[-1] == f"{len(lines):6d}\t{lines[-1]}"
    for bad in ([0, 3], [700, -1], [9, 8], [1], "1-3"):
        with pytest.raises(MemoryToolError, match="view_range"):
            backend.view("/memories/reference_long.md", bad)  # type: ignore[arg-type]
    with pytest.raises(MemoryToolError, match="over the 20000-byte limit"):
        backend.create("/memories/reference_huge.md", body * 3)
    assert not (ctx.memory_dir / "reference_huge.md").exists()
    for i in range(150):
        (ctx.memory_dir / f"project_{i:03d}.md").write_text("---\nname: p\ndescription: d\n---\n")
    listing = backend.view("/memories")
    assert len(listing) <= 2_000 and "listing cut: entries 1-" in listing


# --- secrets and types -----------------------------------------------------------------------


def test_a_secret_is_refused_with_its_kind_and_never_echoed(
    server: AnthropicServer, tmp_path: Path
) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    tool = MemsyncMemoryTool(context=ctx)
    path = "/memories/reference_api.md"
    server.script(
        [{"command": "create", "path": path, "file_text": f"The eval key is {SECRET}\n"}],
        [{"command": "create", "path": path, "file_text": "The eval key is in the vault.\n"}],
        [{"command": "str_replace", "path": path, "old_str": "in the vault", "new_str": SECRET}],
        [{"command": "create", "path": f"/memories/{SECRET}.md", "file_text": "x"}],
    )
    run_agent(server, tool)
    got = results(server)
    assert [e for e, _ in got] == [True, False, True, True]
    assert "looks like it holds a secret (Anthropic API key)" in got[3][1]
    assert SECRET not in got[3][1]
    for _, text in (got[0], got[2]):
        assert "Anthropic API key" in text and "was not saved" in text
        assert SECRET not in text and SECRET[:12] not in text
    for request in server.requests:
        assert SECRET not in str(request.body.get("messages")[-1])  # never echoed back
    on_disk = (ctx.memory_dir / "reference_api.md").read_text()
    assert "in the vault" in on_disk and SECRET not in on_disk
    assert all(SECRET.encode() not in data for data in remote_files(ctx).values())


def test_missing_frontmatter_is_said_and_implied_frontmatter_is_added(tmp_path: Path) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    backend = ToolMemory(ctx)
    with pytest.raises(MemoryToolError, match="missing required field.*description") as raised:
        backend.create("/memories/feedback_tests.md", "---\nname: tests\n---\nRun them.\n")
    assert "type: feedback" in str(raised.value)
    with pytest.raises(MemoryToolError, match="end in .md"):
        backend.create("/memories/progress.xml", "<p/>")
    backend.create("/memories/running_commitments.md", "## Open\n- ship the parser\n")
    meta = memory.parse((ctx.memory_dir / "running_commitments.md").read_text()).meta
    assert meta is not None and isinstance(meta["metadata"].pop("modified"), datetime)
    assert meta == {
        "name": "running_commitments",
        "description": "What you promised, with status (Open, Delivered).",
        "metadata": {"node_type": "memory", "type": "commitments"},
    }
    assert ToolMemory(ctx).view("/memories/running_commitments.md").count("ship the parser") == 1


def test_claude_codes_files_and_the_agents_are_the_same_memory(
    server: AnthropicServer, remote_url: str, tmp_path: Path
) -> None:
    laptop = make_device(tmp_path, "laptop", remote_url)
    claude_file = (
        "---\nname: tested\ndescription: The user likes tests\nmetadata:\n  node_type: memory\n"
        "  type: feedback\n  originSessionId: 5f0c\n  modified: 2026-11-24T05:47:59.752Z\n---\n"
        "Write a failing test first.\n"
    )
    (laptop.memory / "feedback_tested.md").write_text(claude_file)
    laptop.run("sync")
    ctx = device_ctx(tmp_path, "server", remote_url)
    tool = MemsyncMemoryTool(context=ctx)
    server.script(
        [{"command": "view", "path": "/memories/feedback_tested.md"}],
        [
            {
                "command": "str_replace",
                "path": "/memories/feedback_tested.md",
                "old_str": "first.",
                "new_str": "first, then make it pass.",
            },
            {"command": "create", "path": "/memories/user_name.md", "file_text": "Sam.\n"},
        ],
    )
    run_agent(server, tool)
    got = results(server)
    assert [e for e, _ in got] == [False, False, False], got
    assert "Write a failing test first." in got[0][1]
    laptop.run("sync")
    files = laptop.files()
    edited = files["feedback_tested.md"].decode()
    assert "then make it pass." in edited
    assert "metadata:\n  node_type: memory\n  type: feedback\n" in edited  # the writer's shape
    assert "2026-11-24T05:47:59.752Z" not in edited  # modified moved on
    assert "](user_name.md)" in files["MEMORY.md"].decode()
    assert memory.field(memory.parse(files["user_name.md"].decode()).meta, "type") == "user"


# --- the example -----------------------------------------------------------------------------


def test_the_example_remembers_a_user_across_two_machines(
    anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "remember_user", Path(__file__).parent.parent / "examples" / "remember_user.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    fact = "Sam prefers short answers and is learning Rust."
    anthropic_server.script(  # the laptop's run
        [{"command": "view", "path": "/memories"}],
        [{"command": "create", "path": "/memories/user_preferences.md", "file_text": fact}],
        closing="Noted, Sam.",
    )
    anthropic_server.script(  # the server's run, later
        [{"command": "view", "path": "/memories"}],
        [{"command": "view", "path": "/memories/user_preferences.md"}],
        closing="You prefer short answers.",
    )
    demo = tmp_path / "demo"
    example.main(["--machine", "laptop", "--demo-dir", str(demo), "I'm Sam. Keep it short."])
    example.main(["--machine", "server", "--demo-dir", str(demo), "What do you remember?"])
    got = results(anthropic_server)
    assert [e for e, _ in got] == [False] * 4, got
    assert "0B\t/memories" in got[0][1]  # the laptop started empty
    assert "/memories/user_preferences.md" in got[2][1]  # the server sees the laptop's file
    assert fact in got[3][1]
    first = anthropic_server.requests[0].body
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    server_copy = demo / "server" / "memory" / "user_preferences.md"
    assert (
        server_copy.read_bytes()
        == (demo / "laptop" / "memory" / "user_preferences.md").read_bytes()
    )
    laptop_cli = make_device(tmp_path, "claude", (demo / "remote").as_uri())
    laptop_cli.run("sync", "--project", example.PROJECT)
    assert laptop_cli.files()["user_preferences.md"] == server_copy.read_bytes()


def test_offline_writes_stand_and_go_out_with_the_next_sync(tmp_path: Path) -> None:
    remote = tmp_path / "remote"  # a folder remote that is not mounted yet
    ctx = device_ctx(tmp_path, "agent", remote.as_uri())
    backend = ToolMemory(ctx)
    assert "unreachable" in backend.view("/memories")
    said = backend.create("/memories/user_tz.md", "Sam works from Lisbon.\n")
    assert "queued and goes out with the next sync" in said
    assert (ctx.memory_dir / "user_tz.md").exists()
    remote.mkdir()
    assert backend.pull() == ""  # the pull drains the queue first
    assert b"Sam works from Lisbon." in remote_files(ctx)["user_tz.md"]
    off = ToolMemory(device_ctx(tmp_path, "off", remote.as_uri(), sync=False))
    assert "sync is off" in off.create("/memories/user_x.md", "x\n")
    assert "user_x.md" not in remote_files(ctx)


def test_high_sensitivity_needs_consent(tmp_path: Path) -> None:
    backend = ToolMemory(device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    text = "---\nname: health\ndescription: d\nsensitivity: high\n---\nAllergic to nuts.\n"
    with pytest.raises(MemoryToolError, match="only the user can do that") as raised:
        backend.create("/memories/user_health.md", text)
    assert "consent" not in str(raised.value)  # no coaching the model to grant it itself
    assert not (backend.root / "user_health.md").exists()
    with pytest.raises(MemoryToolError, match="only the user sets them"):
        backend.create("/memories/user_health.md", text.replace("high\n", "high\nconsent: true\n"))
    assert not (backend.root / "user_health.md").exists()
    assert "user_health.md" not in remote_files(backend.ctx)


def test_a_session_reads_what_it_pulled_until_it_refreshes(tmp_path: Path) -> None:
    remote = folder_remote(tmp_path)
    writer = ToolMemory(device_ctx(tmp_path, "writer", remote))
    writer.create("/memories/user_city.md", "Lisbon\n")
    once = ToolMemory(device_ctx(tmp_path, "once", remote))
    fresh = ToolMemory(device_ctx(tmp_path, "fresh", remote), refresh_after=0)
    for reader in (once, fresh):
        assert "Lisbon" in reader.view("/memories/user_city.md")  # the first read pulls
    writer.str_replace("/memories/user_city.md", "Lisbon", "Porto")
    assert "Lisbon" in once.view("/memories/user_city.md")  # a session's view of memory
    assert "Porto" in fresh.view("/memories/user_city.md")
    once.pull()
    assert "Porto" in once.view("/memories/user_city.md")


def test_malformed_commands_come_back_as_tool_errors(
    server: AnthropicServer, tmp_path: Path
) -> None:
    tool = MemsyncMemoryTool(context=device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    path = "/memories/user_x.md"
    server.script(
        [{"command": "create", "path": path}],
        [{"command": "create", "path": path, "file_text": 42}],
        [{"command": "create", "path": path, "file_text": "ok"}],
        [{"command": "insert", "path": path, "insert_line": "three", "insert_text": "x"}],
        [{"command": "insert", "path": path, "insert_line": 3, "insert_text": "x: [broken"}],
        [{"command": "rename", "old_path": path}],
        [{"command": "view", "path": "/memories/user_x.md", "view_range": "all"}],
    )
    run_agent(server, tool)
    got = results(server)
    assert [e for e, _ in got] == [True, True, False, True, True, True, True], got
    assert got[0][1] == "The create command needs file_text."
    assert got[1][1] == "The command's input is malformed: file_text must be text, not int."
    assert got[3][1] == "The command's input is malformed: insert_line must be a number, not str."
    assert "not saved: the frontmatter is not valid YAML" in got[4][1]  # nothing written
    assert "x: [broken" not in (tool.backend.root / "user_x.md").read_text()
    assert got[5][1] == "The rename command needs new_path."
    assert got[6][1] == "The command's input is malformed: view_range must be a list, not str."


def test_directories_are_created_listed_renamed_and_deleted_as_a_whole(tmp_path: Path) -> None:
    backend = ToolMemory(device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    backend.create("/memories/clients/acme/project_launch.md", "Launch Friday.\n")
    backend.create("/memories/clients/acme/reference_contacts.md", "Ana, the PM.\n")
    backend.create("/memories/clients/globex/project_audit.md", "Audit in May.\n")
    listing = backend.view("/memories/clients").splitlines()[1:]
    assert [line.split("\t")[1] for line in listing] == [
        "/memories/clients",
        "/memories/clients/acme/",
        "/memories/clients/acme/project_launch.md",
        "/memories/clients/acme/reference_contacts.md",
        "/memories/clients/globex/",
        "/memories/clients/globex/project_audit.md",
    ]
    backend.rename("/memories/clients/acme", "/memories/archive/acme")
    assert not (backend.root / "clients" / "acme").exists()
    remote = remote_files(backend.ctx)
    assert sorted(k for k in remote if k != "MEMORY.md") == [
        "archive/acme/project_launch.md",
        "archive/acme/reference_contacts.md",
        "clients/globex/project_audit.md",
    ]
    assert "](archive/acme/project_launch.md)" in remote["MEMORY.md"].decode()
    backend.delete("/memories/archive")
    assert sorted(remote_files(backend.ctx)) == ["MEMORY.md", "clients/globex/project_audit.md"]
    assert "acme" not in remote_files(backend.ctx)["MEMORY.md"].decode()
    assert not (backend.root / "archive").exists()


@settings(max_examples=15, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["alpha", "beta"]),
            st.from_regex(r"[a-z]{3,10}( [a-z]{2,8}){0,3}", fullmatch=True),
            st.floats(0, 1),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_interleaved_appends_from_two_devices_all_arrive_once(
    ops: list[tuple[str, str, float]],
) -> None:
    """Two agents that never pull between their writes append entries at any place in one
    section: every entry ends up exactly once on the remote and on both devices."""
    import tempfile

    path = "/memories/self_observations.md"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        remote = folder_remote(root)
        agents = {n: ToolMemory(device_ctx(root, n, remote)) for n in ("alpha", "beta")}
        agents["alpha"].create(path, "## Patterns\n- seed entry\n")
        agents["beta"].view(path)  # both start from the same file, then never pull
        entries = []
        for i, (who, words, where) in enumerate(ops):
            entry = f"- {who} {i}: {words}"
            entries.append(entry)
            agent = agents[who]
            count = len((agent.root / "self_observations.md").read_text().splitlines())
            header = next(
                n
                for n, line in enumerate(
                    (agent.root / "self_observations.md").read_text().splitlines(), 1
                )
                if line == "## Patterns"
            )
            agent.insert(path, header + round(where * (count - header)), entry)
        remote_text = remote_files(agents["alpha"].ctx)["self_observations.md"].decode()
        for agent in agents.values():
            agent.pull()
        texts = [remote_text] + [
            (a.root / "self_observations.md").read_text() for a in agents.values()
        ]
        for text in texts:
            for entry in [*entries, "- seed entry"]:
                assert text.count(entry + "\n") == 1, (entry, text)
        assert texts[1] == texts[2] == remote_text
