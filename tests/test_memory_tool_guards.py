"""What the memory tool must refuse or say: privacy fields the model may not grant itself,
secrets in names (the tool and the CLI's gate), races that end as they do for `sync` and are
said, a delete racing an edit, Claude Code's index, view caps the model can follow, and names
that do not travel. Driven through the SDK's tool runner against the fake
Messages API server where that is where the model sees it."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.claude.memory_tool import MemsyncMemoryTool
from memsync.claude.tool_backend import MemoryToolError, ToolMemory
from memsync.memory import frontmatter as memory
from tests.anthropic_server import AnthropicServer
from tests.devices import make_device
from tests.test_memory_tool import (
    device_ctx,
    folder_remote,
    remote_files,
    results,
    run_agent,
)

AWS = "AKIA" + "ZXCVBNMASDFGHJKL"
ANTHROPIC = "sk-" + "ant-api03-" + "abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture
def server() -> AnthropicServer:
    fake = AnthropicServer().start()
    yield fake  # type: ignore[misc]
    fake.stop()


def _all_remote_text(ctx) -> str:
    files = remote_files(ctx)
    return "\n".join(list(files) + [d.decode("utf-8", "replace") for d in files.values()])


# --- 1. consent and allow-listing are the user's ---------------------------------------------


def test_the_model_cannot_grant_itself_consent_or_allow_a_secret(
    server: AnthropicServer, tmp_path: Path
) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    ctx.memory_dir.mkdir(parents=True)
    health = "---\nname: health\ndescription: d\nmetadata:\n  sensitivity: high\n---\nNuts.\n"
    (ctx.memory_dir / "user_health.md").write_text(health)  # the user's own private file
    public = "---\nname: city\ndescription: d\nsensitivity: high\nconsent: true\n---\nLisbon\n"
    (ctx.memory_dir / "user_city.md").write_text(public)  # consent the user gave
    tool = MemsyncMemoryTool(context=ctx)
    server.script(
        [
            {
                "command": "str_replace",
                "path": "/memories/user_health.md",
                "old_str": "metadata:\n",
                "new_str": "metadata:\n  consent: true\n",
            }
        ],
        [
            {
                "command": "create",
                "path": "/memories/user_keys.md",
                "file_text": "---\nname: k\ndescription: d\nallow_sensitive: [aws_access_key]\n"
                f"---\nkey {AWS}\n",
            }
        ],
        [
            {
                "command": "str_replace",
                "path": "/memories/user_health.md",
                "old_str": "sensitivity: high",
                "new_str": "sensitivity: low",
            }
        ],
        [{"command": "create", "path": "/memories/user_pin.md", "file_text": health}],
        # the user's own consent stays usable: an edit that keeps it is fine
        [{"command": "str_replace", "path": "/memories/user_city.md", "old_str": "Lisbon",
          "new_str": "Porto"}],
        [{"command": "rename", "old_path": "/memories/user_city.md",
          "new_path": "/memories/user_town.md"}],
    )  # fmt: skip
    run_agent(server, tool)
    got = results(server)
    assert [e for e, _ in got] == [True, True, True, True, False, False], got
    for _, text in got[:3]:
        assert "only the user sets them" in text and "not saved" in text
        assert "consent: true" not in text and "--allow" not in text  # no coaching
    assert "only the user can do that" in got[3][1] and "consent" not in got[3][1]
    assert (ctx.memory_dir / "user_health.md").read_text() == health  # nothing written
    assert not (ctx.memory_dir / "user_keys.md").exists()
    remote = _all_remote_text(ctx)
    assert "Nuts" not in remote and AWS not in remote and "Porto" in remote
    assert "user_town.md" in remote_files(ctx) and "user_city.md" not in remote_files(ctx)


# --- 2. secrets in names: the tool and the gate every sync passes ----------------------------


def test_a_secret_in_any_part_of_a_name_is_refused_and_never_echoed(
    server: AnthropicServer, tmp_path: Path
) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    tool = MemsyncMemoryTool(context=ctx)
    server.script(
        [{"command": "create", "path": "/memories/user_ok.md", "file_text": "Fine.\n"}],
        [{"command": "create", "path": f"/memories/user_{AWS}.md", "file_text": "x\n"}],
        [{"command": "create", "path": f"/memories/notes_{ANTHROPIC}/user_n.md",
          "file_text": "---\nname: n\ndescription: d\n---\nx\n"}],
        [{"command": "rename", "old_path": "/memories/user_ok.md",
          "new_path": f"/memories/user_{AWS}.md"}],
        [{"command": "create", "path": f"/memories/x{AWS}\x01.md", "file_text": "x"}],
        [{"command": "view", "path": f"/memories/project-{AWS}/x.md"}],
    )  # fmt: skip
    run_agent(server, tool)
    got = results(server)
    assert [e for e, _ in got] == [False] + [True] * 5, got
    for _, text in got[1:]:
        assert AWS not in text and ANTHROPIC[:12] not in text
    for _, text in got[1:4]:
        assert "name looks like it holds a secret" in text
    assert "AWS access key" in got[1][1] and "Anthropic API key" in got[2][1]
    assert sorted(p.name for p in ctx.memory_dir.iterdir()) == ["MEMORY.md", "user_ok.md"]
    remote = _all_remote_text(ctx)
    assert AWS not in remote and "sk-ant" not in remote and "user_ok.md" in remote


def test_sync_push_and_validate_refuse_a_secret_file_name_without_echoing_it(
    tmp_path: Path,
) -> None:
    remote = folder_remote(tmp_path)
    laptop = make_device(tmp_path, "laptop", remote)
    for rel in ("user_ok.md", f"user_{AWS}.md", f"notes_{ANTHROPIC}/user_n.md"):
        (laptop.memory / rel).parent.mkdir(parents=True, exist_ok=True)
        (laptop.memory / rel).write_text("---\nname: n\ndescription: d\n---\nx\n")
    checked = laptop.run("validate", check=1)
    assert "2 of 3 file(s) have problems" in checked.stdout + checked.stderr
    for mode in ("push", "sync"):
        proc = laptop.run(mode, check=None)
        out = proc.stdout + proc.stderr
        assert "AWS access key" in out and "Anthropic API key" in out, out
        assert AWS not in out and "sk-ant" not in out
    assert AWS not in checked.stdout + checked.stderr
    keys = sorted(p.name for p in Path(remote.removeprefix("file://")).rglob("*.md"))
    assert keys == ["user_ok.md"], keys


_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=0, max_size=8)


@settings(max_examples=100, deadline=None)
@given(
    secret=st.sampled_from([AWS, "ASIA" + "QWERTYUIOPASDFGH", ANTHROPIC, "ghp_" + "a1" * 18]),
    before=st.lists(_WORDS, max_size=3),
    after=st.lists(_WORDS, max_size=3),
    sep=st.sampled_from(["_", "/", "-", ".", " "]),
)
def test_a_secret_anywhere_in_a_name_is_found_and_never_shown(
    secret: str, before: list[str], after: list[str], sep: str
) -> None:
    """Oracle: a name built of plain words and one known secret, joined by any separator a
    name may hold, is refused by the gate and `shown_name` never prints the secret."""
    from memsync.privacy.gate import name_secret, shown_name

    name = sep.join([*before, secret, *after, secret]) + ".md"
    assert name_secret(name) is not None, name
    assert secret not in shown_name(name)
    assert name_secret(sep.join([*before, *after]) + ".md") is None


# --- 3 and 4. races: a write is pushed at once and a lost race merges as `sync` merges it ------


def test_a_create_racing_another_devices_create_merges_as_sync_does(
    server: AnthropicServer, tmp_path: Path
) -> None:
    remote = folder_remote(tmp_path)
    path = "/memories/user_pet.md"
    late = MemsyncMemoryTool(context=device_ctx(tmp_path, "e", remote))
    assert "0B\t/memories" in late.backend.view("/memories")  # e saw no memory yet
    first = ToolMemory(device_ctx(tmp_path, "f", remote))
    first.create(path, "Has a dog named Rex.\n")
    server.script([{"command": "create", "path": path, "file_text": "Has a cat named Miso.\n"}])
    run_agent(server, late)
    [(is_error, text)] = results(server)
    assert not is_error and "Another device changed /memories/user_pet.md" in text, text
    assert "Miso" in text  # a fact: the later edit wins, and the model sees what the file holds
    assert b"Miso" in remote_files(first.ctx)["user_pet.md"]
    [kept] = late.backend.engine.state.history("user_pet.md")  # the other version, not lost
    assert b"Rex" in kept.path.read_bytes()
    first.pull()
    assert "Miso" in (first.root / "user_pet.md").read_text()
    assert any(b"Rex" in v.path.read_bytes() for v in first.engine.state.history("user_pet.md"))


def test_an_edit_racing_a_delete_wins_and_the_index_follows(
    server: AnthropicServer, tmp_path: Path
) -> None:
    remote = folder_remote(tmp_path)
    path = "/memories/user_race.md"
    k = ToolMemory(device_ctx(tmp_path, "k", remote))
    k.create(path, "Original.\n")
    l_tool = MemsyncMemoryTool(context=device_ctx(tmp_path, "l", remote))
    l_tool.backend.view(path)
    k.delete(path)  # k's delete lands first
    server.script(
        [{"command": "str_replace", "path": path, "old_str": "Original.", "new_str": "Edited."}]
    )
    run_agent(server, l_tool)
    [(is_error, text)] = results(server)
    assert not is_error and "has been edited" in text, text  # an edit wins over a deletion
    assert b"Edited." in remote_files(k.ctx)["user_race.md"]
    l_tool.backend.pull()  # the next full pull puts the file's index line back
    k.pull()
    files = remote_files(k.ctx)
    assert "](user_race.md)" in files["MEMORY.md"].decode()
    assert "](user_race.md)" in (k.root / "MEMORY.md").read_text()
    assert "Edited." in (k.root / "user_race.md").read_text()

    # the other order: the edit lands first, the delete is undone, and its index line is back
    k.create("/memories/user_back.md", "Original.\n")
    l_tool.backend.pull()
    l_tool.backend.str_replace("/memories/user_back.md", "Original.", "Edited.")
    with pytest.raises(MemoryToolError, match="edit wins over a deletion"):
        k.delete("/memories/user_back.md")
    files = remote_files(k.ctx)
    assert b"Edited." in files["user_back.md"]
    assert "](user_back.md)" in files["MEMORY.md"].decode()
    assert "](user_back.md)" in (k.root / "MEMORY.md").read_text()


# --- 5. Claude Code's index -------------------------------------------------------------------


def test_memory_md_cannot_be_deleted_or_renamed_through_the_tool(
    server: AnthropicServer, tmp_path: Path
) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    tool = MemsyncMemoryTool(context=ctx)
    tool.backend.create("/memories/user_a.md", "A.\n")
    tool.backend.create("/memories/user_b.md", "B.\n")
    server.script(
        [{"command": "delete", "path": "/memories/MEMORY.md"}],
        [{"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/x.md"}],
        [{"command": "create", "path": "/memories/user_c.md", "file_text": "C.\n"}],
    )
    run_agent(server, tool)
    got = results(server)
    assert [e for e, _ in got] == [True, True, False], got
    assert "index Claude Code reads" in got[0][1] and "cannot be deleted" in got[0][1]
    index = remote_files(ctx)["MEMORY.md"].decode()
    assert all(f"](user_{c}.md)" in index for c in "abc"), index


# --- 6. view caps the model can follow --------------------------------------------------------


def test_every_view_cap_says_what_was_cut_and_how_to_see_the_rest(tmp_path: Path) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    backend = ToolMemory(ctx, view_max_chars=2_000)
    long_line = "".join(f"{i:05d} " for i in range(1_500))  # 9,000 characters
    backend.create("/memories/reference_long.md", f"first\n{long_line}\nlast\n")
    number = (ctx.memory_dir / "reference_long.md").read_text().split("\n").index(long_line) + 1
    seen, views = "", 0
    shown = backend.view("/memories/reference_long.md")
    assert f"view with view_range [{number}, " in shown  # the lines before are not hidden
    while True:  # follow the notices until the line is whole
        views += 1
        part = backend.view("/memories/reference_long.md", [number, number])
        assert len(part) <= 2_000
        body, *notice = part.split("\n")[1:]
        seen += body.split("\t", 1)[1]
        if "again for the next part" not in part:
            break
        assert views < 20
    assert seen == long_line and views > 3
    assert "the end of the line" in notice[0]

    for i in range(700):  # a flat directory: there is no subdirectory to view
        (ctx.memory_dir / f"project_{i:03d}.md").write_text("---\nname: p\ndescription: d\n---\n")
    listing = backend.view("/memories")
    names: list[str] = []
    while True:
        assert len(listing) <= 2_000
        names += [ln.split("\t")[1] for ln in listing.splitlines()[2:] if "\t" in ln]
        if "listing cut" not in listing:
            break
        tail = listing.splitlines()[-1]
        first, last = tail.split("view_range [")[1].split("]")[0].split(", ")
        listing = backend.view("/memories", [int(first), int(last)])
    assert len([n for n in names if "/project_" in n]) == 700
    assert len(set(names)) == len(names)


# --- 7-12. what the model is told -------------------------------------------------------------


def test_messages_speak_in_the_models_terms(tmp_path: Path) -> None:
    ctx = device_ctx(tmp_path, "agent", folder_remote(tmp_path))
    backend = ToolMemory(ctx)
    backend.create("/memories/user_a.md", "A.\n")
    with pytest.raises(MemoryToolError, match=r"use insert_line 8 \(after the frontmatter"):
        backend.insert("/memories/user_a.md", 0, "top")
    with pytest.raises(MemoryToolError, match="line 1 of your text") as raised:
        backend.create("/memories/user_key.md", f"my key {AWS}")
    assert "line 9" not in str(raised.value)
    with pytest.raises(MemoryToolError, match="line 2 of your text"):
        backend.create("/memories/user_key.md", f"ok\nmy key {AWS}\n")
    with pytest.raises(MemoryToolError, match="control or text-direction") as raised:
        backend.create("/memories/user_\x01x.md", "x")
    assert "user_" not in str(raised.value)
    for bad in (f"/memories/x{AWS}.md/", "/x" + AWS + "/user_a.md", f"/memories/a%2f{AWS}.md",
                f"/memories/{'a' * 250}{AWS}.md", f"/memories/.x{AWS}.md"):  # fmt: skip
        with pytest.raises(MemoryToolError) as raised:
            backend.create(bad, "x")
        assert AWS not in str(raised.value)  # a refused path is described, not quoted
    with pytest.raises(MemoryToolError, match="user_a.md is a file, not a folder"):
        backend.create("/memories/user_a.md/x.md", "x")
    with pytest.raises(MemoryToolError, match="not a memory type.*user, feedback, project"):
        backend.create("/memories/user_t.md", "---\nname: t\ndescription: d\ntype: banana\n---\n")
    assert not (ctx.memory_dir / "user_t.md").exists()


@pytest.mark.parametrize(
    "path",
    [
        "/memories/CON.md",
        "/memories/nul.md",
        "/memories/com1/user_x.md",
        "/memories/user_\u202egpj.md",
        "/memories/ user_x.md",
        "/memories/notes./user_x.md",
        "/memories/user_a.md/",
    ],
)
def test_names_that_do_not_travel_are_refused(tmp_path: Path, path: str) -> None:
    backend = ToolMemory(device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    with pytest.raises(MemoryToolError):
        backend.create(path, "x\n")
    assert not [p for p in backend.root.rglob("*") if p.name != "MEMORY.md"]


def test_names_differing_only_by_case_or_normalisation_are_one_name(tmp_path: Path) -> None:
    backend = ToolMemory(device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    backend.create("/memories/user_A.md", "A\n")
    with pytest.raises(MemoryToolError, match="only in upper/lower case.*user_A.md"):
        backend.create("/memories/user_a.md", "a\n")
    backend.create("/memories/user_caf\u00e9.md", "nfc\n")
    nfd = unicodedata.normalize("NFD", "/memories/user_caf\u00e9.md")
    with pytest.raises(MemoryToolError, match="already exists"):
        backend.create(nfd, "nfd\n")
    assert "nfc" in backend.view(nfd)  # one name, however it is encoded
    backend.create("/memories/user_日本語.md", "kana\n")
    assert memory.parse((backend.root / "user_日本語.md").read_text()).meta["name"] == "user_日本語"


def test_a_rename_carries_name_type_and_index_label(tmp_path: Path) -> None:
    backend = ToolMemory(device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    created = backend.create("/memories/user_role.md", "The user is a PM.\n")
    assert "a real one-line description" in created
    backend.rename("/memories/user_role.md", "/memories/feedback_style.md")
    meta = memory.parse((backend.root / "feedback_style.md").read_text()).meta
    assert meta["name"] == "feedback_style" and memory.field(meta, "type") == "feedback"
    index = (backend.root / "MEMORY.md").read_text()
    assert "[feedback_style](feedback_style.md) — feedback style" in index
    assert "user_role" not in index and "user role" not in index


def test_two_agents_editing_one_fact_at_once_one_wins_and_the_second_is_told(
    remote_url: str, tmp_path: Path
) -> None:
    import threading

    from tests.anthropic_server import Reply, tool_calls_message

    path = "/memories/user_role.md"
    seed = ToolMemory(device_ctx(tmp_path, "seed", remote_url))
    seed.create(path, "---\nname: role\ndescription: the user's role\n---\nThe user is a PM.\n")
    servers = {name: AnthropicServer().start() for name in ("alpha", "beta")}
    agents = {n: MemsyncMemoryTool(context=device_ctx(tmp_path, n, remote_url)) for n in servers}
    both_have_read = threading.Barrier(2, timeout=30)
    for name, fake in servers.items():
        edit = {"command": "str_replace", "path": path, "old_str": "a PM",
                "new_str": f"an engineer ({name})"}  # fmt: skip
        fake.script(
            [{"command": "view", "path": path}],
            Reply(200, tool_calls_message(edit), before=both_have_read.wait),
        )
    threads = [threading.Thread(target=run_agent, args=(servers[n], agents[n])) for n in servers]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for fake in servers.values():
            fake.stop()
    answers = {name: results(fake)[1] for name, fake in servers.items()}
    told = [n for n, (e, text) in answers.items() if e or "Another device changed" in text]
    assert len(told) == 1, answers  # the second push found the first and said so
    remote = remote_files(seed.ctx)["user_role.md"].decode()
    [winner] = [n for n in answers if f"({n})" in remote]  # a fact: one version wins
    [loser] = [n for n in answers if n != winner]
    assert f"an engineer ({winner})" in answers[told[0]][1]  # shown what the file holds
    history = [v for a in agents.values() for v in a.backend.engine.state.history(path[10:])]
    assert any(f"({loser})".encode() in v.path.read_bytes() for v in history), "kept"
    for agent in agents.values():  # both devices hold the winner, now and after a sync
        agent.backend.engine.run("sync")
        assert (agent.backend.root / "user_role.md").read_text() == remote
    assert remote_files(seed.ctx)["user_role.md"].decode() == remote


def test_a_folder_holding_a_file_the_sync_refuses_is_deleted_or_moved_whole_or_not_at_all(
    tmp_path: Path,
) -> None:
    import os

    backend = ToolMemory(device_ctx(tmp_path, "agent", folder_remote(tmp_path)))
    backend.create("/memories/notes/a.md", "first\n")
    os.mkfifo(backend.root / "notes" / "pipe.md")  # a FIFO: the sync refuses it
    for command in (
        lambda: backend.delete("/memories/notes"),
        lambda: backend.rename("/memories/notes", "/memories/moved"),
    ):
        with pytest.raises(MemoryToolError, match="notes/pipe.md is not a memory file"):
            command()
        assert (backend.root / "notes" / "a.md").read_text().endswith("first\n")
    assert not (backend.root / "moved").exists()
