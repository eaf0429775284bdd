"""The storage contract on a real Azurite server, plus what only the Azure boundary has:
URL parsing, credential order, error translation and exact request counts."""

from __future__ import annotations

import pytest

from memsync.stores import open_store
from memsync.util.errors import AuthError, ConfigError, NotFound, Unreachable
from tests.azurite import KEY
from tests.store_contract import StoreContract

pytestmark = pytest.mark.azure


class TestAzureStore(StoreContract):
    """memsync's own REST client (account key and SAS credentials)."""

    def open(self, url):
        return open_store(url, "proj")

    @pytest.fixture
    def store(self, azure_url):
        store = self.open(azure_url)
        store.ensure()
        yield store
        store.close()


class TestAzureStoreThroughAProxy(TestAzureStore):
    """Through the forward proxy HTTP_PROXY names, the same contract."""

    @pytest.fixture(autouse=True)
    def forward_proxy(self, azurite, monkeypatch):
        from tests.netfaults import FaultProxy

        server = FaultProxy(azurite.port)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
        yield server
        assert server.forwarded, "the requests went through the proxy"
        server.stop()


def test_prefixes_keep_projects_apart(azure_url):
    a, b = open_store(azure_url, "alpha"), open_store(azure_url, "beta")
    a.ensure()
    a.create("x.md", b"a")
    b.create("x.md", b"b")
    assert list(a.list()) == ["x.md"]
    assert a.get("x.md")[0] == b"a"
    assert b.get("x.md")[0] == b"b"


@pytest.mark.parametrize("under", ["", "/team"])
def test_projects_lists_the_prefixes_beside_this_one(azure_url, under):
    """One delimiter listing: each project once, however many blobs it holds (a first
    sync asks, to find this repository's memory under another folder's name)."""

    def opened(prefix):
        return open_store(azure_url + under, prefix)

    opened("alpha").ensure()
    opened("alpha").create("x.md", b"a")
    opened("alpha").create("_memsync/project.json", b"{}")
    opened("beta-4f72ac06b2b5").create("sub/y.md", b"b")
    if under:
        open_store(azure_url, "outside").create("z.md", b"c")
    store = opened("gamma")
    assert store.projects() == ("alpha", "beta-4f72ac06b2b5")
    assert store.stats.requests == {"list": 1}


def test_missing_container_is_not_found_then_ensure_creates_it(azure_url):
    store = open_store(azure_url, "proj")
    assert store.exists() is False
    with pytest.raises(NotFound, match="container"):
        store.list()
    store.ensure()
    store.ensure()  # idempotent
    assert store.exists() is True
    assert store.list() == {}


def test_listing_is_one_request_and_unchanged_files_cost_nothing(azure_url):
    store = open_store(azure_url, "proj")
    store.ensure()
    for i in range(30):
        store.create(f"f{i:02}.md", b"x" * i)
    before = store.stats.total()
    listing = store.list()
    assert len(listing) == 30
    assert store.stats.total() - before == 1
    assert store.stats.requests["list"] >= 1


def test_wrong_key_is_an_auth_error(azurite, monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_KEY", KEY[:-4] + "AAA=")
    store = open_store(azurite.url(), "proj")
    with pytest.raises(AuthError, match="account key"):
        store.list()


def test_connection_string_wins_over_account_key(azurite, monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    monkeypatch.setenv("AZURE_STORAGE_KEY", "bm90IHRoZSBrZXk=")
    store = open_store(azurite.url(), "proj")
    assert store.credential_kind == "connection string"
    store.ensure()
    assert store.list() == {}


def test_account_key_from_environment(azurite, monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_KEY", KEY)
    store = open_store(azurite.url(), "proj")
    assert store.credential_kind == "account key"
    store.ensure()
    store.create("a.md", b"x")
    assert list(store.list()) == ["a.md"]


def test_nothing_listening_is_unreachable(monkeypatch):
    from tests.azurite import ACCOUNT, free_port

    monkeypatch.setenv("AZURE_STORAGE_KEY", KEY)
    store = open_store(f"http://127.0.0.1:{free_port()}/{ACCOUNT}/c/p", "proj")
    with pytest.raises(Unreachable):
        store.list()


@pytest.mark.parametrize(
    ("url", "account", "container", "prefix", "account_url"),
    [
        (
            "https://acct.blob.core.windows.net/mem/team/x",
            "acct",
            "mem",
            "team/x",
            "https://acct.blob.core.windows.net",
        ),
        (
            "http://127.0.0.1:10000/devstoreaccount1/mem",
            "devstoreaccount1",
            "mem",
            "",
            "http://127.0.0.1:10000/devstoreaccount1",
        ),
        (
            "http://localhost:10000/devstoreaccount1/mem/p/",
            "devstoreaccount1",
            "mem",
            "p",
            "http://localhost:10000/devstoreaccount1",
        ),
    ],
)
def test_blob_url_parsing(url, account, container, prefix, account_url):
    from memsync.stores.azure import BlobURL

    parsed = BlobURL.parse(url)
    assert (parsed.account, parsed.container, parsed.prefix) == (account, container, prefix)
    assert parsed.account_url == account_url


@pytest.mark.parametrize(
    "url", ["https://acct.blob.core.windows.net/", "http://127.0.0.1:10000/devstoreaccount1"]
)
def test_blob_url_without_container_is_a_config_error(url):
    from memsync.stores.azure import BlobURL

    with pytest.raises(ConfigError, match="container"):
        BlobURL.parse(url)


def test_sas_signature_is_masked():
    from memsync.stores.azure import mask_url

    url = "https://a.blob.core.windows.net/c/p?sv=2024&sig=SECRETSIG%3D&se=x"
    assert "SECRETSIG" not in mask_url(url)
    assert mask_url(url).startswith("https://a.blob.core.windows.net/c/p?sv=2024&sig=***")


def test_fast_listing_pages_and_agrees_with_the_sdk(azurite, azure_url):
    store = open_store(azure_url, "proj")
    store.ensure()
    other = open_store(azure_url, "proj-other")  # a sibling prefix must not leak in
    other.create("stray.md", b"x")
    for i in range(7):
        store.create(f"d/f{i}.md", b"y" * i)
    store.page_size = 3
    before = store.stats.requests["list"]
    fast = store.list()
    assert store.stats.requests["list"] - before == 3  # ceil(7 / 3) pages
    from azure.storage.blob import ContainerClient

    from memsync.stores.azure import BlobURL
    from memsync.stores.blobhttp import quote_etag

    blob_url = BlobURL.parse(azure_url)
    sdk = ContainerClient.from_connection_string(azurite.connection_string, blob_url.container)
    base = store.base
    listed = {b.name.removeprefix(base): quote_etag(b.etag) for b in sdk.list_blobs(base)}
    assert {k: e.etag for k, e in fast.items()} == listed
    assert sorted(fast) == [f"d/f{i}.md" for i in range(7)]


def test_a_listing_name_azure_had_to_percent_encode_is_decoded():
    """Azure percent-encodes names XML cannot carry (Azurite cannot list them at all), so the
    listing decodes them and the engine's key check sees the real name and refuses it."""
    from memsync.stores.azure import parse_listing

    body = (
        b'<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs>'
        b'<Blob><Name Encoded="true">p/ctl%07.md</Name><Properties>'
        b"<Last-Modified>Mon, 23 Nov 2026 10:00:00 GMT</Last-Modified>"
        b'<Etag>"0x1"</Etag><Content-Length>5</Content-Length></Properties></Blob>'
        b"<Blob><Name>p/ok.md</Name><Properties><Etag>0x2</Etag>"
        b"<Content-Length>7</Content-Length></Properties></Blob>"
        b"<Blob><Name>other/x.md</Name><Properties><Etag>0x3</Etag></Properties></Blob>"
        b"</Blobs><NextMarker>m2</NextMarker></EnumerationResults>"
    )
    entries, marker = parse_listing(body, "p/")
    assert sorted(entries) == ["ctl\x07.md", "ok.md"]
    assert entries["ok.md"].size == 7 and marker == "m2"
    assert entries["ctl\x07.md"].modified > 0


def test_a_sas_token_in_the_url_is_the_whole_credential(azurite, monkeypatch):
    """A container SAS made with the account key, and nothing else in the environment."""
    from datetime import datetime, timedelta, timezone

    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    from memsync.stores.azure import BlobURL
    from tests.azurite import ACCOUNT

    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY"):
        monkeypatch.delenv(name, raising=False)
    url = azurite.url("team")
    container = BlobURL.parse(url).container
    sas = generate_container_sas(
        ACCOUNT,
        container,
        account_key=KEY,
        permission=ContainerSasPermissions(read=True, write=True, delete=True, list=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
    )
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string)
    open_store(url, "").ensure()  # the container, made by its owner
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")

    signed = f"{url}?{sas}"
    store = open_store(signed, "proj")
    assert store.credential_kind == "SAS token in the URL"
    etag = store.create("a b.md", b"one")
    assert store.get("a b.md") == (b"one", etag)
    store.replace("a b.md", b"two", etag)
    assert list(store.list()) == ["a b.md"]
    store.delete("a b.md", store.list()["a b.md"].etag)
    assert store.list() == {}
    assert "sig=***" in store.url


def test_a_sas_token_cut_before_its_signature_is_said_to_be_so(monkeypatch):
    """`?sv=...&sp=r` with no `sig=` (a token pasted short) is not "no credential found"."""
    from memsync.stores.azure import BlobURL, credential_for

    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY"):
        monkeypatch.delenv(name, raising=False)
    url = BlobURL.parse("https://acct.blob.core.windows.net/c/p?sv=2024-01-01&sp=r")
    with pytest.raises(ConfigError, match="without its signature"):
        credential_for(url)
