"""The trials' two devices on one folder remote (a trial module may define its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.devices import Device, make_device


@pytest.fixture
def remote(tmp_path) -> Path:
    folder = tmp_path / "remote"
    folder.mkdir()
    return folder


@pytest.fixture
def pair(tmp_path, remote) -> tuple[Device, Device]:
    return make_device(tmp_path, "laptop", remote.as_uri()), make_device(
        tmp_path, "desktop", remote.as_uri()
    )
