"""A service that ignores conditional writes is refused, never trusted; one that honours them is
checked once per device, endpoint and bucket (memsync/stores/s3probe.py).

Against s3rver (a real S3 server that ignores If-None-Match and If-Match), against moto behind a
proxy that only removes or changes those request headers, against moto itself, with the requests
counted from the proxy's log, and against Ceph's radosgw, which matches If-Match only without
the ETag's quotes and ignores it on DeleteObject."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memsync.stores import open_store
from memsync.stores.s3 import S3Store
from memsync.stores.s3probe import STATE_FILE, WRONG_ETAG, service_id
from memsync.util.errors import ConfigError, PreconditionFailed
from tests.conftest import NO_FCNTL
from tests.devices import make_device
from tests.netfaults import FaultProxy
from tests.s3server import MotoServer, bucket_url
from tests.s3server_others import S3rver, StrippingProxy

pytestmark = [
    pytest.mark.s3,
    pytest.mark.skipif(NO_FCNTL, reason="the remote's conditional writes, not the lock"),
]

REFUSED = "ignores conditional writes"


def _s3(url: str) -> S3Store:
    store = open_store(url, "proj").inner  # the S3 store itself, not the encrypting wrapper
    assert isinstance(store, S3Store)
    return store


def _probes(proxy: FaultProxy) -> list[str]:
    """The methods of the requests for probe objects, sorted (a round's go out at once)."""
    return sorted(r.split(" ")[0] for r in proxy.requests if "/_memsync/probe-" in r)


# three probe objects created; a create-only PUT, a stale and a current If-Match PUT of one, a
# stale If-Match DELETE of another, a bare current If-Match PUT of the third; all removed
PROBE = sorted(["PUT"] * 3 + ["PUT", "PUT", "PUT", "DELETE", "PUT"] + ["DELETE"] * 3)


@pytest.fixture
def endpoint(
    moto_server: MotoServer, s3_url: str, monkeypatch
) -> Iterator[Callable[..., FaultProxy]]:
    """`endpoint(drop)`: moto behind a proxy that removes the request headers `drop` names
    (by method), made the endpoint."""
    made: list[FaultProxy] = []

    def make(drop: dict[str, tuple[str, ...]] | None = None) -> FaultProxy:
        proxy = StrippingProxy(moto_server.port, drop or {})
        made.append(proxy)
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
        return proxy

    yield make
    for proxy in made:
        proxy.stop()


def test_s3rver_is_refused_before_anything_lands(tmp_path, s3rver_env: S3rver):
    url = bucket_url()
    store = _s3(url)
    store.ensure()  # a bucket holding a file another tool wrote: a pull would land it
    seeded = store.http.request("put", "PUT", store._path("user_role.md"), body=b"---\n---\n")
    assert seeded.status == 200
    device = make_device(tmp_path, "a", url)
    device.write("feedback_x.md", "Keep it short.\n", type="feedback")
    before = device.files()

    for command in ("pull", "sync", "push"):
        run = device.run(command, check=1)
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and REFUSED in lines[0], run.stderr
        assert "If-None-Match: * and If-Match on PutObject" in lines[0]
        assert "Traceback" not in run.stderr
    hook = device.hook("session-start", hook_event_name="SessionStart", source="startup")
    assert REFUSED in hook.stdout  # told in the session; the hook exits 0
    assert device.files() == before  # nothing pulled, nothing changed
    assert not (device.home / STATE_FILE).exists()  # a refusal is not kept: checked again
    listing = store.http.request("list", "GET", store._path(None), {"list-type": "2"})
    assert b"_memsync/probe-" not in listing.body and b"feedback_x" not in listing.body


def test_moto_without_the_put_conditions_is_refused(tmp_path, s3_url, endpoint):
    through = endpoint({"PUT": ("If-None-Match", "If-Match")})
    store = _s3(s3_url)
    store.ensure()
    with pytest.raises(ConfigError, match="If-None-Match: \\* and If-Match on PutObject"):
        store.list()
    store.close()  # waits for the removal of the probe objects, which nothing else waits for
    assert _probes(through) == PROBE
    with pytest.raises(ConfigError, match=REFUSED):
        store.create("a.md", b"x")  # nor written: the first write checks again
    assert "PUT" not in [r.split(" ")[0] for r in through.requests if "/proj/a.md" in r]


def test_a_service_ignoring_if_match_alone_is_refused_through_the_cli(tmp_path, s3_url, endpoint):
    through = endpoint({"PUT": ("If-Match",)})
    device = make_device(tmp_path, "a", s3_url)
    device.write("feedback_x.md", "Keep it short.\n", type="feedback")
    run = device.run("sync", check=1)
    assert "(If-Match on PutObject)" in run.stderr and REFUSED in run.stderr
    assert not [r for r in through.requests if "feedback_x" in r]


class WrongMatchProxy(StrippingProxy):
    """moto behind a proxy that sends every PUT's If-Match as an ETag no object has: a service
    that refuses even the current ETag."""

    def _handler(self):  # type: ignore[no-untyped-def]
        base = super()._handler()

        class Handler(base):  # type: ignore[valid-type,misc]
            def _forward(self, body):  # type: ignore[no-untyped-def]
                if self.command == "PUT" and "If-Match" in self.headers:
                    self.headers.replace_header("If-Match", WRONG_ETAG)
                return super()._forward(body)

        return Handler


def test_a_service_refusing_the_current_etag_is_refused(moto_server, s3_url, monkeypatch):
    proxy = WrongMatchProxy(moto_server.port, {})
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    try:
        store = _s3(s3_url)
        store.ensure()
        with pytest.raises(ConfigError, match="refuses a PutObject conditional on the object's"):
            store.list()
        assert not (Path(os.environ["MEMSYNC_HOME"]) / STATE_FILE).exists()
    finally:
        proxy.stop()


def test_radosgw_is_sent_the_bare_etag_and_its_deletes_read_first(rgw_url):
    store = _s3(rgw_url)
    store.ensure()
    etag = store.create("a.md", b"one")
    assert store.conditions is not None
    assert (store.conditions.bare, store.conditions.deletes) == (True, False)
    kept = json.loads((Path(os.environ["MEMSYNC_HOME"]) / STATE_FILE).read_text())
    assert [(v["bare"], v["deletes"]) for v in kept["services"].values()] == [(True, False)]
    newer = store.replace("a.md", b"two", etag)
    with pytest.raises(PreconditionFailed):
        store.replace("a.md", b"stale", etag)
    with pytest.raises(PreconditionFailed):
        store.delete("a.md", etag)
    assert store.get("a.md") == (b"two", newer)
    later = _s3(rgw_url)  # a later run takes the kept verdict: no probe, the bare form still
    newest = later.replace("a.md", b"three", newer)
    later.delete("a.md", newest)
    assert "a.md" not in later.list()


def test_deletes_without_the_condition_check_the_etag_first(s3_url, endpoint, tmp_path):
    through = endpoint({"DELETE": ("If-Match",)})
    store = _s3(s3_url)
    store.ensure()
    etag = store.create("a.md", b"one")
    assert store.conditions is not None and store.conditions.deletes is False
    kept = json.loads((Path(os.environ["MEMSYNC_HOME"]) / STATE_FILE).read_text())
    assert [v["deletes"] for v in kept["services"].values()] == [False]
    newer = store.replace("a.md", b"two", etag)  # another device's edit, say
    with pytest.raises(PreconditionFailed):
        store.delete("a.md", etag)  # the stale ETag: refused by memsync's own read
    assert store.get("a.md")[0] == b"two"
    before = len(through.requests)
    store.delete("a.md", newer)
    assert [r.split(" ")[0] for r in through.requests[before:]] == ["HEAD", "DELETE"]
    assert "a.md" not in store.list()


def test_moto_is_checked_once_then_costs_nothing(tmp_path, s3_url, endpoint):
    through = endpoint()
    first = _s3(s3_url)
    first.ensure()
    assert first.list() == {}
    first.close()
    assert _probes(through) == PROBE  # beside the listing, its one GET
    assert first.conditions is not None and first.conditions.deletes is True
    assert first.stats.requests["check"] == len(PROBE)  # shown apart in --stats
    methods = sorted(r.split(" ")[0] for r in through.requests)
    assert methods == sorted(["HEAD", "PUT"] + PROBE + ["GET"])  # ensure(), the check, a listing

    before = len(through.requests)
    again = _s3(s3_url)  # a later run on this device
    etag = again.create("a.md", b"one")
    again.list()
    again.delete("a.md", etag)
    assert [r.split(" ")[0] for r in through.requests[before:]] == ["PUT", "GET", "DELETE"]

    before = len(through.requests)
    other = _s3(bucket_url())  # another bucket on the same endpoint is checked on its own
    other.ensure()
    other.list()
    other.close()
    assert _probes(through) == sorted(PROBE * 2)
    assert len(through.requests) - before == 2 + len(PROBE) + 1  # HEAD, PUT bucket, GET

    moved = endpoint()  # the same bucket through another endpoint is checked again
    third = _s3(s3_url)
    third.list()
    third.close()
    assert _probes(moved) == PROBE and len(moved.requests) == len(PROBE) + 1


def test_a_device_pays_the_check_once_and_its_hooks_nothing(tmp_path, s3_url, endpoint):
    through = endpoint()
    a = make_device(tmp_path, "a", s3_url)
    a.write("feedback_x.md", "Keep it short.\n", type="feedback")
    a.run("sync")  # makes the bucket: a probe before it finds none (its PUTs refused, up to
    # three, as the threads meet the bucket's creation; one that lands after the bucket is
    # made is removed) and decides nothing; the next one checks
    first = Counter(_probes(through))
    extra = first - Counter(PROBE)
    assert first - extra == Counter(PROBE) and set(extra) <= {"PUT", "DELETE"}
    assert extra["DELETE"] <= extra["PUT"] <= 3
    a.run("sync")
    a.hook("session-start", hook_event_name="SessionStart", source="startup")
    b = make_device(tmp_path, "b", s3_url)  # another device checks for itself
    b.run("pull")
    assert Counter(_probes(through)) == first + Counter(PROBE)
    assert b.files() == a.files()


def test_a_verdict_holds_for_its_proxy_only(s3_url, moto_server, monkeypatch):
    """A proxy can change the headers: a verdict kept for the direct path is not taken for a
    path through a proxy (here one that removes the conditions)."""
    direct = _s3(s3_url)
    direct.ensure()
    direct.list()
    direct.close()
    proxy = StrippingProxy(moto_server.port, {"PUT": ("If-None-Match", "If-Match")})
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
            monkeypatch.setenv(name, "")
            monkeypatch.setenv(name.lower(), "")
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        through = _s3(s3_url)
        assert through.http.proxy is not None
        with pytest.raises(ConfigError, match=REFUSED):
            through.list()
        through.close()
    finally:
        proxy.stop()


def test_doctor_checks_the_service_again_whatever_was_kept(tmp_path, s3_url, endpoint):
    """A service replaced at the same address: the kept verdict says it honoured the
    conditions; doctor asks again and says it does not."""
    endpoint({"PUT": ("If-None-Match", "If-Match")})
    device = make_device(tmp_path, "a", s3_url)
    _s3(s3_url).ensure()
    where = _s3(s3_url)
    kept = {"services": {service_id(where): {"puts": True, "deletes": True, "bare": False}}}
    (device.home / STATE_FILE).parent.mkdir(parents=True, exist_ok=True)
    (device.home / STATE_FILE).write_text(json.dumps({"version": 1, **kept}))
    said = device.run("doctor", check=None).stdout
    assert "FAIL conditional writes" in said and REFUSED in said, said
