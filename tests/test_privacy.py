"""Privacy and safety through the real CLI: secrets refused and masked, the sensitivity gate,
forgetting for real (files and entries), purge, a hostile remote, and private permissions."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from memsync.stores.folder import FolderStore
from tests.devices import make_device

AWS = "AKIA" + "Q4XW7ZT2MRB5KJ3N"
CONN = (
    "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
    + "Zm9vYmFy" * 11
    + "==;EndpointSuffix=core.windows.net"
)


@pytest.fixture
def remote(tmp_path):
    folder = tmp_path / "remote"
    folder.mkdir()
    return folder


@pytest.fixture
def pair(tmp_path, remote):
    return make_device(tmp_path, "laptop", remote.as_uri()), make_device(
        tmp_path, "desktop", remote.as_uri()
    )


def remote_files(remote) -> list[str]:
    base = remote / "e2e-project"
    if not base.is_dir():
        return []
    return sorted(
        p.relative_to(base).as_posix()
        for p in base.rglob("*")
        if p.is_file() and not p.name.startswith(".") and "_memsync" not in p.parts
    )


# --- secrets --------------------------------------------------------------------------------


def test_secret_refuses_that_file_pushes_the_rest_and_never_echoes(pair, remote):
    a, _ = pair
    a.write("reference_cloud.md", f"Deploy creds:\nconnection: {CONN}\n", type="reference")
    a.write("user_ok.md", "Likes short answers.\n", type="user")
    proc = a.run("push", "--stats", check=1)
    assert "refused: reference_cloud.md: line" in proc.stderr
    assert "Azure" in proc.stderr
    assert remote_files(remote) == ["user_ok.md"]
    for output in (
        proc.stdout + proc.stderr,
        a.run("status").stdout,
        a.run("status", "--json").stdout,
        a.run("validate", check=1).stdout,
    ):
        assert "Zm9vYmFy" not in output
    assert "reference_cloud.md" in a.run("status").stdout


def test_allow_flag_and_frontmatter_override_for_one_file(pair, remote):
    a, _ = pair
    a.write("reference_aws.md", f"Test fixture key {AWS}\n", type="reference")
    a.write("reference_other.md", f"Another {AWS}\n", type="reference")
    a.run("push", check=1)
    a.run("push", "--allow", "aws_access_key", "reference_aws.md")
    assert "reference_aws.md" in remote_files(remote)
    assert "reference_other.md" not in remote_files(remote)
    a.write(
        "reference_other.md",
        f"Another {AWS}\n",
        type="reference",
        allow_sensitive=["aws_access_key"],
    )
    a.run("push")
    assert "reference_other.md" in remote_files(remote)


def test_sensitivity_high_needs_consent(pair, remote):
    a, _ = pair
    # Claude Code's shape: the user's fields under `metadata:`
    (a.memory / "user_health.md").write_text(
        "---\nname: user-health\ndescription: d\nmetadata:\n  node_type: memory\n"
        "  type: user\n  sensitivity: high\n---\nPrivate.\n",
        encoding="utf-8",
    )
    a.write("user_role.md", "Engineer.\n", type="user")
    # kept local by the user's choice: not an error, so push and sync exit 0
    proc = a.run("push")
    assert "kept local" in proc.stderr and "user_health.md" in proc.stderr
    a.run("sync")
    assert remote_files(remote) == ["user_role.md"]
    status = a.run("status").stdout
    assert "kept local (sensitivity: high, no consent): user_health.md" in status
    assert "refused" not in status
    state = json.loads(a.run("status", "--json").stdout)
    assert "user_health.md" in state.get("data", state)["kept_local"]
    start = {"session_id": "s", "cwd": str(a.root), "hook_event_name": "SessionStart"}
    context = a.run("hook", "session-start", input=json.dumps(start)).stdout
    assert "user_health.md" not in context  # the primer does not nag about a choice
    a.write("user_health.md", "Private.\n", type="user", sensitivity="high")
    a.run("push")
    assert remote_files(remote) == ["user_role.md"]
    a.write("user_health.md", "Private.\n", type="user", sensitivity="high", consent=True)
    a.run("push")
    assert remote_files(remote) == ["user_health.md", "user_role.md"]


# --- forget and purge -----------------------------------------------------------------------


def test_forget_a_file_everywhere_and_no_device_resurrects_it(pair, remote):
    a, b = pair
    a.write("relationship_sam.md", "## Notes\n- Sam mentioned a divorce.\n", type="relationship")
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    b.run("pull")
    # b edits the file it still has, then a forgets it
    b.write(
        "relationship_sam.md", "## Notes\n- Sam mentioned a divorce.\n- more\n", type="relationship"
    )
    a.run("forget", "relationship_sam.md", "--yes")
    assert "relationship_sam.md" not in a.files()
    assert "relationship_sam.md" not in remote_files(remote)
    b.run("sync")
    assert "relationship_sam.md" not in b.files()
    assert "relationship_sam.md" not in remote_files(remote)
    history = list((b.home / "state").rglob("*relationship_sam*"))
    assert history == [], "other devices drop their history copies too"
    a.run("sync")
    assert "relationship_sam.md" not in a.files()
    audit = [json.loads(line) for line in (a.home / "audit.log").read_text().splitlines()]
    assert audit[-1]["action"] == "forget" and audit[-1]["files"] == ["relationship_sam.md"]
    assert "divorce" not in (a.home / "audit.log").read_text()


def test_forget_match_removes_lines_and_files_whose_frontmatter_holds_it(pair, remote):
    a, b = pair
    a.write(
        "voice_calibration.md",
        "## 2026-11-20\n\n### Missed\n- joked about Priya's surgery\n- too long\n",
        type="voice_calibration",
    )
    a.write("user_priya.md", "Priya is the user's sister.\n", type="user")
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    b.run("pull")
    proc = a.run("forget", "--match", "priya", "--yes")
    assert "will forget file: user_priya.md" in proc.stdout
    assert "will remove 1 line(s) from voice_calibration.md" in proc.stdout
    text = (a.memory / "voice_calibration.md").read_text()
    assert "Priya" not in text and "- too long" in text
    assert sorted(remote_files(remote)) == ["user_ok.md", "voice_calibration.md"]
    assert "Priya" not in (remote / "e2e-project" / "voice_calibration.md").read_text()
    b.run("sync")
    assert "user_priya.md" not in b.files()
    assert "Priya" not in (b.memory / "voice_calibration.md").read_text()
    for path in (a.home / "state").rglob("*"):
        if path.is_file():
            assert b"Priya" not in path.read_bytes(), path
    log = (a.home / "audit.log").read_text()
    entry = json.loads(log.splitlines()[-1])
    assert entry["action"] == "forget-match" and "match_sha256" in entry
    assert "surgery" not in log and "priya" not in json.dumps(entry["lines"]).lower()
    assert set(entry) >= {"at", "device", "files", "lines"} and "match" not in entry
    assert "Nothing matches on this device" in a.run("forget", "--match", "priya", "--yes").stdout


def test_forget_needs_confirmation_without_a_terminal(pair):
    a, _ = pair
    a.write("user_ok.md", "Fine.\n", type="user")
    proc = a.run("forget", "user_ok.md", check=1)
    assert "--yes" in proc.stderr
    assert "user_ok.md" in a.files()


def test_purge_erases_remote_and_state_and_says_what_it_cannot_reach(pair, remote):
    a, _ = pair
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    a.run("purge", "--all", check=1)  # refuses without --yes
    proc = a.run("purge", "--all", "--yes")
    assert remote_files(remote) == []
    state_dirs = list((a.home / "state").iterdir())
    assert all(sorted(p.name for p in d.iterdir()) == ["lock", "meta.json"] for d in state_dirs)
    assert all(set(json.loads((d / "meta.json").read_text())) == {"purged"} for d in state_dirs)
    assert "other devices" in proc.stdout + proc.stderr
    assert json.loads((a.home / "audit.log").read_text().splitlines()[-1])["action"] == "purge"


# --- a hostile remote -----------------------------------------------------------------------


def test_hostile_remote_is_refused_and_nothing_lands_outside(pair, remote, tmp_path):
    a, _ = pair
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    base = remote / "e2e-project"
    (base / "sub").mkdir()
    (base / "sub" / "binary.md").write_bytes(b"\x00\x01\x02\xff" * 10)
    (base / "latin1.md").write_bytes("---\nname: x\ndescription: é\n---\n".encode("latin-1"))
    (base / "nofront.md").write_text("no frontmatter here\n")
    (base / "badyaml.md").write_text("---\nname: [unclosed\n---\nbody\n")
    (base / "huge.md").write_text("---\nname: h\ndescription: h\n---\n" + "x" * 2_000_000)
    proc = a.run("pull", check=1)
    for name in ("sub/binary.md", "latin1.md", "nofront.md", "badyaml.md", "huge.md"):
        lines = [x for x in proc.stderr.splitlines() if f"remote: {name}:" in x]
        assert len(lines) == 1, (name, proc.stderr)
        assert not (a.memory / name).exists()
    assert sorted(a.files()) == ["user_ok.md"]


@pytest.mark.parametrize(
    "key", ["../escape.md", "/etc/evil.md", "a\\b.md", "ctl\x07.md", "..md/../x.md"]
)
def test_hostile_keys_never_write_outside_the_memory_dir(tmp_path, key):
    from memsync.context import config
    from memsync.stores.memory import MemoryStore
    from memsync.sync.engine import Engine

    store = MemoryStore("p")
    # written straight into the store, past its own key checks
    store.objects[key] = (b"---\nname: x\ndescription: y\n---\nevil\n", '"e1"', 0.0)
    mem = tmp_path / "deep" / "mem"
    mem.mkdir(parents=True)
    ctx = config.resolve(memory_dir=mem, remote="memory://hostile", project="p")
    result = Engine(ctx, store).run("pull")
    assert key in result.refused_remote
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


@pytest.mark.azure
def test_hostile_azure_remote_is_refused_and_nothing_lands_outside(tmp_path, azurite, azure_url):
    """The same corpus on Azurite, uploaded past memsync with the SDK. Of the hostile keys only
    an absolute one (a doubled slash) can be stored: Azure turns a backslash into `/`, dot
    segments never reach it, and Azurite cannot list a name with a control character."""
    from azure.storage.blob import ContainerClient

    a = make_device(tmp_path / "dev", "laptop", azure_url)
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    container, prefix = azure_url.split("/")[-2:]
    client = ContainerClient.from_connection_string(azurite.connection_string, container)
    front = "---\nname: x\ndescription: y\n---\n"
    corpus = {
        "sub/binary.md": b"\x00\x01\x02\xff" * 10,
        "latin1.md": "---\nname: x\ndescription: é\n---\n".encode("latin-1"),
        "nofront.md": b"no frontmatter here\n",
        "badyaml.md": b"---\nname: [unclosed\n---\nbody\n",
        "huge.md": (front + "x" * 2_000_000).encode(),
        "/abs.md": (front + "evil\n").encode(),
    }
    for key, data in corpus.items():
        client.upload_blob(f"{prefix}/e2e-project/{key}", data)
    proc = a.run("pull", check=1)
    for key in corpus:
        lines = [x for x in proc.stderr.splitlines() if f"remote: {key}:" in x]
        assert len(lines) == 1, (key, proc.stderr)
    assert sorted(a.files()) == ["user_ok.md"]
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and "evil" in p.name]
    assert outside == []
    assert not (tmp_path / "abs.md").exists() and not Path("/abs.md").exists()
    b = make_device(tmp_path / "dev", "desktop", azure_url)
    a.write("user_more.md", "Still syncing.\n", type="user")
    a.run("push", check=1)  # the refusals are still reported; the new file goes out
    b.run("pull", check=1)
    assert sorted(b.files()) == ["user_more.md", "user_ok.md"]


def test_symlink_in_the_memory_dir_is_not_followed_out(pair, remote, tmp_path):
    a, _ = pair
    secret = tmp_path / "outside.md"
    secret.write_text("---\nname: o\ndescription: outside\n---\nprivate\n")
    (a.memory / "user_link.md").symlink_to(secret)
    a.write("user_ok.md", "Fine.\n", type="user")
    proc = a.run("push", check=1)
    assert "symbolic link" in proc.stderr
    assert remote_files(remote) == ["user_ok.md"]


# --- permissions ------------------------------------------------------------------------------


def test_everything_memsync_creates_is_private(pair, remote):
    a, _ = pair
    a.write("user_ok.md", "Fine.\n", type="user")
    a.run("push")
    a.run("forget", "user_ok.md", "--yes")
    for path in [a.home, *a.home.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_dir():
            assert mode == 0o700, path
        else:
            assert mode == 0o600, path
    store = FolderStore(remote, "e2e-project")
    assert stat.S_IMODE(store.base.stat().st_mode) == 0o700


def test_a_secret_in_a_file_name_is_masked_in_status_json_and_the_primer(tmp_path) -> None:
    """`status --json` and the primer Claude reads list a refused file by name: a secret in
    the name is printed as `***` there too."""
    from tests.devices import make_device

    remote = tmp_path / "remote"
    remote.mkdir()
    device = make_device(tmp_path, "laptop", remote.as_uri())
    token = "ghp_" + "o3C9ipXdSo4ZCkoSkgN570vErcNTjDuqSb81"
    device.write(f"project_{token}.md", "A note.\n", type="project")
    device.run("sync", check=None)
    status = device.run("status", "--json", check=None)
    primer = device.run("context", check=None)
    assert "project_***.md" in status.stdout and "project_***.md" in primer.stdout
    assert token not in status.stdout + status.stderr + primer.stdout + primer.stderr
