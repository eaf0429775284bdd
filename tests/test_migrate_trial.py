"""`memsync migrate --from URL --to URL` through the installed CLI between the real remotes:
a project carried folder → Azurite → S3 (moto) → a memory store (the fake server, through the
SDK) → a folder, with two devices. After each hop a device that never saw the project syncs
from the destination and finds every file; the other device's local history comes along
when it runs the same command (which copies nothing again); a forgotten text and a forgotten
file stay forgotten on every remote; the memory store refuses its over-size file by name and
takes the rest. Then a migration killed half-way finishes when run again, and a destination
object with other content is reported and left as it is."""

from __future__ import annotations

import time

import pytest

from memsync.stores import open_store
from memsync.stores.base import Store
from tests.conftest import NO_FCNTL
from tests.devices import make_device
from tests.memstore_server import memstore_server_fixture
from tests.netfaults import FaultProxy
from tests.s3server import MotoServer

__all__ = ["memstore_server_fixture"]

PROJECT = "e2e-project"
# the remotes' protocols are under test, not the lock: the no-fcntl pass adds nothing here
pytestmark = pytest.mark.skipif(NO_FCNTL, reason="exercises the remotes, not the lock")
PLAN = "- The launch is in May.\n- The zebra plan is secret.\n"


def _raw(url: str) -> dict[str, bytes]:
    """Every object the remote holds for the project, read through its store."""
    store: Store = open_store(url, PROJECT)
    try:
        return {key: store.get(key)[0] for key in store.list()}
    finally:
        store.close()


@pytest.mark.azure
@pytest.mark.s3
def test_a_project_travels_folder_azure_s3_memory_store_folder(
    tmp_path, azure_url, s3_url, memstore_server
):
    first, last = tmp_path / "first", tmp_path / "last"
    first.mkdir()
    last.mkdir()
    chain = [first.as_uri(), azure_url, s3_url, "memstore://memstore_test01/m", last.as_uri()]
    a, b = make_device(tmp_path, "laptop", chain[0]), make_device(tmp_path, "desktop", chain[0])
    a.write("user_role.md", "Engineer.\n", type="user")
    a.write("project_plan.md", PLAN, type="project")
    a.write("project_secret.md", "Something to forget.\n", type="project")
    a.write("reference_big.md", "x" * 110_000 + "\n", type="reference")
    links = ["user_role", "project_plan", "project_secret", "reference_big"]
    (a.memory / "MEMORY.md").write_text("".join(f"- [{n}]({n}.md) — {n}\n" for n in links))
    a.run("sync")
    b.run("sync")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("sync")
    b.run("sync")  # the pull keeps the earlier role in b's local history
    a.run("forget", "--match", "zebra", "-y")
    a.run("forget", str(a.memory / "project_secret.md"), "-y")
    # written after the forget by a device that had learned of it: new, so it stays, on the
    # way and on every device of every remote (the source's content keeps its forgets)
    a.append("project_plan.md", "- The zebra mascot came after the forget.\n")
    a.run("sync")
    b.run("sync")
    expected = a.files()
    assert "project_secret.md" not in expected and b"zebra plan" not in expected["project_plan.md"]
    assert b"zebra mascot" in expected["project_plan.md"]

    for hop, (source, dest) in enumerate(zip(chain, chain[1:], strict=False), start=1):
        to_store = dest.startswith("memstore:")
        moved = a.run("migrate", "--from", source, "--to", dest, check=1 if to_store else 0)
        assert "Traceback" not in moved.stderr and "Copied: " in moved.stdout
        assert "Left out (forgotten): 0." in moved.stdout  # nothing taken on the way
        if to_store:  # over the store's limit: refused by name, never sent; the rest copied
            assert "refused reference_big.md: not sent to the memory store: it is" in moved.stderr
            paths = [r.body.get("path") for r in memstore_server.requests if r.body]
            assert paths and not any(str(p).endswith("reference_big.md") for p in paths)
            expected.pop("reference_big.md")
        held = _raw(dest)
        assert "_memsync/forgotten.json" in held and "_memsync/project.json" in held
        assert "project_secret.md" not in held
        assert not any(b"zebra plan" in data for data in held.values()), sorted(held)
        assert b"zebra mascot" in held["project_plan.md"]
        if hop == 1:  # the edit time came along (a folder's mtime into the blob's metadata)
            edited = open_store(dest, PROJECT).fetch("user_role.md")[2]
            assert edited == pytest.approx((first / PROJECT / "user_role.md").stat().st_mtime)

        again = b.run("migrate", "--from", source, "--to", dest, check=None)
        assert "Copied: 0," in again.stdout, again.stdout + again.stderr
        assert "Local history of 2 file(s) came along." in again.stdout
        history = b.run("history", "user_role.md", "--remote", dest).stdout
        assert "  1  " in history and "replaced by a newer version from the remote" in history
        if to_store:
            assert "Kept by the remote itself (1, newest first)" in history

        newcomer = make_device(tmp_path, f"new{hop}", dest)
        newcomer.run("sync")
        assert newcomer.files() == expected


@pytest.fixture
def proxy(moto_server: MotoServer):
    server = FaultProxy(moto_server.port)
    yield server
    server.stop()


@pytest.mark.s3
def test_a_killed_migration_finishes_when_run_again_and_never_overwrites(
    tmp_path, s3_url, proxy, moto_server
):
    folder = tmp_path / "remote"
    folder.mkdir()
    source = open_store(folder.as_uri(), PROJECT)
    names = [f"feedback_{c}.md" for c in "abcdef"] + ["user_role.md"]
    for name in names:
        body = f"---\nname: {name[:-3]}\ndescription: d\ntype: feedback\n---\n{name}\n"
        source.create(name, body.encode(), edited=1_700_000_000.0)
    mover = make_device(
        tmp_path, "mover", folder.as_uri(), AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.port}"
    )
    # one copy at a time, so the run is half-way when the answer to the read-back of
    # feedback_c.md never comes: that copy landed, the migration waits, and is killed there
    mover.home.mkdir()
    (mover.home / "settings.json").write_text('{"concurrency": 1}')
    proxy.arm("stall", r"^GET [^?]*feedback_c\.md")
    run = mover.start("migrate", "--from", folder.as_uri(), "--to", s3_url)
    deadline = time.monotonic() + 60
    while not proxy.fired and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.05)
    run.kill()
    run.communicate()
    assert proxy.fired, "the migration never reached feedback_c.md"
    proxy.disarm()
    landed = _raw(s3_url)
    assert "feedback_c.md" in landed and "feedback_d.md" not in landed
    dest = open_store(s3_url, PROJECT)
    dest.create("user_role.md", b"---\nname: user_role\ndescription: d\ntype: user\n---\nChef\n")

    finished = mover.run("migrate", "--from", folder.as_uri(), "--to", s3_url, check=1)
    assert "Copied: 3, Already there: 3, Different there: 1," in finished.stdout
    assert "left alone user_role.md: the destination has other content there" in finished.stderr
    assert finished.stderr.rstrip().endswith("nothing was overwritten")
    held = _raw(s3_url)
    assert held["user_role.md"].endswith(b"Chef\n")
    assert all(held[n] == source.get(n)[0] for n in names if n != "user_role.md")
    assert dest.fetch("feedback_f.md")[2] == 1_700_000_000.0
    rerun = mover.run("migrate", "--from", folder.as_uri(), "--to", s3_url, check=1)
    assert "Copied: 0, Already there: 6, Different there: 1," in rerun.stdout
