"""What lands on disk and in the records when the network between memsync and S3 misbehaves:
the fault-injecting proxy (tests/netfaults.py) in front of moto's server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from memsync.stores import open_store
from memsync.stores.s3 import S3Store
from memsync.util.errors import StoreError, Unreachable
from tests.conftest import NO_FCNTL
from tests.devices import make_device
from tests.netfaults import FaultProxy
from tests.s3server import MotoServer

pytestmark = [
    pytest.mark.s3,
    pytest.mark.skipif(NO_FCNTL, reason="the network path, not the lock, is under test"),
]
BODY = "".join(f"- line {i} of a fact that matters\n" for i in range(60))


@pytest.fixture
def proxy(moto_server: MotoServer) -> Iterator[FaultProxy]:
    server = FaultProxy(moto_server.port)
    yield server
    server.stop()


def _stores(s3_url: str, proxy: FaultProxy, monkeypatch) -> tuple[S3Store, S3Store]:
    direct = open_store(s3_url, "proj").inner  # the S3 store itself, not the encrypting wrapper
    direct.ensure()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    through = open_store(s3_url, "proj").inner
    assert isinstance(direct, S3Store) and isinstance(through, S3Store)
    through.http.backoff = through.http.jitter = 0.05
    return direct, through


@pytest.mark.parametrize("fault", ["cut", "cut-length", "lie", "garble", "reset", "503"])
def test_a_damaged_download_is_fetched_again_and_never_returned(s3_url, proxy, monkeypatch, fault):
    direct, through = _stores(s3_url, proxy, monkeypatch)
    data = BODY.encode()
    etag = direct.create("a.md", data)
    through.list()
    proxy.arm(fault)
    started = time.monotonic()
    assert through.get("a.md") == (data, etag)
    assert proxy.fired and proxy.fired[0][0] == fault
    if fault == "503":  # Retry-After: 1 was honoured, not the short back-off
        assert time.monotonic() - started >= 0.9


@pytest.mark.parametrize("fault", ["cut", "lie", "garble"])
def test_a_download_damaged_every_time_is_refused_in_one_sentence(
    s3_url, proxy, monkeypatch, fault
):
    direct, through = _stores(s3_url, proxy, monkeypatch)
    direct.create("a.md", BODY.encode())
    through.list()
    proxy.arm(fault, times=100)
    with pytest.raises((StoreError, Unreachable)) as refused:
        through.get("a.md")
    message = str(refused.value)
    assert "\n" not in message and ("a.md" in message or "cannot reach" in message)


@pytest.mark.parametrize(
    "strip, caught_by",
    [
        ({"x-amz-meta-md5"}, "MD5 its ETag gives"),
        ({"x-amz-meta-md5", "etag"}, "came .* of the .* bytes the listing gave"),
    ],
)
def test_without_the_kept_md5_the_etag_or_the_listed_size_catches_a_short_body(
    s3_url, proxy, monkeypatch, strip, caught_by
):
    direct, through = _stores(s3_url, proxy, monkeypatch)
    data = BODY.encode()
    direct.create("a.md", data)
    listed = through.list()  # and the service's check, whose writes' answers carry ETags
    proxy.strip = strip
    if "etag" in strip:  # the listing then has an ETag the answer lacks: compare sizes
        through._listed = {k: e._replace(etag='""') for k, e in listed.items()}
    proxy.arm("garble" if "etag" not in strip else "lie", times=100)
    with pytest.raises(StoreError, match=caught_by):
        through.get("a.md")
    proxy.disarm()
    assert through.get("a.md")[0] == data


def test_a_cut_listing_is_asked_again_then_one_sentence(s3_url, proxy, monkeypatch):
    direct, through = _stores(s3_url, proxy, monkeypatch)
    for i in range(30):
        direct.create(f"f{i:02}.md", BODY.encode())
    proxy.arm("cut", r"list-type=2", times=1)
    assert len(through.list()) == 30
    proxy.arm("cut", r"list-type=2", times=100)
    with pytest.raises(Unreachable) as cut:
        through.list()
    assert "\n" not in str(cut.value)


@pytest.mark.parametrize("fault", ["stall", "trickle"])
def test_no_request_outlives_the_deadline(s3_url, proxy, monkeypatch, fault):
    direct, through = _stores(s3_url, proxy, monkeypatch)
    direct.create("a.md", BODY.encode())
    proxy.arm(fault, times=100)
    through.deadline = time.monotonic() + 2
    started = time.monotonic()
    with pytest.raises(Unreachable):
        through.get("a.md")
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("fault", ["503", "reset"])
def test_a_conditional_write_met_by_slowdown_or_a_reset_is_sent_again_once(
    s3_url, proxy, monkeypatch, fault
):
    """503 SlowDown with Retry-After (or a reset before the answer): the PUT is sent again and
    lands once; a replace after it is still conditional on the ETag that landed."""
    direct, through = _stores(s3_url, proxy, monkeypatch)
    proxy.arm(fault, r"^PUT .*a\.md", times=1)
    started = time.monotonic()
    etag = through.create("a.md", b"one")
    if fault == "503":
        assert time.monotonic() - started >= 0.9
    assert [kind for kind, _ in proxy.fired] == [fault]
    assert direct.get("a.md") == (b"one", etag)
    assert through.replace("a.md", b"two", etag) != etag


def test_a_slowdown_longer_than_the_service_may_ask_is_unreachable_at_once(
    s3_url, proxy, monkeypatch
):
    direct, through = _stores(s3_url, proxy, monkeypatch)
    direct.create("a.md", b"one")
    proxy.arm("503", times=100)
    through.deadline = time.monotonic() + 1.5  # shorter than the retries' Retry-After: 1 each
    started = time.monotonic()
    with pytest.raises(Unreachable) as busy:
        through.get("a.md")
    assert time.monotonic() - started < 3 and "\n" not in str(busy.value)


def test_a_cut_short_download_never_lands_and_the_next_pull_brings_the_whole_file(
    tmp_path, s3_url, moto_server, proxy
):
    a = make_device(tmp_path, "a", s3_url)
    b = make_device(tmp_path, "b", s3_url, AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.port}")
    a.write("project_long.md", BODY, type="project")
    a.write("project_short.md", "short\n", type="project")
    a.run("push")
    proxy.arm("cut", r"project_long\.md", times=100)
    pulled = b.run("pull", check=None)
    assert pulled.returncode in (1, 3), pulled.stderr
    assert "project_long.md" in pulled.stderr and "Traceback" not in pulled.stderr
    assert not (b.memory / "project_long.md").exists()
    assert (b.memory / "project_short.md").read_bytes() == a.files()["project_short.md"]
    proxy.disarm()
    assert "in sync" not in b.run("sync").stdout.lower()
    assert b.files() == a.files()


def test_the_session_start_hook_exits_within_its_budget_with_a_stalled_download(
    tmp_path, s3_url, proxy
):
    a = make_device(tmp_path, "a", s3_url)
    b = make_device(tmp_path, "b", s3_url, AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.port}")
    for i in range(4):
        a.write(f"project_{i}.md", BODY, type="project")
    a.run("push")
    proxy.arm("stall", r"project_2\.md", times=100)
    payload = json.dumps({"session_id": "s", "cwd": str(b.root), "source": "startup"})
    started = time.monotonic()
    hook = b.run("hook", "session-start", input=payload, timeout=60)
    assert time.monotonic() - started < 5 + 3
    assert "additionalContext" in hook.stdout
    remote = a.files()
    for name, data in b.files().items():
        assert data == remote[name]
    proxy.disarm()
    b.run("pull")
    assert b.files() == remote


def test_requests_go_through_the_proxy_http_proxy_names(s3_url, proxy, monkeypatch):
    """The lean client's forward-proxy support serves S3 as it serves Azure: absolute-form
    requests to the proxy, signed for the endpoint's own Host."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.setenv(name, "")
        monkeypatch.setenv(name.lower(), "")
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
    store = open_store(s3_url, "proj").inner  # the S3 store itself, not the encrypting wrapper
    assert isinstance(store, S3Store) and store.http.proxy is not None
    store.ensure()
    etag = store.create("a.md", b"one")
    store.replace("a.md", b"two", etag)
    assert store.get("a.md")[0] == b"two" and list(store.list()) == ["a.md"]
    assert store.where != f"http://127.0.0.1:{proxy.port}"  # the endpoint is moto itself
    # every one: 6, and the first write's check of the service's conditions (three creates, two
    # refused PUTs, two taken and a refused DELETE, three removals; memsync/stores/s3probe.py)
    store.close()
    assert len(proxy.requests) == 6 + 11
