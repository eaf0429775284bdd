"""Every way the AWS CLI takes a credential and an endpoint, against a moto server that checks
signatures (its IAM authorization on), and every way one can be wrong: one sentence naming what
to fix, in under 3 s, nothing changed locally."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memsync.stores import open_store
from memsync.stores.s3auth import settings_for
from memsync.util.errors import AuthError, ConfigError, NotFound, Unreachable
from tests.devices import make_device
from tests.s3server import MotoServer, bucket_url, clear_aws_env, free_port, start_moto

pytestmark = pytest.mark.s3


class AuthedMoto:
    """moto with IAM authorization: its first five requests (a user, its key and policy, a
    role and its policy) go unchecked, every later one must carry a valid SigV4 signature."""

    def __init__(self, server: MotoServer) -> None:
        import boto3

        self.server = server
        iam = boto3.client(
            "iam",
            endpoint_url=server.endpoint,
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
            region_name="us-east-1",
        )
        allow = {"Effect": "Allow", "Action": ["s3:*", "sts:*"], "Resource": "*"}
        policy = json.dumps({"Version": "2012-10-17", "Statement": [allow]})
        iam.create_user(UserName="memsync")
        key = iam.create_access_key(UserName="memsync")["AccessKey"]
        iam.put_user_policy(UserName="memsync", PolicyName="s3", PolicyDocument=policy)
        trust = {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}
        self.role = iam.create_role(
            RoleName="memsync-role",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [trust]}),
        )["Role"]["Arn"]
        iam.put_role_policy(RoleName="memsync-role", PolicyName="s3", PolicyDocument=policy)
        self.key, self.secret = key["AccessKeyId"], key["SecretAccessKey"]

    def assumed(self) -> dict[str, str]:
        """Temporary credentials (key, secret, session token) for the role."""
        import boto3

        sts = boto3.client(
            "sts",
            endpoint_url=self.server.endpoint,
            aws_access_key_id=self.key,
            aws_secret_access_key=self.secret,
            region_name="us-east-1",
        )
        return sts.assume_role(RoleArn=self.role, RoleSessionName="memsync-test")["Credentials"]


@pytest.fixture(scope="module")
def authed():
    server = start_moto({"INITIAL_NO_AUTH_ACTION_COUNT": "5"})
    try:
        yield AuthedMoto(server)
    finally:
        server.stop()


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    clear_aws_env(monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))  # no shared AWS files but the test's own
    return monkeypatch


def _device(tmp_path, url, **env):
    base = {"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": ""}
    base = {k: v for k, v in base.items() if v}
    return make_device(tmp_path, "d", url, **{**base, **env})


def _works(url: str = "") -> None:
    """A signed create, read and replace on the authorizing server. (moto's check of a
    signature mis-reads a query value or a key holding '/', '+' or '=', botocore's own
    requests included, so a listing under a prefix is not sent to it: the S3 store itself,
    not the encrypting wrapper around it, which lists before a run's first create.)"""
    store = open_store(url or bucket_url(), "p").inner
    store.ensure()
    etag = store.create("a.md", b"one")
    store.replace("a.md", b"two", etag)
    assert store.get("a.md")[0] == b"two"


def test_keys_in_the_environment(authed, clean_env):
    clean_env.setenv("AWS_ACCESS_KEY_ID", authed.key)
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", authed.secret)
    clean_env.setenv("AWS_ENDPOINT_URL", authed.server.endpoint)
    _works()


def _profile_files(home, key, secret, endpoint):
    aws = home / ".aws"
    aws.mkdir(parents=True, exist_ok=True)
    (aws / "credentials").write_text(
        "[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n"
        f"[work]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n"
    )
    (aws / "config").write_text(
        f"[profile work]\nregion = eu-west-1\ns3 =\n  endpoint_url = {endpoint}\n"
    )


def test_a_profile_in_the_shared_files_with_its_endpoint_and_region(
    tmp_path, authed, clean_env, moto_server
):
    _profile_files(tmp_path, authed.key, authed.secret, authed.server.endpoint)
    clean_env.setenv("AWS_PROFILE", "work")
    _works()
    assert settings_for("b1").region == "eu-west-1"
    # and through the CLI, on the server that does not check signatures (see _works)
    url = bucket_url()
    _profile_files(tmp_path / "d", "AKIAPROFILE", "s", moto_server.endpoint)
    d = make_device(tmp_path, "d", url, AWS_PROFILE="work")
    d.write("user_role.md", "Staff engineer.\n", type="user")
    assert "pushed: user_role.md" in d.run("sync").stdout
    doctor = json.loads(d.run("doctor", "--json").stdout)
    kinds = {c["name"]: c["detail"] for c in doctor["data"]["checks"]}
    assert kinds["credential"] == "AWS profile 'work'"


def test_keys_in_the_config_file_and_a_named_config_file(tmp_path, authed, clean_env):
    config = tmp_path / "aws-config"
    config.write_text(
        f"[default]\naws_access_key_id = {authed.key}\naws_secret_access_key = {authed.secret}\n"
        f"endpoint_url = {authed.server.endpoint}\n"
    )
    clean_env.setenv("AWS_CONFIG_FILE", str(config))
    clean_env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "absent"))
    _works()


def test_the_s3_endpoint_variable_wins_over_the_general_one(tmp_path, authed, clean_env):
    clean_env.setenv("AWS_ACCESS_KEY_ID", authed.key)
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", authed.secret)
    clean_env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing there
    clean_env.setenv("AWS_ENDPOINT_URL_S3", authed.server.endpoint)
    _works()


def test_a_session_token_is_sent_and_signed(authed, clean_env):
    temporary = authed.assumed()
    clean_env.setenv("AWS_ACCESS_KEY_ID", temporary["AccessKeyId"])
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", temporary["SecretAccessKey"])
    clean_env.setenv("AWS_SESSION_TOKEN", temporary["SessionToken"])
    clean_env.setenv("AWS_ENDPOINT_URL", authed.server.endpoint)
    _works()
    assert open_store(bucket_url(), "p").credential_kind == "AWS session credential (environment)"
    clean_env.setenv("AWS_SESSION_TOKEN", "not-the-token")
    message = _refused_quickly(lambda: open_store(bucket_url(), "p").create("a.md", b"x"))
    assert "InvalidToken" in message and "session token is not valid" in message


def test_assume_role_through_botocores_chain(tmp_path, authed, clean_env):
    """A profile with role_arn + source_profile: botocore (loaded only for this) asks STS."""
    aws = tmp_path / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        f"[base]\naws_access_key_id = {authed.key}\naws_secret_access_key = {authed.secret}\n"
    )
    (aws / "config").write_text(
        f"[profile role]\nrole_arn = {authed.role}\nsource_profile = base\n"
        f"region = us-east-1\nendpoint_url = {authed.server.endpoint}\n"
    )
    clean_env.setenv("AWS_PROFILE", "role")
    _works()
    kind = open_store(bucket_url(), "p").credential_kind
    assert kind == "AWS profile 'role' (assume-role)"


def _refused_quickly(store_call) -> str:
    started = time.monotonic()
    with pytest.raises((AuthError, ConfigError, NotFound, Unreachable)) as refused:
        store_call()
    assert time.monotonic() - started < 3.0
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_wrong_secret_or_unknown_key_is_one_sentence(tmp_path, authed, clean_env):
    clean_env.setenv("AWS_ENDPOINT_URL", authed.server.endpoint)
    clean_env.setenv("AWS_ACCESS_KEY_ID", authed.key)
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    message = _refused_quickly(lambda: open_store(bucket_url(), "p").create("a.md", b"x"))
    assert "SignatureDoesNotMatch" in message and "AWS_SECRET_ACCESS_KEY" in message
    assert "not-the-secret" not in message
    clean_env.setenv("AWS_ACCESS_KEY_ID", "AKIANOBODYKNOWS00000")
    message = _refused_quickly(lambda: open_store(bucket_url(), "p").create("a.md", b"x"))
    assert "InvalidAccessKeyId" in message


def test_the_cli_says_a_refused_key_in_one_sentence_and_changes_nothing(
    tmp_path, authed, clean_env
):
    d = _device(
        tmp_path,
        bucket_url(),
        AWS_ACCESS_KEY_ID=authed.key,
        AWS_SECRET_ACCESS_KEY="wrong",
        AWS_ENDPOINT_URL=authed.server.endpoint,
    )
    d.write("user_role.md", "Staff engineer.\n", type="user")
    before = d.files()
    proc = d.run("sync", check=1)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "SignatureDoesNotMatch" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "wrong" not in proc.stderr.replace("wrong,", "")
    assert d.files() == before
    said = d.run("doctor", check=None).stdout  # and doctor's advice is AWS's
    assert "AWS_SECRET_ACCESS_KEY" in said and "AZURE" not in said, said


class _Answering:
    """A web server answering each request as `answer(method, path)` says: (status, headers,
    body); what a misdirected endpoint or a service in an unusual state sends back."""

    def __init__(self, answer) -> None:  # type: ignore[no-untyped-def]
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                status, headers, body = answer(self.command, self.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body) if self.command != "HEAD" else 0))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_HEAD = do_DELETE = handle_one

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _expired_token_server() -> _Answering:
    """What S3 answers every request signed with an expired session token."""
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ExpiredToken</Code>'
        b"<Message>The provided token has expired.</Message></Error>"
    )
    return _Answering(lambda method, path: (400, {"Content-Type": "application/xml"}, body))


def test_an_expired_session_token_is_one_sentence(tmp_path, clean_env):
    server = _expired_token_server()
    try:
        clean_env.setenv("AWS_ENDPOINT_URL", server.endpoint)
        clean_env.setenv("AWS_ACCESS_KEY_ID", "ASIAEXPIRED000000000")
        clean_env.setenv("AWS_SECRET_ACCESS_KEY", "s")
        clean_env.setenv("AWS_SESSION_TOKEN", "old-token")
        message = _refused_quickly(lambda: open_store(bucket_url(), "p").list())
        assert "the session token has expired" in message and "aws sso login" in message
        d = _device(tmp_path, bucket_url())
        d.write("user_role.md", "Staff engineer.\n", type="user")
        before = d.files()
        proc = d.run("sync", check=1)
        assert "ExpiredToken" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert d.files() == before
    finally:
        server.stop()


def test_no_credential_and_a_missing_profile_are_one_sentence(tmp_path, clean_env):
    clean_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    message = _refused_quickly(lambda: open_store(bucket_url(), "p"))
    assert message.startswith("no AWS credential found")
    clean_env.setenv("AWS_PROFILE", "nosuch")
    message = _refused_quickly(lambda: open_store(bucket_url(), "p"))
    assert "'nosuch' (AWS_PROFILE) is in neither" in message
    clean_env.delenv("AWS_PROFILE")
    clean_env.setenv("AWS_ACCESS_KEY_ID", "AKIA")
    assert "AWS_SECRET_ACCESS_KEY is not" in _refused_quickly(lambda: open_store("s3://bkt1/x", ""))


def test_an_unreachable_endpoint_exits_3_in_under_3_seconds(tmp_path, clean_env):
    endpoint = f"http://127.0.0.1:{free_port()}"
    d = _device(
        tmp_path,
        bucket_url(),
        AWS_ACCESS_KEY_ID="AKIA0000000000000000",
        AWS_SECRET_ACCESS_KEY="s",
        AWS_ENDPOINT_URL=endpoint,
    )
    d.write("user_role.md", "Staff engineer.\n", type="user")
    before = d.files()
    started = time.monotonic()
    proc = d.run("sync", check=3)
    assert time.monotonic() - started < 3.0 + 1.0  # the process's own start-up included
    assert "unreachable" in proc.stderr and "queued" in proc.stderr
    assert d.files() == before


def test_a_missing_bucket_on_pull_names_the_bucket(tmp_path, s3_url):
    d = make_device(tmp_path, "d", s3_url)
    proc = d.run("pull", check=None)
    assert proc.returncode in (0, 1), proc.stderr
    assert "bucket" in (proc.stdout + proc.stderr) and "Traceback" not in proc.stderr


def test_region_and_addressing_follow_the_cli(clean_env):
    clean_env.setenv("AWS_ACCESS_KEY_ID", "AKIA")
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "s")
    clean_env.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    plain = settings_for("memory-bucket")
    assert plain.netloc == "memory-bucket.s3.eu-central-1.amazonaws.com" and not plain.path_style
    dotted = settings_for("memory.example.com")
    assert dotted.netloc == "s3.eu-central-1.amazonaws.com" and dotted.path_style
    clean_env.setenv("AWS_REGION", "auto")
    clean_env.setenv("AWS_ENDPOINT_URL_S3", "https://acct.r2.cloudflarestorage.com")
    r2 = settings_for("memory-bucket")
    assert (r2.scheme, r2.netloc, r2.region, r2.path_style) == (
        "https",
        "acct.r2.cloudflarestorage.com",
        "auto",
        True,
    )
    clean_env.setenv("AWS_ENDPOINT_URL_S3", "ftp://x")
    with pytest.raises(ConfigError, match="not an http:// or https:// address"):
        settings_for("memory-bucket")
    clean_env.setenv("AWS_ENDPOINT_URL_S3", "https://gateway.example.com/s3")
    with pytest.raises(ConfigError, match="has a path, .*the scheme, host and port only"):
        settings_for("memory-bucket")
    clean_env.setenv("AWS_ENDPOINT_URL_S3", "https://gateway.example.com:9000/")
    assert settings_for("memory-bucket").netloc == "gateway.example.com:9000"


def test_https_trusts_aws_ca_bundle_and_names_it_when_it_does_not_vouch(tmp_path, clean_env):
    """Real services are TLS only: moto behind its own TLS, its certificate trusted through
    AWS_CA_BUNDLE (as the AWS CLI does); another bundle there is one sentence naming it."""
    from tests.test_blobhttp import _self_signed

    (tmp_path / "ca").mkdir()
    (tmp_path / "other").mkdir()
    cert, key = _self_signed(tmp_path / "ca")
    other, _ = _self_signed(tmp_path / "other")
    server = MotoServer()
    server.extra_args = ("--ssl-cert", str(cert), "--ssl-key", str(key))
    server.scheme = "https"
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        pytest.fail(f"moto did not start with TLS: {exc}")
    try:
        for name, value in server.env_for().items():
            clean_env.setenv(name, value)
        clean_env.setenv("AWS_CA_BUNDLE", str(cert))
        _works()
        clean_env.setenv("AWS_CA_BUNDLE", str(other))
        message = _refused_quickly(lambda: open_store(bucket_url(), "p").list())
        assert (
            "is not trusted" in message
            and f"AWS_CA_BUNDLE (or the profile's ca_bundle) {other}" in message
        )
        clean_env.setenv("AWS_CA_BUNDLE", str(tmp_path / "missing.pem"))
        message = _refused_quickly(lambda: open_store(bucket_url(), "p").list())
        assert "is not a readable CA bundle" in message
    finally:
        server.stop()


def _error(code: str) -> bytes:
    return f"<?xml version='1.0'?><Error><Code>{code}</Code></Error>".encode()


def _on(tmp_path, answer, *commands: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The stderr (or, for doctor, stdout) of each memsync command against `answer`."""
    server = _Answering(answer)
    try:
        d = _device(
            tmp_path,
            "s3://bkt1/m",
            AWS_ENDPOINT_URL=server.endpoint,
            AWS_ACCESS_KEY_ID="AKIAMEMSYNCTEST00001",
            AWS_SECRET_ACCESS_KEY="s",
            AWS_REGION="us-east-1",
        )
        d.write("user_role.md", "Staff engineer.\n", type="user")
        said = []
        for command in commands:
            proc = d.run(command, check=None)
            assert "Traceback" not in proc.stderr, proc.stderr
            said.append(proc.stdout if command == "doctor" else proc.stderr)
        return said
    finally:
        server.stop()


def test_a_bucket_in_another_region_is_said_by_every_command_and_doctor(tmp_path, clean_env):
    def answer(method, path):  # type: ignore[no-untyped-def]
        headers = {"x-amz-bucket-region": "eu-west-1", "Content-Type": "application/xml"}
        return 400, headers, b"" if method == "HEAD" else _error("AuthorizationHeaderMalformed")

    pull, doctor = _on(tmp_path, answer, "pull", "doctor")
    assert "is in another region than 'us-east-1'" in pull
    assert "is in another region" in doctor and "ok   credential" in doctor


def test_a_key_that_may_not_create_the_bucket_is_told_which_right(tmp_path, clean_env):
    def answer(method, path):  # type: ignore[no-untyped-def]
        if method == "PUT" and path.rstrip("/") == "/bkt1":
            return 403, {"Content-Type": "application/xml"}, _error("AccessDenied")
        return 404, {"Content-Type": "application/xml"}, _error("NoSuchBucket")

    (push,) = _on(tmp_path, answer, "push")
    assert "may not create the bucket 'bkt1'" in push and "s3:CreateBucket" in push, push


def test_a_web_server_that_takes_everything_is_not_taken_for_s3(tmp_path, clean_env):
    def answer(method, path):  # type: ignore[no-untyped-def]
        return 200, {"Content-Type": "text/html"}, b"<html>welcome</html>"

    (push,) = _on(tmp_path, answer, "push")
    assert "it is not an S3 service" in push and "ignores conditional writes" not in push, push
