"""The token path end to end: Azurite over https with `--oauth basic`, its certificate signed by
a CA made here (trusted through SSL_CERT_FILE only), and DefaultAzureCredential finding a
managed identity at a fake App Service identity endpoint. Push, pull, sync, doctor and the
session-start hook, through the installed CLI on two devices."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.azurite import Azurite, start_azurite
from tests.devices import make_device


def _test_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a server certificate for 127.0.0.1 it signed: (ca.pem, cert.pem, key.pem)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memsync test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def _jwt() -> str:
    """A token Azurite's basic OAuth check accepts (it checks claims, not the signature)."""

    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {
        "aud": "https://storage.azure.com",
        "iss": "https://sts.windows.net/ab1f708d-50f6-404c-a006-d71b2ac7a606/",
        "iat": now - 60,
        "nbf": now - 60,
        "exp": now + 3600,
        "oid": "23657296-5cd5-45b0-a809-d972a7f4dfe1",
        "tid": "ab1f708d-50f6-404c-a006-d71b2ac7a606",
    }
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


class _IdentityEndpoint:
    """App Service's managed-identity endpoint (IDENTITY_ENDPOINT / IDENTITY_HEADER)."""

    def __init__(self) -> None:
        self.asked = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.asked += 1
                if self.headers.get("X-IDENTITY-HEADER") != "secret":
                    self.send_response(401)
                    self.end_headers()
                    return
                body = json.dumps(
                    {
                        "access_token": _jwt(),
                        "expires_on": str(int(time.time()) + 3600),
                        "resource": "https://storage.azure.com",
                        "token_type": "Bearer",
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/msi/token"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def oauth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Azurite, Path, str]]:
    folder = tmp_path_factory.mktemp("oauth")
    ca, cert, key = _test_ca(folder)
    server = start_azurite(
        folder / "data", ("--cert", str(cert), "--key", str(key), "--oauth", "basic"), "https"
    )
    identity = _IdentityEndpoint()
    yield server, ca, identity.url
    identity.stop()
    server.stop()


def _env(ca: Path | None, identity: str) -> dict[str, str]:
    env = {
        "AZURE_STORAGE_CONNECTION_STRING": "",
        "AZURE_STORAGE_KEY": "",
        "IDENTITY_ENDPOINT": identity,
        "IDENTITY_HEADER": "secret",
        "REQUESTS_CA_BUNDLE": "",
        "CURL_CA_BUNDLE": "",
        "SSL_CERT_FILE": str(ca) if ca else "",
    }
    return env


def test_the_token_path_over_https_pushes_pulls_syncs_and_primes_a_session(oauth, tmp_path):
    server, ca, identity = oauth
    url = server.url()
    a = make_device(tmp_path, "a", url, **_env(ca, identity))
    b = make_device(tmp_path, "b", url, **_env(ca, identity))
    a.write("project_plan.md", "the plan\n", type="project")
    pushed = a.run("push")
    assert "pushed: project_plan.md" in pushed.stdout, pushed.stderr
    b.run("pull")
    assert b.files() == a.files()
    (b.memory / "project_plan.md").write_text(
        (b.memory / "project_plan.md").read_text() + "- step two\n"
    )
    b.run("sync")
    assert "in sync" not in a.run("sync").stdout.lower()
    assert a.files() == b.files()
    doctor = a.run("doctor", check=None)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "DefaultAzureCredential" in doctor.stdout
    a.write("user_role.md", "Staff engineer.\n", type="user")
    a.run("push")
    payload = json.dumps({"session_id": "s", "cwd": str(b.root), "source": "startup"})
    hook = b.run("hook", "session-start", input=payload)
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "unreachable" not in context and "could not" not in context
    log = (b.home / "logs" / "memsync.log").read_text()
    assert b.files() == a.files(), log  # pulled by the hook, with a token, over https
    assert "session-start: pulled 1" in log


def test_an_untrusted_certificate_is_a_configuration_error_not_an_outage(oauth, tmp_path):
    server, _ca, identity = oauth
    device = make_device(tmp_path, "c", server.url(), **_env(None, identity))
    device.write("project_a.md", "a fact\n", type="project")
    pushed = device.run("push", check=None)
    assert pushed.returncode == 1, pushed.stderr
    assert "not trusted" in pushed.stderr and "SSL_CERT_FILE" in pushed.stderr
    assert "Traceback" not in pushed.stderr and "queued" not in pushed.stderr
    status = device.run("status", check=None)  # the same sentence, not "queued, not sent yet"
    assert status.returncode == 1 and "not trusted" in status.stderr


def test_an_https_remote_goes_through_the_proxy_https_proxy_names(oauth, tmp_path):
    """HTTPS_PROXY: a CONNECT tunnel through the proxy, TLS to the service inside it (the
    certificate still checked against the service's name), the bearer token unseen by it."""
    from tests.netfaults import FaultProxy

    server, ca, identity = oauth
    forward = FaultProxy(server.port)
    url = server.url()
    try:
        env = {**_env(ca, identity), "HTTPS_PROXY": f"http://127.0.0.1:{forward.port}"}
        env |= {"NO_PROXY": "", "no_proxy": "", "https_proxy": env["HTTPS_PROXY"]}
        a = make_device(tmp_path, "a", url, **env)
        a.write("project_tunnel.md", "through the tunnel\n", type="project")
        pushed = a.run("push")
        assert "pushed: project_tunnel.md" in pushed.stdout, pushed.stderr
        assert forward.tunnels >= 1 and forward.requests == []  # nothing in the clear
        b = make_device(tmp_path, "b", url, **_env(ca, identity))
        b.run("pull")
        assert b.files() == a.files()
    finally:
        forward.stop()
