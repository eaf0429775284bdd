"""Merge bases in bases.sqlite: kept by hash, checked when read, dropped when no record needs
them (overwritten, so a forgotten file leaves no copy), and the one-file-a-base layout of
earlier versions adopted."""

from __future__ import annotations

import stat

from memsync.sync.bases import Bases
from memsync.sync.state import State
from memsync.util.fsutil import sha256


def test_bases_round_trip_and_are_private(tmp_path):
    bases = Bases(tmp_path)
    one, two = b"first version\n", b"second version\n"
    bases.put({sha256(one): one, sha256(two): two})
    assert bases.get(sha256(one)) == one
    assert bases.get(sha256(b"never kept")) is None
    assert stat.S_IMODE(bases.path.stat().st_mode) == 0o600


def test_dropped_bases_leave_no_copy_in_the_file(tmp_path):
    bases = Bases(tmp_path)
    secret, kept = b"Priya's surgery is on Tuesday\n" * 20, b"nothing private\n"
    bases.put({sha256(secret): secret, sha256(kept): kept})
    bases.keep_only([sha256(kept)])
    bases.close()
    assert Bases(tmp_path).get(sha256(kept)) == kept
    assert Bases(tmp_path).get(sha256(secret)) is None
    assert b"Priya" not in bases.path.read_bytes()


def test_a_torn_base_is_not_trusted(tmp_path):
    bases = Bases(tmp_path)
    content = b"the whole base\n"
    bases.put({sha256(content): content[:5]})  # what a torn write would leave
    assert bases.get(sha256(content)) is None


def test_a_database_sqlite_cannot_read_is_started_again(tmp_path):
    bases = Bases(tmp_path)
    bases.path.write_bytes(b"not a database at all" * 100)
    assert bases.get(sha256(b"x")) is None
    bases.put({sha256(b"x"): b"x"})
    assert bases.get(sha256(b"x")) == b"x"


def test_state_writes_bases_before_records_and_reads_its_own_unsaved_ones(tmp_path):
    state = State(tmp_path)
    state.set_synced("user_role.md", '"etag-1"', b"Engineer.\n")
    assert state.base("user_role.md") == b"Engineer.\n", "a base set in this run, not yet saved"
    state.save()
    again = State(tmp_path)
    assert again.base("user_role.md") == b"Engineer.\n"
    again.set_synced("user_role.md", '"etag-2"', b"Staff engineer.\n")
    again.save()
    assert State(tmp_path).base("user_role.md") == b"Staff engineer.\n"
    assert again.bases.get(sha256(b"Engineer.\n")) is None, "the old version's base is dropped"
