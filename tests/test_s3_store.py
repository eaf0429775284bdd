"""The storage contract on a real S3 server (moto's server mode), plus what only the S3
boundary has: URL parsing, paging, verified downloads, conditional delete, the signature."""

from __future__ import annotations

import pytest

from memsync.stores import open_store
from memsync.stores.s3 import S3Store
from memsync.util.errors import ConfigError, NotFound, PreconditionFailed
from tests.conftest import NO_FCNTL
from tests.store_contract import StoreContract


def md5_of(data: bytes) -> str:
    from memsync.stores.blobhttp import md5_base64

    return md5_base64(data)

pytestmark = pytest.mark.s3


class TestS3Store(StoreContract):
    @pytest.fixture
    def store(self, s3_url):
        store = open_store(s3_url, "proj")
        store.ensure()
        yield store
        store.close()


class TestS3StoreOnCeph(StoreContract):
    """The same contract on Ceph's radosgw (tests/cephrgw.py)."""

    @pytest.fixture
    def store(self, rgw_url):
        if NO_FCNTL:
            pytest.skip("the S3 store on a second server, not the lock (run in the first pass)")
        store = open_store(rgw_url, "proj")
        store.ensure()
        yield store
        store.close()


def test_open_store_picks_s3(s3_url):
    store = open_store(s3_url, "proj")
    assert isinstance(store.inner, S3Store)  # inside the encrypting wrapper
    assert store.settings.path_style and store.bucket_path.startswith("/t")


@pytest.mark.parametrize(
    "url",
    ["s3://", "s3:///prefix", "s3://Upper/x", "s3://b?x=1", "s3://a/p", "s3://ab/p"]
    + ["s3://bad_bucket/x", "s3://ends-with-dash-/x", "s3://user:secret-pw@bucket/x"],
)
def test_a_bad_s3_url_is_one_sentence(s3_url, url):
    with pytest.raises(ConfigError, match="does not name a bucket as s3://BUCKET/PREFIX") as got:
        open_store(url, "proj")
    assert "secret-pw" not in str(got.value)  # a password in the URL is not shown back


def test_the_listing_follows_continuation_tokens(s3_url):
    store = open_store(s3_url, "proj")
    store.ensure()
    store.page_size = 3
    etags = {f"f{i:02}.md": store.create(f"f{i:02}.md", f"body {i}".encode()) for i in range(8)}
    before = store.stats.requests["list"]
    listing = store.list()
    assert {k: e.etag for k, e in listing.items()} == etags
    assert store.stats.requests["list"] - before == 3, "8 keys at 3 a page are 3 pages"
    assert listing["f05.md"].size == len("body 5") and listing["f05.md"].modified > 0


def test_prefixes_keep_projects_apart_and_projects_lists_them(s3_url):
    a, b = open_store(s3_url, "alpha"), open_store(s3_url, "beta-4f72")
    a.ensure()
    a.create("x.md", b"a")
    b.create("sub/x.md", b"b")
    open_store(s3_url.rsplit("/", 1)[0] + "/outside", "p").create("z.md", b"c")
    assert list(a.list()) == ["x.md"] and list(b.list()) == ["sub/x.md"]
    gamma = open_store(s3_url, "gamma")
    assert gamma.projects() == ("alpha", "beta-4f72")
    assert gamma.stats.requests == {"list": 1}


def test_a_missing_bucket_is_not_found_then_ensure_creates_it(s3_url):
    store = open_store(s3_url, "proj")
    assert store.exists() is False
    with pytest.raises(NotFound, match="bucket .* does not exist"):
        store.list()
    store.ensure()
    store.ensure()  # idempotent
    assert store.exists() is True and store.list() == {}


def test_a_push_to_a_missing_bucket_is_not_found_naming_the_bucket(s3_url):
    store = open_store(s3_url, "proj")
    with pytest.raises(NotFound, match="bucket"):
        store.create("a.md", b"x")


def test_delete_is_conditional_on_the_server(s3_url):
    """moto (like S3 and R2) honours If-Match on DeleteObject: a stale ETag deletes nothing."""
    store = open_store(s3_url, "proj")
    store.ensure()
    old = store.create("a.md", b"one")
    new = store.replace("a.md", b"two", old)
    before = dict(store.stats.requests)
    with pytest.raises(PreconditionFailed):
        store.delete("a.md", old)
    assert store.stats.requests["delete"] - before.get("delete", 0) == 1
    assert store.get("a.md") == (b"two", new)
    store.delete("a.md", new)
    assert store.list() == {}


def test_uploads_carry_their_md5_and_the_edit_time(s3_url):
    store = open_store(s3_url, "proj")
    store.ensure()
    store.create("a.md", b"hello", 1_700_000_000.5)
    response = store.http.request("get", "GET", store._path("a.md"))
    assert response.headers.get("x-amz-meta-edited") == "1700000000.5"
    assert response.headers.get("x-amz-meta-md5") == "XUFAKrxLKna5cZ2REBfFkg=="
    assert response.headers.get("content-type", "").startswith("text/markdown")


def test_verify_reads_an_md5_etag_then_the_kept_md5_then_the_listed_size(s3_url):
    from memsync.stores.base import Entry

    store = open_store(s3_url, "proj")
    assert store.verify("a.md", b"hello", '"x"', "XUFAKrxLKna5cZ2REBfFkg==") is None
    assert "MD5 its writer kept" in store.verify(
        "a.md", b"hellO", '"x"', "XUFAKrxLKna5cZ2REBfFkg=="
    )
    md5 = '"5d41402abc4b2a76b9719d911017c592"'
    assert store.verify("a.md", b"hello", md5, None) is None
    assert "MD5 its ETag gives" in store.verify("a.md", b"hell", md5, None)
    # the server's own MD5 first: a body rewritten by another tool that copied the metadata
    # (its kept MD5 now stale) is the object the server holds
    assert store.verify("a.md", b"hello", md5, "stale+kept+md5+of+another+body==") is None
    assert "MD5 its ETag gives" in store.verify("a.md", b"hell", md5, md5_of(b"hell"))
    store._listed = {"a.md": Entry("a.md", '"abc-2"', 5)}
    assert "came 4 of the 5 bytes" in store.verify("a.md", b"hell", '"abc-2"', None)
    assert store.verify("a.md", b"hello", '"abc-2"', None) is None


def test_the_signature_matches_the_published_example():
    """AWS's documented GET Object example (SigV4 "Examples of the complete Version 4
    signing process", Example: GET Object)."""
    from memsync.stores.s3auth import AwsCredential, SigV4

    cred = AwsCredential("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    signer = SigV4(cred, "us-east-1")
    headers = {"Range": "bytes=0-9"}
    import calendar

    now = calendar.timegm((2013, 5, 24, 0, 0, 0))
    signer.sign("GET", "/test.txt", {}, headers, None, "examplebucket.s3.amazonaws.com", now)
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


@pytest.mark.parametrize("method", ["create", "replace"])
def test_a_conditional_request_conflict_is_a_lost_race(s3_url, monkeypatch, method):
    """S3 answers 409 ConditionalRequestConflict when two conditional writes of one key meet:
    the engine re-reads, merges and writes again, as after a 412."""
    from memsync.stores.blobhttp import Headers, Response
    from memsync.util.errors import AlreadyExists

    store = open_store(s3_url, "proj")
    store.ensure()
    etag = store.create("a.md", b"one")
    conflict = Response(
        409, Headers(), b"<Error><Code>ConditionalRequestConflict</Code></Error>", "Conflict"
    )
    monkeypatch.setattr(store.http, "request", lambda *a, **k: conflict)
    expected = AlreadyExists if method == "create" else PreconditionFailed
    with pytest.raises(expected):
        if method == "create":
            store.create("a.md", b"two")
        else:
            store.replace("a.md", b"two", etag)


def test_replace_of_a_gone_object_is_a_lost_race_not_an_error(s3_url):
    """S3 answers 404 to a PutObject with If-Match when the object is gone; the engine's
    merge path expects the PreconditionFailed Azure's 412 gives."""
    store = open_store(s3_url, "proj")
    store.ensure()
    etag = store.create("a.md", b"one")
    store.delete("a.md", etag)
    with pytest.raises(PreconditionFailed):
        store.replace("a.md", b"two", etag)


def test_names_that_need_quoting_round_trip(s3_url):
    """Spaces, '+', '#', '%', ';' and non-ASCII in a key: quoted once on the wire, signed as
    sent, and listed back (encoding-type=url) as written."""
    store = open_store(s3_url, "proj")
    store.ensure()
    names = ["a b.md", "plus+sign.md", "hash#and%percent.md", "ünï/cødé.md", "semi;colon.md"]
    for i, name in enumerate(names):
        store.create(name, f"{i}".encode())
    assert sorted(store.list()) == sorted(names)
    for i, name in enumerate(names):
        assert store.get(name)[0] == f"{i}".encode()
