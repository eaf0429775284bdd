"""The untrusted-certificate sentence names the CA variable that is in effect: one set
system-wide shadows an SSL_CERT_FILE given on the command line, and the user must know which."""

from __future__ import annotations

import pytest

from memsync.stores.tls import CA_VARIABLES, untrusted_error


@pytest.fixture(autouse=True)
def _no_ca_variables(monkeypatch):
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_without_a_variable_it_says_which_to_set():
    message = str(untrusted_error("https://h:1", "self-signed certificate"))
    assert "SSL_CERT_FILE or REQUESTS_CA_BUNDLE" in message
    assert "\n" not in message


def test_a_system_wide_bundle_that_shadows_ssl_cert_file_is_named(monkeypatch, tmp_path):
    system, mine = tmp_path / "system.pem", tmp_path / "mine.pem"
    system.write_text("x")
    mine.write_text("y")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(system))
    monkeypatch.setenv("SSL_CERT_FILE", str(mine))
    message = str(untrusted_error("https://h:1", "self-signed certificate"))
    assert f"the CA bundle in effect is REQUESTS_CA_BUNDLE={system}" in message
    assert "takes priority over SSL_CERT_FILE" in message


def test_the_only_variable_set_is_named_without_a_priority_note(monkeypatch, tmp_path):
    mine = tmp_path / "mine.pem"
    mine.write_text("y")
    monkeypatch.setenv("SSL_CERT_FILE", str(mine))
    message = str(untrusted_error("https://h:1", "unable to get local issuer certificate"))
    assert f"SSL_CERT_FILE={mine}" in message
    assert "takes priority over" not in message  # nothing else set to be shadowed
