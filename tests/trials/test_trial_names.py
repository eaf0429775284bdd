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
    assert "Traceback" not in proc.stderr
    assert remote_names(remote) == [first]  # nothing of B's file reached the remote
    assert (b.memory / second).read_text().endswith("Pat prefers short answers.\n")  # kept

    status = json.loads(b.run("status", "--json").stdout)
    assert second in json.dumps(status, ensure_ascii=False)  # said until it is renamed
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
