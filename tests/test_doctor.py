"""`memsync doctor` on a folder remote and on Azurite: every check, and no secret shown."""

from __future__ import annotations

import json

import pytest

from tests.azurite import KEY
from tests.devices import make_device


def checks(proc) -> dict[str, dict]:
    doc = json.loads(proc.stdout)
    assert doc["version"] == 1 and doc["command"] == "doctor"
    return {c["name"]: c for c in doc["data"]["checks"]}


def pushed_device(tmp_path):
    """A device with one memory file pushed to a folder remote."""
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "d", (tmp_path / "remote").as_uri())
    device.write("user_x.md", "x\n", type="user")
    device.run("push")
    return device


def test_doctor_on_a_folder_remote(tmp_path):
    device = pushed_device(tmp_path)
    result = checks(device.run("doctor", "--json"))
    assert all(c["ok"] for c in result.values()), result
    assert "1 Markdown file" in result["memory dir"]["detail"]
    assert list((tmp_path / "remote" / "e2e-project").iterdir())[0].name == "user_x.md"


def test_doctor_on_a_fresh_setup_passes_and_says_the_first_push_makes_the_folder(tmp_path):
    """Before the first push the project's folder is not there: that is a fresh setup, not a
    failure (a credential that may not create it is: see test_network_faults)."""
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "d", (tmp_path / "remote").as_uri())
    proc = device.run("doctor")
    assert "ok   container" in proc.stdout and "first `memsync push`" in proc.stdout
    assert str(tmp_path / "remote" / "e2e-project") in proc.stdout


def test_doctor_counts_memory_files_and_fails_on_a_broken_state_folder(tmp_path):
    device = pushed_device(tmp_path)
    result = checks(device.run("doctor", "--json"))
    assert result["remote files"]["detail"].startswith("1 memory file(s)"), result
    state = next((device.home / "state").iterdir())
    (state / "records.json").write_text("[]")  # valid JSON, the wrong shape
    proc = device.run("doctor", check=1)
    assert "FAIL state" in proc.stdout and "records.json" in proc.stdout, proc.stdout
    for path in state.iterdir():
        path.unlink()
    state.rmdir()
    state.write_text("a file where the folder was")
    proc = device.run("doctor", check=1)
    assert f"FAIL state: {state} is a file" in proc.stdout, proc.stdout
    assert device.run("status", check=1).returncode == 1  # as every command says


@pytest.mark.azure
def test_doctor_on_azurite(tmp_path, azurite):
    url = azurite.url()
    device = make_device(tmp_path, "d", url, AZURE_STORAGE_KEY=KEY)
    device.write("user_x.md", "x\n", type="user")
    device.run("push")
    result = checks(device.run("doctor", "--json"))
    assert all(c["ok"] for c in result.values()), result
    assert result["credential"]["detail"] == "account key"
    assert "against the server" in result["clock skew"]["detail"]
    assert KEY not in device.run("doctor", "--json").stdout


@pytest.mark.azure
def test_doctor_with_a_wrong_key_fails_with_advice_and_no_secret(tmp_path, azurite):
    wrong = KEY[:-6] + "AAAAA="
    device = make_device(tmp_path, "d", azurite.url(), AZURE_STORAGE_KEY=wrong)
    proc = device.run("doctor", check=1)
    assert "FAIL remote reachable" in proc.stdout
    assert "AZURE_STORAGE_KEY" in proc.stdout
    assert wrong not in proc.stdout + proc.stderr


def test_doctor_masks_a_sas_token(tmp_path):
    from tests.azurite import ACCOUNT, free_port

    url = (
        f"http://127.0.0.1:{free_port()}/{ACCOUNT}/c/p?sv=2024-01-01&sp=rwdl&sig=SECRETSIGNATURE%3D"
    )
    device = make_device(tmp_path, "d", url)
    proc = device.run("doctor", "--json", check=1)
    assert "SECRETSIGNATURE" not in proc.stdout + proc.stderr
    assert checks(proc)["credential"]["detail"] == "SAS token in the URL"
    assert not checks(proc)["remote reachable"]["ok"]
