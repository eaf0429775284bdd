"""A second real S3 server for the tests: Ceph's RADOS Gateway (radosgw, Debian's package), the
S3 service of production Ceph clusters, on a one-monitor, one-OSD cluster kept in memory.

scripts/test.sh installs it (`radosgw`, `ceph-mon`, `ceph-osd`) where it runs as root on a
Debian-like machine. A session starts one cluster in a temporary folder on free loopback ports:
the monitor, an OSD whose object store is memory (`memstore`), and the gateway (its `beast`
front end), then adds one S3 user. With pools of one placement group and a monitor that proposes
changes at once (not each second), the cluster starts, and a new bucket is ready, in under a
second. The cluster is gone when the session ends.

radosgw 16.2 honours `If-None-Match: *` and `If-Match` on PutObject, but matches `If-Match`
only against the ETag without its quotes, and ignores `If-Match` on DeleteObject: memsync's S3
store sends it the bare ETag and reads before it deletes there (memsync/stores/s3probe.py).

When CI=true and the cluster cannot start, its tests fail; elsewhere they skip, saying why."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.s3server import (
    ACCESS_KEY,
    SECRET_KEY,
    aws_env,
    bucket_url,
    free_port,
    unavailable,
    use_aws_env,
)

COMMANDS = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph")


class CephRGW:
    """A throwaway Ceph cluster with one S3 gateway; `stop()` ends every daemon and its data."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="memsync-ceph-"))
        self.port = free_port()
        self.mon_port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _conf(self) -> str:
        d = self.dir
        return f"""[global]
fsid = 3c1d2f52-6e1a-4f0b-9a57-5bd8c5e0a1f0
mon host = v2:127.0.0.1:{self.mon_port}
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
run dir = {d}/run
admin socket = {d}/run/$name.asok
log file = {d}/log/$name.log
keyring = /dev/null
osd crush chooseleaf type = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
paxos propose interval = 0.01
paxos min wait = 0.01
mon max pg per osd = 1000
mon allow pool size one = true
[mon.a]
mon data = {d}/mon
mon data avail crit = 0
mon cluster log file = {d}/log/cluster.log
[osd.0]
osd data = {d}/osd
osd objectstore = memstore
memstore device bytes = 1073741824
[client.rgw.m]
rgw frontends = beast endpoint=127.0.0.1:{self.port}
rgw dns name = localhost
"""

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            args, env=self.env, capture_output=True, text=True, timeout=60, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-400:]}")
        return done.stdout

    def _daemon(self, *args: str) -> None:
        self.procs.append(
            subprocess.Popen(
                [*args, "-f"],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )

    def start(self, timeout: float = 60.0) -> None:
        for sub in ("run", "log", "mon", "osd"):
            (self.dir / sub).mkdir()
        conf = self.dir / "ceph.conf"
        conf.write_text(self._conf())
        self.env = {**os.environ, "CEPH_CONF": str(conf)}
        self._run("ceph-mon", "--id", "a", "--mkfs")
        self._daemon("ceph-mon", "--id", "a")
        osd = self._run("ceph", "--connect-timeout", "20", "osd", "create").strip()
        self._run("ceph", "osd", "crush", "add", f"osd.{osd}", "1", "root=default")
        self._run("ceph-osd", "--id", osd, "--mkfs")
        self._daemon("ceph-osd", "--id", osd)
        self._daemon("radosgw", "-n", "client.rgw.m")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(proc.poll() is not None for proc in self.procs):
                raise RuntimeError(f"a Ceph daemon exited; logs in {self.dir / 'log'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError(f"radosgw did not listen on port {self.port} within {timeout} s")
        self._run(
            "radosgw-admin", "user", "create", "--uid", "memsync", "--display-name", "memsync",
            f"--access-key={ACCESS_KEY}", f"--secret-key={SECRET_KEY}",
        )  # fmt: skip

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def env_for(self) -> dict[str, str]:
        return aws_env(self.endpoint)


def _unavailable(reason: str) -> None:
    unavailable("Ceph's radosgw", reason, "scripts/test.sh installs it as root")


@pytest.fixture(scope="session")
def rgw_server() -> Iterator[CephRGW]:
    missing = [name for name in COMMANDS if not shutil.which(name)]
    if missing:
        _unavailable(f"{', '.join(missing)} not installed")
    server = CephRGW()
    try:
        server.start()
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        server.stop()
        _unavailable(f"it could not start: {exc}")
    yield server
    server.stop()


@pytest.fixture
def rgw_url(rgw_server: CephRGW, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket's URL on the session's radosgw, its credential in the environment."""
    use_aws_env(monkeypatch, rgw_server.env_for())
    return bucket_url()
