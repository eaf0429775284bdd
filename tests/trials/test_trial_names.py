"""Names that macOS and Windows cannot keep apart, tried through the CLI on two devices.

Device A (say a Linux desktop) has `User_Pat.md` on the remote. Device B (a Linux laptop,
which could hold both) then creates `user_pat.md`, or an NFD `user_café.md` next to an NFC
one: B refuses its new file with one sentence naming both, keeps it locally, and nothing of it
reaches the remote, so a Mac or Windows device pulling later never sees two names for one
file."""

from __future__ import annotations

import json
import unicodedata

import pytest

from memsync.memory.names import nfc
from tests.devices import make_device

NFC_CAFE = unicodedata.normalize("NFC", "user_café.md")
NFD_CAFE = unicodedata.normalize("NFD", "user_café.md")


@pytest.fixture
def pair(tmp_path):
    (tmp_path / "remote").mkdir()
    url = (tmp_path / "remote").as_uri()
    return make_device(tmp_path, "a", url), make_device(tmp_path, "b", url), tmp_path / "remote"


def remote_names(remote) -> list[str]:
    """The memory files on the folder remote (not memsync's own `_memsync/` records)."""
    return sorted(
        p.name
        for p in (remote / "e2e-project").iterdir()
        if not p.name.startswith((".", "_memsync"))
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [("User_Pat.md", "user_pat.md"), (NFC_CAFE, NFD_CAFE)],
    ids=["case", "unicode-form"],
)
def test_a_name_that_would_collide_on_macos_is_refused_where_it_is_made(pair, first, second):
    a, b, remote = pair
    a.write(first, "Pat leads the storage team.\n", type="user")
    a.run("sync")
    b.run("sync")  # B pulls the first name, then creates the second one
    b.write(second, "Pat prefers short answers.\n", type="user")

    proc = b.run("sync", check=1)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("refused:")]
    assert len(lines) == 1, proc.stderr
    assert second in lines[0] and first in lines[0], lines[0]  # one sentence naming both
    if nfc(first) == nfc(second):  # names that print alike: which is which (s29c, finding 6)
        assert "accents decomposed (Unicode NFD)" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert remote_names(remote) == [first]  # nothing of B's file reached the remote
    assert (b.memory / second).read_text().endswith("Pat prefers short answers.\n")  # kept

    status = json.loads(b.run("status", "--json").stdout)
    status = status["data"]
    assert second in status["refused"], status  # said as refused until it is renamed
    assert first in status["refused"][second]
    assert second not in status["local_only"]
    validate = b.run("validate", check=1).stdout
    assert second in validate and first in validate
    a.run("sync")
    assert sorted(a.files()) == [first]  # the other device never sees the second name

    # the user merges it into the first file and deletes it: everything syncs again
    (b.memory / second).unlink()
    b.write(first, "Pat leads the storage team.\nPat prefers short answers.\n", type="user")
    b.run("sync")
    a.run("sync")
    assert "Pat prefers short answers." in (a.memory / first).read_text()
    assert remote_names(remote) == [first]


def test_names_made_on_two_devices_before_either_synced(pair):
    """A creates User_Pat.md and syncs; B, which never pulled it, creates user_pat.md: B's
    sync sees A's name in the listing and refuses its own, and pulls A's."""
    a, b, remote = pair
    a.write("User_Pat.md", "from A\n", type="user")
    a.run("sync")
    b.write("user_pat.md", "from B\n", type="user")
    proc = b.run("sync", check=1)
    assert "user_pat.md" in proc.stderr and "User_Pat.md" in proc.stderr
    assert remote_names(remote) == ["User_Pat.md"]
    assert sorted(b.files()) == ["User_Pat.md", "user_pat.md"]  # both kept on B's Linux disk


def test_a_hook_push_of_a_colliding_name_is_refused_too(pair):
    """`push FILE` (what the PostToolUse hook runs) trusts the records; it refuses as well."""
    a, b, remote = pair
    a.write("User_Pat.md", "from A\n", type="user")
    a.run("sync")
    b.run("sync")
    path = b.write("user_pat.md", "from B\n", type="user")
    proc = b.run("push", str(path), check=1)
    assert "user_pat.md" in proc.stderr and "User_Pat.md" in proc.stderr
    assert remote_names(remote) == ["User_Pat.md"]


def test_a_rename_that_changes_only_letter_case_goes_in_one_sync(pair):
    a, b, remote = pair
    a.write("User_Pat.md", "Pat leads the storage team.\n", type="user")
    a.run("sync")
    b.run("sync")
    (a.memory / "User_Pat.md").rename(a.memory / "user_pat.md")
    proc = a.run("sync")
    assert "refused" not in proc.stderr, proc.stderr
    assert remote_names(remote) == ["user_pat.md"]
    b.run("sync")
    assert sorted(b.files()) == ["user_pat.md"]
    assert b.files()["user_pat.md"] == a.files()["user_pat.md"]


@pytest.mark.parametrize("name", ["CON.md", "nul.md", "user_trail .md", "com1.notes.md"])
def test_names_windows_cannot_hold_are_refused_where_they_are_made(pair, name):
    a, b, remote = pair
    a.write("user_ok.md", "ok\n", type="user")
    a.write(name, "Pat prefers short answers.\n", type="user")
    proc = a.run("sync", check=1)
    assert f"refused: {name}:" in proc.stderr and "Windows" in proc.stderr, proc.stderr
    assert remote_names(remote) == ["user_ok.md"]
    assert (a.memory / name).exists()


@pytest.mark.parametrize("folder", ["team", "Team", "TEAM"])
def test_claude_codes_team_folder_is_not_synced_in_any_letter_case(pair, folder):
    """On macOS and Windows `Team/` is the team/ folder: it is left alone on every device,
    and pushing a file in it says so instead of "Everything is in sync."."""
    a, b, remote = pair
    a.write("user_ok.md", "ok\n", type="user")
    (a.memory / folder).mkdir()
    a.write(f"{folder}/user_shared.md", "shared by the team\n", type="user")
    a.run("sync")
    assert remote_names(remote) == ["user_ok.md"]
    proc = a.run("push", f"{folder}/user_shared.md", check=1)
    assert "team/ folder" in proc.stderr and "in sync" not in proc.stdout.lower(), proc.stderr


@pytest.mark.parametrize("renamed_edit", [False, True], ids=["rename-only", "rename-and-edit"])
def test_an_edit_racing_a_letter_case_rename_follows_the_rename(pair, renamed_edit):
    """Fresh-eyes s28c, F10: A renames user_pat.md to User_Pat.md while B edits user_pat.md.
    B's edit used to come back as user_pat.md beside User_Pat.md on the remote and on every
    device (one file on macOS and Windows), with nothing said. The edit now goes into the
    renamed file: one name everywhere, B's words in it, B told where they went."""
    a, b, remote = pair
    a.write("user_pat.md", "Pat leads the storage team.\n", type="user")
    (a.memory / "MEMORY.md").write_text("# Memory\n- [Pat](user_pat.md) — Pat\n")
    a.run("sync")
    b.run("sync")
    (a.memory / "user_pat.md").rename(a.memory / "User_Pat.md")
    (a.memory / "MEMORY.md").write_text("# Memory\n- [Pat](User_Pat.md) — Pat\n")
    if renamed_edit:
        a.append("User_Pat.md", "Pat is on call in December.\n")
    a.run("sync")
    b.append("user_pat.md", "Pat prefers short answers.\n")

    said = b.run("sync")
    assert "renamed to User_Pat.md" in said.stdout + said.stderr, said
    a.run("sync")
    for device in (a, b):
        assert sorted(device.files()) == ["MEMORY.md", "User_Pat.md"], device.name
        assert b"Pat prefers short answers." in device.files()["User_Pat.md"], device.name
        assert b"user_pat.md" not in device.files()["MEMORY.md"], device.name
    assert remote_names(remote) == ["MEMORY.md", "User_Pat.md"]
    if renamed_edit:  # both edits: the later one is the file, the other is kept and said
        status = a.run("status").stdout + b.run("status").stdout
        assert "User_Pat.md" in status and "conflict" in status.lower(), status
    else:
        assert a.files()["User_Pat.md"] == b.files()["User_Pat.md"]
        assert "conflict" not in b.run("status").stdout.lower()


def _index_of(device, *names: str) -> None:
    (device.memory / "MEMORY.md").write_text(
        "# Memory\n" + "".join(f"- [{n}]({n}) — {n}\n" for n in names)
    )


def _synced_facts(pair) -> None:
    a, b, _ = pair
    for n in (1, 2, 5):
        a.write(f"user_f{n}.md", f"Fact {n}.\n", type="user")
    _index_of(a, "user_f1.md", "user_f2.md", "user_f5.md")
    a.run("sync")
    b.run("sync")


def _rename(device, old: str, new: str) -> None:
    (device.memory / old).rename(device.memory / new)
    text = (device.memory / "MEMORY.md").read_text()
    (device.memory / "MEMORY.md").write_text(text.replace(f"({old})", f"({new})"))


def _one_name_everywhere(pair, new: str, words: str) -> None:
    a, b, remote = pair
    for device in (a, b):
        assert new in device.files() and new.lower() not in device.files(), device.name
        assert words.encode() in device.files()[new], device.name
        assert f"({new.lower()})".encode() not in device.files()["MEMORY.md"], device.name
    assert new in remote_names(remote) and new.lower() not in remote_names(remote)
    assert a.files() == b.files()


def test_a_case_rename_and_an_edit_of_the_old_name_through_the_hooks_keep_one_name(pair):
    """Fresh-eyes s29b, finding 1: B renames user_f5.md to User_F5.md, pushed by FileChanged
    as a new file while the old name stayed on the remote; A's PostToolUse hook pushed an edit
    of the old name in between, and every device ended with both names. The rename now takes
    the old name off the remote in the same push, and A's edit follows the rename."""
    a, b, remote = pair
    _synced_facts(pair)
    _rename(b, "user_f5.md", "User_F5.md")
    b.file_changed(b.memory / "User_F5.md", "add")
    a.post_tool_use(a.append("user_f5.md", "A's edit of f5.\n"))
    b.file_changed(b.memory / "user_f5.md", "unlink")
    b.file_changed(b.memory / "MEMORY.md", "change")
    for device in (a, b):
        device.hook("stop", hook_event_name="Stop")
    for device in (b, a, b):
        device.run("sync")
    _one_name_everywhere(pair, "User_F5.md", "A's edit of f5.")


def test_an_edit_pushed_by_the_hook_after_a_case_rename_synced_follows_it(pair):
    """Fresh-eyes s29b, finding 1 (second route): A's case rename is on the remote; B's
    PostToolUse hook pushes an edit of the old name, planned from the records: it put the old
    name back ("merged with the remote's version"). A listing sync of it now follows the
    rename."""
    a, b, remote = pair
    _synced_facts(pair)
    _rename(a, "user_f2.md", "User_F2.md")
    a.run("sync")
    b.post_tool_use(b.append("user_f2.md", "B's edit of f2.\n"))
    assert remote_names(remote).count("user_f2.md") == 0, remote_names(remote)
    b.run("sync")
    a.run("sync")
    _one_name_everywhere(pair, "User_F2.md", "B's edit of f2.")


def test_a_case_rename_after_the_other_device_pushed_an_edit_goes_through(pair):
    """Fresh-eyes s29b, finding 2: B's edit of user_f1.md is on the remote; A renames it to
    User_F1.md and syncs. The rename was refused as a name differing only by case, the old
    name pulled back beside it, and MEMORY.md linked User_F1.md everywhere, where no device
    had it. The remote's edit now goes into the renamed file, which goes out in one sync."""
    a, b, remote = pair
    _synced_facts(pair)
    b.post_tool_use(b.append("user_f1.md", "B's edit of f1.\n"))
    _rename(a, "user_f1.md", "User_F1.md")
    said = a.run("sync")
    assert "refused" not in said.stderr and "edit went into User_F1.md" in said.stderr, said
    b.run("sync")
    _one_name_everywhere(pair, "User_F1.md", "B's edit of f1.")


def test_a_case_rename_through_the_hooks_after_the_other_devices_edit_reached_the_remote(pair):
    """Fresh-eyes s29c, finding 1: B's edit of user_f5.md is on the remote (PostToolUse);
    A renames it to User_F5.md, and the FileChanged hook pushes the old name's `unlink`
    first: planned from the records, it pulled B's edit back as user_f5.md, and the new name
    was then refused (in the log only) beside it. The unlink now lists and takes both sides
    of the rename, B's edit merged in."""
    a, b, remote = pair
    _synced_facts(pair)
    b.post_tool_use(b.append("user_f5.md", "B's edit of f5.\n"))
    _rename(a, "user_f5.md", "User_F5.md")
    a.file_changed(a.memory / "user_f5.md", "unlink")
    a.file_changed(a.memory / "User_F5.md", "add")
    a.file_changed(a.memory / "MEMORY.md", "change")
    a.hook("stop", hook_event_name="Stop")
    assert "refused" not in (a.home / "logs" / "memsync.log").read_text()
    b.hook("stop", hook_event_name="Stop")
    for device in (b, a):
        device.run("sync")
    _one_name_everywhere(pair, "User_F5.md", "B's edit of f5.")


def test_the_stop_hook_that_follows_a_case_rename_relinks_the_index_here(pair):
    """Fresh-eyes s29c, finding 7: A's case rename is on the remote; B's edit of the old
    name, pushed by the hooks, goes into User_F2.md, and B's own MEMORY.md kept linking
    user_f2.md (a file B no longer had) until its next sync: a push does not pull the
    index. It now links the new name at once."""
    a, b, remote = pair
    _synced_facts(pair)
    _rename(a, "user_f2.md", "User_F2.md")
    a.run("sync")
    b.post_tool_use(b.append("user_f2.md", "B's edit of f2.\n"))
    b.hook("stop", hook_event_name="Stop")
    index = (b.memory / "MEMORY.md").read_text()
    assert "(User_F2.md)" in index and "(user_f2.md)" not in index, index
    assert sorted(b.files()) == ["MEMORY.md", "User_F2.md", "user_f1.md", "user_f5.md"]


def test_a_case_rename_with_an_edit_after_the_other_devices_edit_is_a_conflict_on_both(pair):
    """Fresh-eyes (the "is it done?" round), finding 2: A renames user_f1.md to User_F1.md
    and adds a line; B adds another line to user_f1.md and syncs first. A's sync kept B's
    version (a fact file: the later edit wins) and put A's in history, but said so only in a
    note: no conflict in status, `--json` or the primer, as the same edits without the rename
    give. It is now reported on both devices, like any merge's conflict."""
    a, b, remote = pair
    _synced_facts(pair)
    _rename(a, "user_f1.md", "User_F1.md")
    a.append("User_F1.md", "A's line.\n")
    b.run("sync")  # nothing yet: B's edit comes a moment after A's
    b.append("user_f1.md", "B's line.\n")
    b.run("sync")
    a.run("sync")
    b.run("sync")
    for device in (a, b):
        data = json.loads(device.run("status", "--json").stdout)["data"]
        assert [c["file"] for c in data["conflicts"]] == ["User_F1.md"], device.name
        assert "User_F1.md" in device.run("context").stdout, device.name
    _one_name_everywhere(pair, "User_F1.md", "B's line.")
