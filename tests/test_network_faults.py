"""What lands on disk and in the records when the network between memsync and Azure misbehaves:
a fault-injecting proxy (tests/netfaults.py) in front of Azurite, as the remote's address
("direct") and as the forward proxy HTTP_PROXY names ("proxy")."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from memsync.stores import open_store
from memsync.stores.azure import BlobURL
from memsync.util.errors import StoreError, Unreachable
from tests.azurite import ACCOUNT, KEY, Azurite
from tests.conftest import NO_FCNTL
from tests.devices import Device, make_device
from tests.netfaults import FaultProxy

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="the network path, not the lock, is under test")

PATHS = ["direct", "proxy"]
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
BODY = "".join(f"- line {i} of a fact that matters\n" for i in range(60))


@pytest.fixture
def proxy(azurite: Azurite) -> Iterator[FaultProxy]:
    server = FaultProxy(azurite.port)
    yield server
    server.stop()


def _route(azure_url: str, proxy: FaultProxy, path: str) -> tuple[str, dict[str, str]]:
    """The remote URL and the environment that send requests through the proxy."""
    env = {name: "" for name in (*_PROXY_VARIABLES, *map(str.lower, _PROXY_VARIABLES))}
    if path == "proxy":
        env["HTTP_PROXY"] = env["http_proxy"] = f"http://127.0.0.1:{proxy.port}"
        return azure_url, env
    return proxy.url_for(azure_url), env


def _stores(azure_url: str, proxy: FaultProxy, monkeypatch, path: str):
    direct = open_store(azure_url, "proj")
    direct.ensure()
    url, env = _route(azure_url, proxy, path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    through = open_store(url, "proj")
    assert (through.http.proxy is not None) == (path == "proxy")
    through.http.backoff = through.http.jitter = 0.05
    return direct, through


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fault", ["cut", "cut-length", "lie", "garble", "reset", "503", "429"])
def test_a_damaged_download_is_fetched_again_and_never_returned(
    azure_url, proxy, monkeypatch, path, fault
):
    direct, through = _stores(azure_url, proxy, monkeypatch, path)
    data = BODY.encode()
    etag = direct.create("a.md", data)
    through.list()
    proxy.arm(fault)
    started = time.monotonic()
    assert through.get("a.md") == (data, etag)
    assert proxy.fired and proxy.fired[0][0] == fault
    if fault in ("503", "429"):  # Retry-After: 1 was honoured, not the half-second back-off
        assert time.monotonic() - started >= 0.9


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fault", ["cut", "lie", "garble"])
def test_a_download_damaged_every_time_is_refused_in_one_sentence(
    azure_url, proxy, monkeypatch, path, fault
):
    direct, through = _stores(azure_url, proxy, monkeypatch, path)
    direct.create("a.md", BODY.encode())
    through.list()
    proxy.arm(fault, times=100)
    with pytest.raises((StoreError, Unreachable)) as refused:
        through.get("a.md")
    message = str(refused.value)
    assert "\n" not in message and "a.md" in message or "cannot reach" in message


@pytest.mark.parametrize("path", PATHS)
def test_without_an_md5_the_listed_size_catches_a_short_body(azure_url, proxy, monkeypatch, path):
    direct, through = _stores(azure_url, proxy, monkeypatch, path)
    data = BODY.encode()
    direct.create("a.md", data)
    proxy.strip = {"content-md5", "x-ms-blob-content-md5"}
    through.list()
    proxy.arm("lie", times=100)
    with pytest.raises(StoreError, match="came .* of the .* bytes the listing gave"):
        through.get("a.md")
    proxy.disarm()
    assert through.get("a.md")[0] == data


@pytest.mark.parametrize("path", PATHS)
def test_a_cut_listing_is_asked_again_then_one_sentence(azure_url, proxy, monkeypatch, path):
    direct, through = _stores(azure_url, proxy, monkeypatch, path)
    for i in range(30):
        direct.create(f"f{i:02}.md", BODY.encode())
    proxy.arm("cut", r"comp=list", times=1)
    assert len(through.list()) == 30
    proxy.arm("cut", r"comp=list", times=100)
    with pytest.raises(Unreachable) as cut:
        through.list()
    assert "\n" not in str(cut.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fault", ["stall", "trickle"])
def test_no_request_outlives_the_deadline(azure_url, proxy, monkeypatch, path, fault):
    direct, through = _stores(azure_url, proxy, monkeypatch, path)
    direct.create("a.md", BODY.encode())
    proxy.arm(fault, times=100)
    through.deadline = time.monotonic() + 2
    started = time.monotonic()
    with pytest.raises(Unreachable):
        through.get("a.md")
    assert time.monotonic() - started < 8  # not the 90 s a trickle took


# --- whole devices through the installed CLI ---------------------------------------------------


def _pair(tmp_path, azure_url, proxy, path):
    a = make_device(tmp_path, "a", azure_url)
    url, env = _route(azure_url, proxy, path)
    b = make_device(tmp_path, "b", url, **env)
    return a, b


def _records(device: Device) -> dict[str, object]:
    out = device.run("status", "--json", check=None).stdout
    return json.loads(out) if out.strip().startswith("{") else {}


@pytest.mark.parametrize("path", PATHS)
def test_a_cut_short_download_never_lands_and_the_next_pull_brings_the_whole_file(
    tmp_path, azure_url, proxy, path
):
    a, b = _pair(tmp_path, azure_url, proxy, path)
    a.write("project_long.md", BODY, type="project")
    a.write("project_short.md", "short\n", type="project")
    a.run("push")
    proxy.arm("cut", r"project_long\.md", times=100)
    pulled = b.run("pull", check=None)
    assert pulled.returncode in (1, 3), pulled.stderr
    assert "project_long.md" in pulled.stderr and "Traceback" not in pulled.stderr
    assert not (b.memory / "project_long.md").exists()  # never landed, not even half
    assert (b.memory / "project_short.md").read_bytes() == a.files()["project_short.md"]
    proxy.disarm()
    assert "in sync" not in b.run("sync").stdout.lower()  # not recorded as synced
    assert b.files() == a.files()
    # and an edit on b now pushes the whole file, not half of it
    path_b = b.memory / "project_long.md"
    path_b.write_text(path_b.read_text() + "- one more\n")
    b.run("push")
    a.run("pull")
    assert a.files() == b.files()
    assert BODY in a.files()["project_long.md"].decode()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fault", ["stall", "trickle"])
def test_the_session_start_hook_exits_within_its_budget_with_a_stalled_download(
    tmp_path, azure_url, proxy, path, fault
):
    a, b = _pair(tmp_path, azure_url, proxy, path)
    for i in range(4):
        a.write(f"project_{i}.md", BODY, type="project")
    a.run("push")
    proxy.arm(fault, r"project_2\.md", times=100)
    payload = json.dumps({"session_id": "s", "cwd": str(b.root), "source": "startup"})
    started = time.monotonic()
    hook = b.run("hook", "session-start", input=payload, timeout=60)
    elapsed = time.monotonic() - started
    assert elapsed < 5 + 3, f"the hook took {elapsed:.1f} s with a 5 s budget"  # was 122 s
    assert "additionalContext" in hook.stdout
    remote = a.files()
    for name, data in b.files().items():  # every file here is whole; none half-written
        assert data == remote[name]
    assert not [p for p in b.memory.iterdir() if p.name.startswith(".")]
    proxy.disarm()
    b.run("pull")
    assert b.files() == remote


def test_a_fresh_pull_reads_the_manifest_beside_the_listing_not_after_it(
    tmp_path, azure_url, proxy
):
    """Over a slow network each request one after another is a round trip: a fresh pull asks
    for the project's manifest while its listing is in flight, and no more often than before."""
    a, b = _pair(tmp_path, azure_url, proxy, "direct")
    for i in range(3):
        a.write(f"project_{i}.md", f"fact {i}\n", type="project")
    a.run("push")
    proxy.rtt = 0.2
    pulled = b.run("pull", "--stats")
    assert "requests: 5 (get 4, list 1)" in pulled.stderr, pulled.stderr
    listing = next(line for _, line in proxy.events if "comp=list" in line)
    manifest = next(line for _, line in proxy.events if "_memsync/project.json" in line)
    assert proxy.events.index(("in", manifest)) < proxy.events.index(("out", listing))
    assert b.files() == a.files()


def test_a_fresh_pull_over_a_slow_link_sends_every_download_in_one_wave(
    tmp_path, azure_url, proxy
):
    """The manifest, read beside the listing, already timed the link: a fresh pull widens at
    once, so every download is in flight together (one round trip), not `concurrency` at a
    time until eight answers have been timed."""
    a, b = _pair(tmp_path, azure_url, proxy, "direct")
    for i in range(12):
        a.write(f"project_{i}.md", f"fact {i}\n", type="project")
    a.run("push")
    proxy.rtt = 0.1
    b.home.mkdir(parents=True, exist_ok=True)
    (b.home / "settings.json").write_text('{"concurrency": 2}')
    b.run("pull")
    in_flight = most = 0
    for kind, line in proxy.events:
        if re.search(r"^GET .*project_\d+\.md", line):
            in_flight += 1 if kind == "in" else -1
            most = max(most, in_flight)
    assert most > 8, f"at most {most} downloads were in flight together"
    assert b.files() == a.files()


@pytest.mark.parametrize("path", PATHS)
def test_foreign_blobs_are_listed_once_as_ignored_and_never_fetched(
    tmp_path, azure_url, proxy, path, azurite
):
    a, b = _pair(tmp_path, azure_url, proxy, path)
    a.write("project_a.md", "a fact\n", type="project")
    a.run("push")
    FRONT = "---\nname: Latin\ndescription: a fact\ntype: project\n---\n"
    direct = open_store(azure_url, "e2e-project")
    direct.create("notes.txt", b"not a memory")
    direct.create("old/fact.md.bak", b"an editor's backup")
    first = b.run("sync", "--stats")
    assert first.returncode == 0, first.stderr
    proxy.requests.clear()
    second = b.run("sync", "--stats")
    assert second.returncode == 0 and "in sync" in second.stdout.lower()
    assert [r.split()[0] for r in proxy.requests] == ["GET"]  # one listing, no download
    status = b.run("status", check=None)
    assert "notes.txt" in status.stdout and "ignored" in status.stdout
    doctor = b.run("doctor", check=None)
    assert "ignored, never fetched: notes.txt" in doctor.stdout, doctor.stdout
    container = f"the container '{BlobURL.parse(azure_url).container}' present"
    assert container in doctor.stdout, doctor.stdout  # whole: it failed once, elided (s31)
    assert not (b.memory / "notes.txt").exists()

    # a new remote file whose content is not UTF-8: refused once, then ignored (never fetched
    # again) until it changes; this device never had it, so nothing here waits on it
    direct.create("project_latin1.md", (FRONT + "caf\xe9\n").encode("latin-1"))
    refused = b.run("sync", check=1)
    assert "refused from the remote: project_latin1.md" in refused.stderr, refused.stderr
    assert "in sync" not in refused.stdout.lower()  # not "Everything is in sync." as well
    proxy.requests.clear()
    again = b.run("sync")
    assert "in sync" in again.stdout.lower() and again.stderr == "", again.stderr
    assert [r.split()[0] for r in proxy.requests] == ["GET"]  # one listing, no download
    status = b.run("status", check=None)
    assert "ignored on the remote: project_latin1.md: refused before" in status.stdout
    assert "new on the remote" not in status.stdout, status.stdout
    fixed = (FRONT + "caf\xe9\n").encode()
    etag = {k: e.etag for k, e in direct.list().items()}["project_latin1.md"]
    direct.replace("project_latin1.md", fixed, etag)  # someone fixed it: fetched again
    b.run("sync")
    assert (b.memory / "project_latin1.md").read_bytes() == fixed


def test_a_listed_name_that_is_not_utf8_is_ignored_not_fetched():
    """Azure percent-encodes a name XML cannot carry; bytes that are not UTF-8 are kept apart
    (Azurite cannot store such a name, so the listing is written here)."""
    from memsync.stores.azure import parse_listing
    from memsync.sync.remote_files import foreign

    body = (
        b"<EnumerationResults><Blobs><Blob><Name Encoded='true'>p/bad%FFname.md</Name>"
        b"<Properties><Etag>0x1</Etag><Content-Length>3</Content-Length></Properties></Blob>"
        b"</Blobs><NextMarker/></EnumerationResults>"
    )
    entries, _ = parse_listing(body, "p/")
    (key,) = entries
    assert foreign(key) == "its name is not valid UTF-8"
    assert foreign("notes.txt") and foreign("a.md") is None


def _sas(azurite: Azurite, url: str, **rights: bool) -> str:
    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    from memsync.stores.azure import BlobURL

    expiry = rights.pop("expiry", None) or datetime.now(timezone.utc) + timedelta(hours=1)
    return generate_container_sas(
        ACCOUNT,
        BlobURL.parse(url).container,
        account_key=KEY,
        permission=ContainerSasPermissions(**rights),
        expiry=expiry,
    )


def test_container_sas_rights_each_get_a_message_that_says_what_to_do(
    tmp_path, azurite, proxy, monkeypatch
):
    url = azurite.url("team")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    owner = make_device(tmp_path, "owner", url)
    owner.write("project_a.md", "a fact\n", type="project")
    owner.run("push")
    env = {"AZURE_STORAGE_CONNECTION_STRING": ""}
    full = _sas(azurite, url, read=True, write=True, delete=True, list=True)
    user = make_device(tmp_path, "user", f"{proxy.url_for(url)}?{full}", **env)
    user.run("pull")
    doctor = user.run("doctor", check=None)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr  # was: refused (a container SAS)
    archive = tmp_path / "memory.tar.gz"
    assert user.run("export", str(archive)).returncode == 0
    imported = user.run("import", str(archive), check=None)
    assert imported.returncode == 0 and "Unchanged: 1" in imported.stdout, imported.stderr
    user.write("project_b.md", "b fact\n", type="project")
    migrated = user.run("migrate", check=None)
    assert migrated.returncode == 0 and "Copied: 1" in migrated.stdout, migrated.stderr

    read_only = _sas(azurite, url, read=True, list=True)
    reader = make_device(tmp_path, "reader", f"{proxy.url_for(url)}?{read_only}", **env)
    reader.run("pull")
    for i in range(5):
        reader.write(f"project_new{i}.md", "new\n", type="project")
    proxy.requests.clear()
    pushed = reader.run("push", check=None)
    assert pushed.returncode == 1 and "permissions racwdl" in pushed.stderr
    assert len([r for r in proxy.requests if r.startswith("PUT")]) == 1  # not one per file
    said = [line for line in pushed.stderr.splitlines() if "permissions racwdl" in line]
    assert len(said) == 1 and "5 files (" in said[0], pushed.stderr  # once, naming the files

    expired = _sas(
        azurite, url, read=True, list=True, expiry=datetime.now(timezone.utc) - timedelta(hours=1)
    )
    late = make_device(tmp_path, "late", f"{proxy.url_for(url)}?{expired}", **env)
    pulled = late.run("pull", check=None)
    assert pulled.returncode == 1 and "expired" in pulled.stderr, pulled.stderr

    missing = azurite.url("nothing")
    sas = _sas(azurite, missing, read=True, write=True, delete=True, list=True)
    nowhere = make_device(tmp_path, "nowhere", f"{proxy.url_for(missing)}?{sas}", **env)
    nowhere.write("project_a.md", "a fact\n", type="project")
    pushed = nowhere.run("push", check=None)
    assert pushed.returncode == 1 and "does not exist" in pushed.stderr, pushed.stderr
    container = BlobURL.parse(missing).container
    assert f"az storage container create --name {container}" in pushed.stderr
    for command in ("pull", "doctor"):  # the advice fits the credential: push cannot create it
        said = nowhere.run(command, check=None)
        assert said.returncode == 1, said.stdout + said.stderr
        assert "memsync push" not in said.stdout + said.stderr, command
        assert f"az storage container create --name {container}" in said.stdout + said.stderr


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_no_credential_at_all_is_one_sentence_naming_what_to_set(tmp_path, scheme, monkeypatch):
    env = {
        "AZURE_STORAGE_CONNECTION_STRING": "",
        "AZURE_STORAGE_KEY": "",
        "IDENTITY_ENDPOINT": "",
        "MSI_ENDPOINT": "",
        "AZURE_CLIENT_ID": "",
        "PATH": "/usr/bin:/bin",
    }
    device = make_device(tmp_path, "bare", f"{scheme}://127.0.0.1:9/acct/c/p", **env)
    device.write("project_a.md", "a fact\n", type="project")
    started = time.monotonic()
    pushed = device.run("push", check=None)
    assert time.monotonic() - started < 10
    assert pushed.returncode == 1, pushed.stderr
    assert "no Azure credential found" in pushed.stderr and "AZURE_STORAGE_KEY" in pushed.stderr
    assert "Traceback" not in pushed.stderr and "WARNING" not in pushed.stderr
