"""The one walk of a memory dir (sync/walk.py): what every command counts as a memory file."""

from __future__ import annotations

import os
import sys

import pytest

from memsync.sync.walk import MemoryWalk


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links and FIFOs need POSIX")
def test_the_walk_skips_what_memsync_never_syncs_and_says_why_it_refuses_the_rest(tmp_path):
    root = tmp_path / "memory"
    outside = tmp_path / "secret.md"
    outside.write_text("not memory\n")
    for name in (
        "user_a.md",
        "sub/project_b.md",
        "team/shared.md",
        "Team/other.md",
        ".hidden.md",
        "sub/.draft.md",
        "user_a.md~",
        "notes.swp",
        "_memsync/x.json",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    (root / "user_link.md").symlink_to(root / "user_a.md")
    (root / "user_out.md").symlink_to(outside)
    (root / "linked_dir").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(root / "user_pipe.md")
    walk = MemoryWalk(root)
    found = {name: path for name, path, _ in walk}
    assert sorted(found) == ["sub/project_b.md", "user_a.md", "user_link.md"]
    assert walk.refused == {
        "user_out.md": "it is a symbolic link pointing outside the memory dir",
        "user_pipe.md": "it is not a regular file",
    }
    assert walk.swept == 0


def test_a_missing_memory_dir_is_an_empty_walk(tmp_path):
    walk = MemoryWalk(tmp_path / "gone")
    assert list(walk) == [] and walk.refused == {}
