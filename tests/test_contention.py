"""Many processes pushing different entries into one append-type file at the same moment."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.devices import make_device

BASE = """
## Active
- **The potato drawing** (2026-11-01): an ASCII portrait that went wrong.
"""


def contend(tmp_path, remote: str, writers: int) -> None:
    devices = [make_device(tmp_path, f"dev{i}", remote) for i in range(writers)]
    devices[0].write("running_jokes_and_callbacks.md", BASE, type="callbacks")
    devices[0].run("push")
    for d in devices[1:]:
        d.run("pull")
    for i, d in enumerate(devices):
        path = d.memory / "running_jokes_and_callbacks.md"
        entry = f"- **Joke {i}** (2026-11-2{i % 10}): entry from dev{i}.\n"
        path.write_text(path.read_text() + entry)

    def push(device):
        return subprocess.run(
            [sys.executable, "-m", "memsync", "push"],
            env=device.env(),
            cwd=device.root,
            capture_output=True,
            text=True,
            timeout=300,
        )

    with ThreadPoolExecutor(writers) as pool:  # all processes start together
        results = list(pool.map(push, devices))
    for r in results:
        assert r.returncode == 0, r.stderr
    for d in devices:
        d.run("sync")
    contents = {d.name: (d.memory / "running_jokes_and_callbacks.md").read_text() for d in devices}
    first = contents["dev0"]
    assert all(text == first for text in contents.values()), "devices must converge"
    for i in range(writers):
        assert first.count(f"entry from dev{i}.") == 1
    assert first.count("The potato drawing") == 1


def test_six_processes_append_to_one_file_on_the_folder_remote(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    contend(tmp_path, remote.as_uri(), 6)


@pytest.mark.azure
def test_eight_processes_append_to_one_file_on_azurite(tmp_path, azure_url):
    contend(tmp_path, azure_url, 8)
