"""A new user's trials (two and three devices through the CLI): a merge past the size limit,
conflicts seen through a skewed clock or a shared device name, compaction on a clock far
ahead, and the small things a first week turns up."""

from __future__ import annotations

import json
import textwrap
from datetime import date, timedelta

import pytest

from tests.conftest import NO_FCNTL, python_path
from tests.devices import REPO, Device, make_device
from tests.trials.shared import on_remote

# a device whose clock is `MEMSYNC_TEST_CLOCK_OFFSET` seconds off: time.time, date.today and
# datetime.now read it (loaded into the memsync subprocess as sitecustomize)
SKEWED_CLOCK = textwrap.dedent(
    """
    import datetime as _dt, os, time as _time
    _offset = float(os.environ.get("MEMSYNC_TEST_CLOCK_OFFSET", "0"))
    if _offset:
        _real = _time.time
        _time.time = lambda: _real() + _offset

        class _Date(_dt.date):
            @classmethod
            def today(cls):
                return _dt.date.fromtimestamp(_time.time())

        class _DateTime(_dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return _dt.datetime.fromtimestamp(_time.time(), tz)

        _dt.date, _dt.datetime = _Date, _DateTime
    """
)


def skewed(device: Device, seconds: float) -> Device:
    site = device.root / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SKEWED_CLOCK)
    device.env_extra.update(
        PYTHONPATH=python_path(site, REPO), MEMSYNC_TEST_CLOCK_OFFSET=str(seconds)
    )
    return device


def settings(device: Device, **values: object) -> None:
    device.home.mkdir(parents=True, exist_ok=True)
    (device.home / "settings.json").write_text(json.dumps(values))


def status(device: Device) -> dict:
    return json.loads(device.run("status", "--json", check=None).stdout)["data"]


# --- 1: a merge past the size limit --------------------------------------------------------

LIMIT = 20_000


def test_a_merge_over_the_size_limit_is_never_uploaded_and_both_devices_say_so(
    tmp_path, remote_url
):
    """Each copy is under the limit, their merge over it: the remote keeps its copy (what a
    third device pulls), the merging device keeps both sides' lines, and both list the
    conflict."""
    a, b, c = (make_device(tmp_path, n, remote_url) for n in ("laptop", "desktop", "third"))
    for device in (a, b, c):
        settings(device, max_file_bytes=LIMIT)
    name = "self_observations.md"

    def remote_copy() -> str:
        c.run("pull")
        return (c.memory / name).read_text()

    filler = "".join(f"- observation {i:04d} about how the user works\n" for i in range(380))
    a.write(name, "## Patterns\n\n" + filler, type="self_observations")
    assert LIMIT - 3600 < len((a.memory / name).read_bytes()) < LIMIT - 2600
    a.run("sync")
    b.run("sync")
    a.append(name, "".join(f"- laptop line {i}\n" for i in range(150)))
    b.append(name, "".join(f"- desktop line {i}\n" for i in range(150)))
    a.run("sync")
    merged = b.run("sync", check=1)
    assert "over the 20000-byte limit" in merged.stderr, merged
    assert "laptop line 149" in remote_copy() and "desktop line" not in remote_copy()
    here = (b.memory / name).read_text()
    assert "desktop line 149" in here and "laptop line 149" in here  # both sides' lines
    a.append(name, "- one more laptop line\n")
    a.run("sync")  # never "replaced it with the local version": nothing refused there
    for device in (a, b):
        conflicts = status(device)["conflicts"]
        assert [c["file"] for c in conflicts] == [name], (device.name, conflicts)
    assert "desktop line 149" in (b.memory / name).read_text()
    assert "one more laptop line" in remote_copy()
    again = b.run("sync", check=1)  # refused as any file over the limit, not merged again
    assert "over the 20000-byte limit" in again.stderr
    assert len(status(b)["conflicts"]) == 1
    # made to fit there (old observations removed), it goes up with every side's lines
    path = b.memory / name
    path.write_text("".join(x for x in path.open() if "observation 00" not in x))
    b.run("sync")
    b.run("resolve", name)
    a.run("sync")
    kept = remote_copy()
    for line in ("desktop line 149", "laptop line 149", "one more laptop line"):
        assert line in kept and line in (a.memory / name).read_text()
    assert status(a)["conflicts"] == [] and status(b)["conflicts"] == []


# --- 4: conflicts seen whatever the clocks and names ------------------------------------------


def _fact_conflict(a: Device, b: Device) -> None:
    """Both devices edit one fact file; `b` merges it (a conflict: the later edit wins)."""
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    b.run("sync")
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("sync")
    b.write("user_role.md", "Principal engineer.\n", type="user")
    b.run("sync")


@pytest.mark.parametrize(("merger", "reader"), [(-310, 0), (0, 310), (0, 45 * 86400)])
def test_a_conflict_merged_on_one_device_is_seen_on_the_other_whatever_their_clocks(
    tmp_path, merger, reader
):
    remote = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()
    a = skewed(make_device(tmp_path, "laptop", remote), reader)
    b = skewed(make_device(tmp_path, "desktop", remote), merger)
    _fact_conflict(a, b)
    assert [c["file"] for c in status(b)["conflicts"]] == ["user_role.md"]
    a.run("sync")
    assert [c["file"] for c in status(a)["conflicts"]] == ["user_role.md"]
    assert "user_role.md" in a.run("context").stdout


def test_a_conflict_is_seen_by_a_device_sharing_the_merging_devices_name(tmp_path):
    remote = (tmp_path / "remote").as_uri()
    (tmp_path / "remote").mkdir()
    a = make_device(tmp_path, "laptop", remote)
    b = make_device(tmp_path, "twin", remote)
    b.env_extra["MEMSYNC_DEVICE"] = "laptop"  # a `device` set in a dotfiles settings file
    _fact_conflict(a, b)
    a.run("sync")
    assert [c["file"] for c in status(a)["conflicts"]] == ["user_role.md"]
    assert [c["file"] for c in status(b)["conflicts"]] == ["user_role.md"]  # not twice
    b.run("resolve", "user_role.md")
    b.run("sync")
    a.run("sync")
    assert status(a)["conflicts"] == []


# --- 5: compaction on a clock far ahead ---------------------------------------------------------


def test_compaction_on_a_clock_45_days_ahead_keeps_todays_entries_and_says_so(pair, remote):
    a, b = pair
    skewed(a, 45 * 86400)
    today = date.today()
    old = today - timedelta(days=40)
    drafts = (
        f"## {old.isoformat()}\n\n- Draft: an old note.\n\n"
        f"## {today.isoformat()}\n\n- Draft: today's note to the team.\n"
    )
    b.write("unsent_drafts.md", drafts, type="unsent_drafts")
    b.run("sync")
    compacted = a.run("compact")
    held = f"counted from {(today + timedelta(days=1)).isoformat()}, the day after the newest date"
    assert held in compacted.stderr, compacted
    b.run("sync")
    for text in (b.memory / "unsent_drafts.md").read_text(), on_remote(remote)["unsent_drafts.md"]:
        assert "today's note to the team" in text
        assert "an old note" not in text  # what is old by the memory's own dates still goes


# --- 7: the small things ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Thumbs.db", "desktop.ini"])
def test_files_the_os_keeps_in_a_folder_are_never_synced(pair, remote, name):
    a, b = pair
    a.write("user_role.md", "Engineer.\n", type="user")
    (a.memory / name).write_bytes(b"\x00\x01 what the OS keeps for itself")
    assert "Everything is in sync" in a.run("sync").stdout + a.run("sync").stdout
    assert a.run("validate").returncode == 0
    primer = a.run("context").stdout
    assert "refused" not in primer and name not in primer
    b.run("sync")
    assert sorted(b.files()) == ["user_role.md"]


def test_the_mkdir_suggested_for_a_missing_folder_remote_works_with_a_space(tmp_path):
    import shlex
    import subprocess

    folder = tmp_path / "my drive" / "memsync remote"
    a = make_device(tmp_path, "laptop", folder.as_uri())
    a.write("user_role.md", "Engineer.\n", type="user")
    said = a.run("sync", check=3).stderr
    command = said[said.index("`mkdir -p ") + 1 :].split("`")[0]
    subprocess.run(shlex.split(command), check=True)
    assert folder.is_dir()
    a.run("sync")


@pytest.mark.skipif(NO_FCNTL, reason="a remote's protocol, not the lock: once is enough")
def test_status_says_unreachable_within_its_budget_when_the_endpoint_hangs(tmp_path):
    """A loopback server that accepts connections and never answers."""
    import socket
    import threading
    import time

    from tests.azurite import KEY

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    try:
        port = server.getsockname()[1]
        url = f"http://127.0.0.1:{port}/devstoreaccount1/mem/proj"
        a = make_device(tmp_path, "laptop", url, AZURE_STORAGE_KEY=KEY)
        a.write("user_role.md", "Engineer.\n", type="user")
        started = time.monotonic()
        proc = a.run("status", check=None, timeout=90)
        took = time.monotonic() - started
    finally:
        stop.set()
        server.close()
        for conn in held:
            conn.close()
    assert "not reachable:" in proc.stdout and "did not answer in time" in proc.stdout, proc
    assert proc.returncode == 0 and took < 20, took  # it has shown what it can


def test_export_refuses_a_missing_folder_and_an_empty_project_writes_no_archive(pair):
    a, _ = pair
    missing = a.root / "no such folder" / "backup.tar.gz"
    a.write("user_role.md", "Engineer.\n", type="user")
    a.run("sync")
    refused = a.run("export", str(missing), check=1)
    assert f"the folder {missing.parent} does not exist" in refused.stderr
    assert not missing.parent.exists()
    (a.root / "afile").write_text("")
    under_a_file = a.run("export", str(a.root / "afile" / "c.tar.gz"), check=1)
    assert "is a file, not a folder" in under_a_file.stderr, under_a_file
    empty = a.run("export", str(a.root / "x.tar.gz"), "--project", "typo-project", check=1)
    assert "nothing to export" in empty.stderr and "'typo-project'" in empty.stderr
    assert "Exported" not in empty.stdout and not (a.root / "x.tar.gz").exists()


def test_marking_a_synced_file_sensitive_says_its_earlier_copy_is_still_out_there(pair, remote):
    a, b = pair
    a.write("user_health.md", "Takes a daily walk.\n", type="user")
    a.run("sync")
    b.run("sync")
    a.write("user_health.md", "Takes a daily walk.\n", type="user", sensitivity="high")
    marked = a.run("sync")
    said = marked.stderr
    assert "still on the remote and on the other devices" in said, marked
    assert "memsync forget user_health.md" in said
    assert "Everything is in sync" not in marked.stdout, marked
    pushed = a.run("push", "user_health.md")
    assert "user_health.md stays on this device" in pushed.stdout, pushed
    assert "unchanged since the last sync" not in pushed.stdout
    # what it says to do takes the earlier copies away and keeps the marked one here
    aside = (a.memory / "user_health.md").read_bytes()
    a.run("forget", "user_health.md", "-y")
    (a.memory / "user_health.md").write_bytes(aside)
    a.run("sync")
    b.run("sync")
    assert "user_health.md" not in on_remote(remote) and "user_health.md" not in b.files()
    assert a.files()["user_health.md"] == aside


# --- 6: a container is never made without a word ------------------------------------------------


@pytest.mark.azure
def test_a_new_container_is_named_when_it_is_created(tmp_path, azure_url):
    typo = azure_url.replace("/memory", "/mem")  # a container nobody made yet
    a = make_device(tmp_path, "laptop", typo)
    a.write("user_role.md", "Engineer.\n", type="user")
    first = a.run("sync")
    container = typo.split("/")[-2]
    assert f"created the remote {typo}, which did not exist" in first.stderr, first
    assert container in first.stderr
    assert "created" not in a.run("sync").stderr  # said once: it exists now


def test_only_a_command_the_user_typed_makes_a_missing_remote_and_names_it(tmp_path, azure_url):
    """Claude's first memory write on a typo'd container does not make it: the hook tells the
    session the remote does not exist yet; import and migrate name what they make."""
    from memsync.stores import open_store

    typo = azure_url.replace("/memory", "/mem")
    a = make_device(tmp_path, "laptop", typo)
    path = a.write("user_role.md", "Engineer.\n", type="user")
    told = a.post_tool_use(path, tool="Write")
    assert told.returncode == 0
    assert "does not exist yet" in told.stdout and "memsync push" in told.stdout, told
    a.hook("stop")
    assert not open_store(typo, "e2e-project").exists(), "a hook made the container"
    archive = tmp_path / "backup.tar.gz"
    a.run("export", "--from", "local", str(archive))
    imported = a.run("import", str(archive))
    assert f"created the remote {typo}, which did not exist" in imported.stderr, imported
    container = typo.split("/")[-2]
    other = typo.replace(f"/{container}/", f"/{container}x/")
    migrated = a.run("migrate", "--remote", other)
    assert f"created the remote {other}, which did not exist" in migrated.stderr, migrated


def test_a_refused_remote_copy_replaced_by_the_local_version_is_kept_in_history(pair, remote):
    """A copy memsync never wrote (over the limit, another tool's) is kept before it goes."""
    a, _ = pair
    settings(a, max_file_bytes=LIMIT)
    a.write("self_observations.md", "## Patterns\n\n- tidy\n", type="self_observations")
    a.run("sync")
    path = remote / "e2e-project" / "self_observations.md"
    path.write_text(path.read_text() + "- elsewhere\n" * 2000)  # over the limit
    a.append("self_observations.md", "- one more\n")
    said = a.run("sync", check=None)
    assert "the refused copy is in `memsync history self_observations.md`" in said.stderr, said
    history = a.run("history", "self_observations.md").stdout
    assert "the remote copy, refused" in history


# --- a damaged remote copy ----------------------------------------------------------------------


def test_a_damaged_remote_copy_of_a_synced_file_is_held_never_taken_for_a_deletion(pair, remote):
    """A download refused is the remote's copy still, not a deletion: the local file stays and
    every sync says the file is not synced, until the copy changes or `push --force` replaces
    it."""
    from tests.trials.shared import PROJECT

    a, b = pair
    a.write("user_tea.md", "Likes green tea.\n", type="user")
    a.write("user_cake.md", "Likes cake.\n", type="user")
    a.run("sync")
    b.run("sync")
    with (remote / PROJECT / "user_tea.md").open("ab") as damaged:
        damaged.write(b"bad\x00bytes\n")
    for device in (b, b, a):  # refused, then held on every later sync and on every device
        run = device.run("sync", check=1)
        assert "refused from the remote: user_tea.md" in run.stderr, run.stderr
        assert "deleted" not in run.stdout + run.stderr
        assert "Likes green tea." in (device.memory / "user_tea.md").read_text()
    status = b.run("status", check=None).stdout
    assert "refused: user_tea.md" in status and "deleted" not in status, status
    with (b.memory / "user_tea.md").open("a") as edit:
        edit.write("And oolong.\n")
    b.run("push", "--force", "user_tea.md")
    a.run("sync")
    assert "And oolong." in (a.memory / "user_tea.md").read_text()
    assert "Everything is in sync" in a.run("sync").stdout


def test_a_project_nested_in_anothers_folder_stops_the_outer_one_and_nothing_crosses(tmp_path):
    """Project `outer` on REMOTE and project `inner` on REMOTE/outer: inner's files sit in a
    folder of outer's. One project's folder holds one project: every command of outer refuses
    in one sentence, nothing of inner's is read, written or deleted; inner syncs as before."""
    remote = tmp_path / "remote"
    remote.mkdir()
    outer = make_device(tmp_path, "outer", remote.as_uri(), MEMSYNC_PROJECT="outer")
    inner = make_device(tmp_path, "inner", (remote / "outer").as_uri(), MEMSYNC_PROJECT="inner")
    outer.write("user_role.md", "Outer's role.\n", type="user")
    outer.run("sync")
    inner.write("user_role.md", "Inner's role.\n", type="user")
    inner.write("project_plan.md", "Inner's plan.\n", type="project")
    inner.run("sync")
    outer.write("inner/project_plan.md", "Outer's clash.\n", type="project")
    for args in (("sync",), ("purge", "--all", "--yes"), ("ls",)):
        refused = outer.run(*args, check=1)
        assert "another project's memory is inside this project's folder" in refused.stderr
        assert "inner/" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert sorted(outer.files()) == ["inner/project_plan.md", "user_role.md"]
    assert (remote / "outer" / "inner" / "project_plan.md").read_text().endswith("plan.\n")
    assert "Everything is in sync" in inner.run("sync").stdout
    assert sorted(inner.files()) == ["project_plan.md", "user_role.md"]
