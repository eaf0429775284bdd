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


def test_doctor_on_a_folder_remote(tmp_path):
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "d", (tmp_path / "remote").as_uri())
    device.write("user_x.md", "x\n", type="user")
    device.run("push")
    result = checks(device.run("doctor", "--json"))
    assert all(c["ok"] for c in result.values()), result
    assert "1 Markdown file" in result["memory dir"]["detail"]
    assert list((tmp_path / "remote" / "e2e-project").iterdir())[0].name == "user_x.md"


def test_doctor_says_what_to_do_when_the_container_is_missing(tmp_path):
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "d", (tmp_path / "remote").as_uri())
    proc = device.run("doctor", check=1)
    assert "FAIL container" in proc.stdout and "memsync push" in proc.stdout


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
