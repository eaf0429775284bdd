"""memsync on an S3 remote through the real CLI: two and three devices, eight writers on one
file, exact request counts, the admin commands, a migration between a folder remote and S3, and
Claude Code's hooks. Each runs on two S3 servers: moto's, and Ceph's RADOS Gateway
(tests/cephrgw.py), which ignores `If-Match` on DeleteObject, so deletes take the read-then-delete
path there."""

from __future__ import annotations

import json
import os

import pytest

from memsync.context import config
from memsync.stores import open_store
from memsync.sync.engine import Engine
from tests.conftest import NO_FCNTL, write_memory
from tests.devices import make_device
from tests.test_contention import contend

pytestmark = [
    pytest.mark.s3,
    pytest.mark.skipif(NO_FCNTL, reason="the S3 remote, not the lock: the first pass covers it"),
]


@pytest.fixture(params=["moto", "ceph"])
def remote(request: pytest.FixtureRequest) -> str:
    """A fresh bucket on moto's server or on radosgw, its credential in the environment."""
    return request.getfixturevalue("s3_url" if request.param == "moto" else "rgw_url")


VOICE = "## Rules learned\n- Short lines beat long ones in banter.\n"


def test_two_devices_sync_merge_and_delete_through_the_cli(tmp_path, remote):
    a, b = make_device(tmp_path, "laptop", remote), make_device(tmp_path, "desktop", remote)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.write("voice_calibration.md", VOICE, type="voice_calibration")
    a.write("feedback_tests.md", "Integration tests hit real servers.\n", type="feedback")
    a.run("sync")  # the first push makes the bucket
    b.run("sync")
    assert b.files() == a.files()
    assert "Everything is in sync." in b.run("sync").stdout

    a.append("voice_calibration.md", "- Laptop: one-line answers land.\n")
    b.append("voice_calibration.md", "- Desktop: no quizzes in a casual chat.\n")
    a.run("sync")
    b.run("sync")  # a lost race on If-Match: merged, then written conditionally again
    a.run("sync")
    assert a.files() == b.files()
    merged = (a.memory / "voice_calibration.md").read_text()
    assert "Laptop: one-line" in merged and "Desktop: no quizzes" in merged

    (a.memory / "feedback_tests.md").unlink()
    assert "deleted on the remote: feedback_tests.md" in a.run("sync").stdout
    b.run("sync")
    assert not (b.memory / "feedback_tests.md").exists()
    assert "deleted on another device" in b.run("history", "feedback_tests.md").stdout


def test_a_third_device_joins_and_an_edit_reaches_all(tmp_path, remote):
    devices = [make_device(tmp_path, name, remote) for name in ("a", "b", "c")]
    devices[0].write("project_plan.md", "Ship the S3 remote.\n", type="project")
    devices[0].run("push")
    for d in devices[1:]:
        d.run("pull")
    devices[2].append("project_plan.md", "Then benchmark it.\n")
    devices[2].run("sync")
    for d in devices[:2]:
        d.run("sync")
    assert devices[0].files() == devices[1].files() == devices[2].files()


def test_eight_processes_append_to_one_file_on_s3(tmp_path, remote):
    contend(tmp_path, remote, 8)


def _engine(tmp_path, url, name="a") -> Engine:
    mem = tmp_path / name
    mem.mkdir(exist_ok=True)
    os.environ["MEMSYNC_HOME"] = str(tmp_path / f"{name}-home")
    return Engine(config.resolve(memory_dir=mem, remote=url, project="p"))


def _delta(engine: Engine, before: dict[str, int]) -> dict[str, int]:
    now = dict(engine.store.stats.requests)
    return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}


def test_request_counts_are_exact(tmp_path, remote, monkeypatch):
    monkeypatch.setenv("MEMSYNC_HOME", str(tmp_path / "home"))
    engine = _engine(tmp_path, remote)
    for i in range(12):
        write_memory(engine.ctx.memory_dir, f"project_{i:02}.md", f"fact {i}\n", type="project")
    assert len(engine.run("push").uploaded) == 12

    before = dict(engine.store.stats.requests)
    assert engine.run("sync").changes == 0
    assert _delta(engine, before) == {"list": 1}, "a no-op sync is one listing"

    write_memory(engine.ctx.memory_dir, "project_07.md", "fact 7, revised\n", type="project")
    before = dict(engine.store.stats.requests)
    engine.run("push", [str(engine.ctx.memory_dir / "project_07.md")])
    assert _delta(engine, before) == {"put": 1}, "push FILE of a known file is one PUT"

    later = _engine(tmp_path, remote)  # a new process, a hook's say: nothing read first
    write_memory(later.ctx.memory_dir, "project_07.md", "fact 7, again\n", type="project")
    later.run("push", [str(later.ctx.memory_dir / "project_07.md")])
    assert dict(later.store.stats.requests) == {"put": 1}


def test_ls_doctor_export_import_and_prune_on_s3(tmp_path, remote):
    a = make_device(tmp_path, "a", remote)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.write("session_digest_2020-01-01.md", "## Arcs\n- old\n", type="session_digest")
    a.run("push")
    listing = json.loads(a.run("ls", "--json").stdout)
    assert {f["name"]: f["state"] for f in listing["data"]["files"]} == {
        "user_role.md": "in_sync",
        "session_digest_2020-01-01.md": "in_sync",
    }
    doctor = json.loads(a.run("doctor", "--json").stdout)
    checks = {c["name"]: c for c in doctor["data"]["checks"]}
    assert all(c["ok"] for c in checks.values()), checks
    assert checks["credential"]["detail"] == "AWS access key (environment)"
    assert "against the server" in checks["clock skew"]["detail"]

    archive = tmp_path / "backup.tar.gz"
    assert "Exported 2 file(s)" in a.run("export", str(archive)).stdout
    a.run("prune", "--older-than", "0d", "--type", "session_digest", "--yes")
    assert [f["name"] for f in json.loads(a.run("ls", "--json").stdout)["data"]["files"]] == [
        "user_role.md"
    ]
    b = make_device(tmp_path, "b", remote.rsplit("/", 1)[0] + "/restored")
    assert "Copied: 2" in b.run("import", str(archive)).stdout
    b.run("pull")
    assert sorted(b.files()) == ["session_digest_2020-01-01.md", "user_role.md"]


def test_migrate_from_a_folder_remote_to_s3_and_back(tmp_path, remote):
    folder = tmp_path / "remote"
    folder.mkdir()
    old = make_device(tmp_path, "old", folder.as_uri())
    for i in range(3):
        old.write(f"project_{i}.md", f"fact {i}\n", type="project")
    old.run("push")
    moved = make_device(tmp_path, "moved", remote)
    moved.run("pull", "--remote", folder.as_uri())
    assert "Copied: 3, Skipped: 0" in moved.run("migrate").stdout
    assert "Copied: 0, Skipped: 3" in moved.run("migrate").stdout
    fresh = make_device(tmp_path, "fresh", remote)
    fresh.run("pull")
    assert fresh.files() == old.files()
    # and back, into a new folder remote
    back = tmp_path / "back"
    back.mkdir()
    assert "Copied: 3, Skipped: 0" in fresh.run("migrate", "--remote", back.as_uri()).stdout
    store = open_store(back.as_uri(), "e2e-project")
    assert sorted(k for k in store.list() if k.endswith(".md")) == sorted(old.files())


def test_purge_empties_the_project_on_s3_and_says_what_it_cannot_reach(tmp_path, remote):
    a = make_device(tmp_path, "a", remote)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.write("project_plan.md", "Ship it.\n", type="project")
    a.run("push")
    forgot = a.run("forget", "--match", "Ship it", "--yes")  # the same caveat as purge
    assert "versioning is enabled on the bucket" in forgot.stdout, forgot.stdout
    out = a.run("purge", "--all", "--yes")
    assert "versioning is enabled on the bucket" in out.stdout + out.stderr
    left = [k for k in open_store(remote, "e2e-project").list() if k.endswith(".md")]
    assert left == []
    b = make_device(tmp_path, "b", remote)
    assert "was purged from the remote" in b.run("pull", check=1).stderr
    assert b.files() == {}


def test_purge_of_a_bucket_that_does_not_exist_makes_nothing(tmp_path, s3_url):
    a = make_device(tmp_path, "a", s3_url)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    typo = s3_url.replace("s3://t", "s3://x", 1)
    out = a.run("purge", "--all", "--yes", "--remote", typo, check=1)
    assert "does not exist, so there is nothing to purge" in out.stderr
    assert not open_store(typo, "e2e-project").inner.exists()  # not made by the purge
    assert [f["name"] for f in json.loads(a.run("ls", "--json").stdout)["data"]["files"]] == [
        "user_role.md"
    ]


def test_a_sync_on_s3_imports_no_sdk(tmp_path, s3_url):
    """Start-up is most of a small sync: a static key signs with memsync's own SigV4, so
    neither boto3/botocore nor Azure's SDK is imported (docs/s3.md has the measurement)."""
    device = make_device(tmp_path, "lean", s3_url)
    device.write("project_a.md", "a fact\n", type="project")
    snippet = (
        "import sys\n"
        "from memsync.entry import main\n"
        "sys.argv = ['memsync', 'sync']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code"
    )
    heavy = ("boto3", "botocore", "azure", "requests", "urllib3", "typer", "rich", "yaml")
    out, loaded = device.imports(snippet, heavy)
    assert "pushed: project_a.md" in out
    assert loaded == []


def test_claude_codes_hooks_carry_an_edit_between_devices_on_s3(tmp_path, remote):
    a, b = make_device(tmp_path, "a", remote), make_device(tmp_path, "b", remote)
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    b.hook("session-start", source="startup")
    assert (b.memory / "user_role.md").exists()
    path = b.append("user_role.md", "Leads the storage team.\n")
    b.post_tool_use(path)  # the PostToolUse hook pushes the one file
    a.hook("session-start", source="startup")
    assert "Leads the storage team." in (a.memory / "user_role.md").read_text()


def test_a_body_rewritten_by_another_tool_with_the_old_metadata_still_syncs(tmp_path, s3_url):
    """A tool that replaces an object's body and copies its metadata leaves memsync's kept
    MD5 stale; the server's own MD5 (the ETag) vouches for the bytes it holds."""
    a, b = make_device(tmp_path, "a", s3_url), make_device(tmp_path, "b", s3_url)
    a.write("user_u.md", "Likes tea.\n", type="user")
    a.run("sync")
    b.run("sync")
    store = open_store(s3_url, "e2e-project").inner
    path = store._path("user_u.md")
    old = store.http.request("get", "GET", path)
    body = old.body.replace(b"tea", b"coffee")
    headers = {k: v for k, v in old.headers.items() if k.lower().startswith("x-amz-meta-")}
    assert store.http.request("put", "PUT", path, headers=headers, body=body).status == 200
    b.run("sync")
    assert b"Likes coffee." in (b.memory / "user_u.md").read_bytes()
