"""The sync decision table, every combination of local × remote × record."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsync.sync import planner
from memsync.sync.planner import Kind
from memsync.sync.state import Record

REC = Record(etag="e1", sha="h1", synced_at=0.0)

# (local hash, remote etag, record) -> expected kind (None: nothing to do)
TABLE = [
    # never synced
    (None, None, None, None),
    ("h1", None, None, Kind.UPLOAD),
    (None, "e1", None, Kind.DOWNLOAD),
    ("h1", "e1", None, Kind.MERGE),
    # synced before: unchanged / changed / deleted on each side
    ("h1", "e1", REC, None),
    ("h2", "e1", REC, Kind.UPLOAD),
    ("h1", "e2", REC, Kind.DOWNLOAD),
    ("h2", "e2", REC, Kind.MERGE),
    (None, "e1", REC, Kind.DELETE_REMOTE),
    (None, "e2", REC, Kind.DOWNLOAD),  # deleted here, edited there: the edit wins
    ("h1", None, REC, Kind.DELETE_LOCAL),
    ("h2", None, REC, Kind.UPLOAD),  # deleted there, edited here: the edit wins
    (None, None, REC, Kind.FORGET),
]


@pytest.mark.parametrize(("local", "remote", "rec", "expected"), TABLE)
def test_decision_table(local, remote, rec, expected):
    action = planner.decide("f.md", local, remote, rec)
    assert (action.kind if action else None) == expected
    if action:
        assert action.reason


def test_push_kinds_never_touch_local_files():
    local = {"a.md": "h2", "new.md": "x"}
    remote = {"a.md": "e2", "b.md": "e1", "theirs.md": "t"}
    records = {"a.md": REC, "b.md": REC, "c.md": REC}
    actions = planner.plan(local, remote, records, kinds=planner.PUSH_KINDS)
    assert {(a.name, a.kind) for a in actions} == {
        ("a.md", Kind.MERGE),
        ("new.md", Kind.UPLOAD),
        ("b.md", Kind.DELETE_REMOTE),
        ("c.md", Kind.FORGET),
    }


def test_pull_kinds_never_upload():
    local = {"a.md": "h1", "new.md": "x", "b.md": "h1"}
    remote = {"a.md": "e2", "theirs.md": "t"}
    records = {"a.md": REC, "b.md": REC}
    actions = planner.plan(local, remote, records, kinds=planner.PULL_KINDS)
    assert {(a.name, a.kind) for a in actions} == {
        ("a.md", Kind.DOWNLOAD),
        ("theirs.md", Kind.DOWNLOAD),
        ("b.md", Kind.DELETE_LOCAL),
    }


def test_only_and_skip_limit_the_plan():
    local = {"a.md": "x", "b.md": "y", "c.md": "z"}
    assert [a.name for a in planner.plan(local, {}, {}, only=["b.md"])] == ["b.md"]
    assert [a.name for a in planner.plan(local, {}, {}, skip=["a.md"])] == ["b.md", "c.md"]


@pytest.mark.parametrize(
    ("deleting", "total", "refused"),
    [(5, 6, False), (6, 12, False), (6, 11, True), (7, 10, True), (3, 3, False)],
)
def test_mass_deletion_guard(deleting, total, refused):
    actions = [planner.Action(Kind.DELETE_REMOTE, f"{i}.md", "") for i in range(deleting)]
    assert planner.mass_deletion(actions, total) is refused


hashes = st.sampled_from([None, "h1", "h2"])
etags = st.sampled_from([None, "e1", "e2"])


@given(local=hashes, remote=etags, has_rec=st.booleans())
def test_unchanged_sides_never_act_and_nothing_is_silently_dropped(local, remote, has_rec):
    rec = REC if has_rec else None
    action = planner.decide("f.md", local, remote, rec)
    local_changed = local != (rec.sha if rec else None)
    remote_changed = remote != (rec.etag if rec else None)
    if not local_changed and not remote_changed:
        assert action is None
    if action is not None and action.kind in (Kind.DELETE_LOCAL, Kind.DELETE_REMOTE):
        # a deletion only ever removes content identical to the last synced version
        surviving = local if action.kind is Kind.DELETE_LOCAL else remote
        assert surviving == (rec.sha if action.kind is Kind.DELETE_LOCAL else rec.etag)
