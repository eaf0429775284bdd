#!/usr/bin/env python
"""memsync against rclone on the same Azurite, in the same run: whole processes, median of 3.

    python scripts/bench.py [--sizes 50,500,5000] [--repeats 3] [--write docs/benchmarks.md]
    python scripts/bench.py --wan 50 [--sizes 50,500] [--repeats 3] [--store azure,s3,ceph] [--tls]

--wan MS puts tests/netfaults.py's proxy between both tools and the server (Azurite, moto's S3
server with --store s3, Ceph's radosgw with --store ceph), adding MS of round trip to every
request and every new connection, and reports fresh pull, no-op sync, `push FILE` and the
session-start hook against `rclone copy --transfers 32` / `rclone sync`, with each command's
round trips next to the floor no client can beat. Round trips are measured, not guessed:
(seconds at MS - seconds through the same proxy at 0 ms) / MS. --tls puts a TLS-terminating
front (a self-signed certificate both tools are told to trust) before the proxy, adding one round
trip to each new connection's handshake, as TLS 1.3 does: real services are TLS only.

Needs Azurite (scripts/test.sh installs it into .tools/) and rclone (`apt-get install rclone`).
Azurite is restarted with a fresh data folder for each size and warmed up before timing.
memsync runs as a user has it: `pip install .` into a fresh venv (bytecode compiled at install
time), not the editable checkout, which with PYTHONDONTWRITEBYTECODE set (as on these machines)
compiles every memsync module from source in every process.
Results are ratios in one run on one machine, never absolute promises.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.azurite import ACCOUNT, KEY, start_azurite  # noqa: E402
from tests.cephrgw import CephRGW  # noqa: E402
from tests.netfaults import FaultProxy  # noqa: E402
from tests.s3server import ACCESS_KEY, REGION, SECRET_KEY, start_moto  # noqa: E402

WORDS = [
    "session",
    "arc",
    "relational",
    "note",
    "open",
    "thread",
    "commitment",
    "delivered",
    "pending",
    "calibration",
    "landed",
    "missed",
    "rule",
    "banter",
    "register",
    "architect",
    "sponsor",
    "filter",
    "scheduler",
    "boundary",
]


def make_files(folder: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        lines = [f"- {' '.join(rng.choices(WORDS, k=rng.randint(6, 14)))}" for _ in range(30)]
        body = "## Notes\n" + "\n".join(lines[: rng.randint(10, 30)]) + "\n"
        text = (
            f"---\nname: Bench {i}\ndescription: benchmark file {i}\ntype: project\n---\n\n{body}"
        )
        (folder / f"project_bench_{i:05}.md").write_text(text)


def timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, proc.stderr


class Memsync:
    """memsync runs in the bench's work folder, outside any git repository: as from a
    repository with an origin, its identity needs no git process (a checkout without an
    origin would add one `git rev-list` to every fresh pull for its first commit)."""

    def __init__(self, exe: Path, remote_env: dict[str, str], cwd: Path) -> None:
        self.exe, self.remote_env, self.cwd = exe, remote_env, cwd

    def env(self, home: Path, memory: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
        env.update(
            MEMSYNC_HOME=str(home),
            MEMSYNC_MEMORY_DIR=str(memory),
            MEMSYNC_PROJECT="bench",
            **self.remote_env,
        )
        return env

    def run(self, verb: str, url: str, home: Path, memory: Path, *paths: str) -> tuple[float, str]:
        cmd = [str(self.exe), verb, *paths, "--remote", url, "--stats"]
        seconds, err = timed(cmd, self.env(home, memory), self.cwd)
        m = re.search(r"requests: (\d+) \(([^)]*)\)", err)
        return seconds, (f"{m.group(1)} ({m.group(2)})" if m else "?")


class Rclone:
    """rclone with one remote named `az` (an Azure container, or an S3 bucket's parent)."""

    def __init__(self, work: Path, port: int, config: str = "", ca: Path | None = None) -> None:
        self.config = work / "rclone.conf"
        self.config.write_text(
            config
            or (
                "[az]\ntype = azureblob\n"
                f"account = {ACCOUNT}\nkey = {KEY}\n"
                f"endpoint = http://127.0.0.1:{port}/{ACCOUNT}\nuse_emulator = true\n"
            )
        )
        self.work = work
        self.ca = ca

    def run(self, *args: str) -> float:
        # rclone's S3 client fails on any AWS_CA_BUNDLE ("unsupported transport"): --ca-cert
        env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
        env["RCLONE_CONFIG"] = str(self.config)
        cmd = ["rclone", *args, "--config", str(self.config)]
        if self.ca is not None:
            cmd += ["--ca-cert", str(self.ca)]
        return timed(cmd, env)[0]


def median(values: list[float]) -> float:
    return statistics.median(values)


def install(work: Path) -> Path:
    """memsync from this checkout, installed into a fresh venv; its `bin` folder."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(ROOT)]
    subprocess.run(pip, check=True)
    return venv / "bin"


def bench_size(n: int, repeats: int, work: Path, bin_dir: Path) -> dict[str, object]:
    server = start_azurite_quiet(work / f"azurite-{n}")
    try:
        src = work / f"src-{n}"
        make_files(src, n)
        endpoint = server.endpoint
        ms = Memsync(
            bin_dir / "memsync", {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}, work
        )
        rc = Rclone(work, server.port)
        # warm up Azurite (its first requests of each kind are slow): puts, a listing, gets
        warm = f"{endpoint}/warm{uuid.uuid4().hex[:8]}/w"
        ms.run("push", warm, work / "warm-home", src)
        ms.run("pull", warm, work / "warm-home-pull", work / f"warm-pull-{n}")
        rows: dict[str, list[float]] = {
            k: []
            for k in (
                "ms_push",
                "ms_pull",
                "ms_noop",
                "ms_one",
                "rc_sync",
                "rc_pull",
                "rc_noop",
                "rc_one",
                "rc_bisync_resync",
                "rc_bisync_noop",
                "rc_bisync_one",
                "rc_bisync_pull",
            )
        }
        requests: dict[str, str] = {}
        for r in range(repeats):
            cont = f"b{uuid.uuid4().hex[:12]}"
            url = f"{endpoint}/{cont}/mem"
            home = work / f"home-{n}-{r}"
            mem = work / f"mem-{n}-{r}"
            shutil.copytree(src, mem)
            t, requests["push"] = ms.run("push", url, home, mem)
            rows["ms_push"].append(t)
            t, requests["pull"] = ms.run(
                "pull", url, work / f"home2-{n}-{r}", work / f"pull-{n}-{r}"
            )
            rows["ms_pull"].append(t)
            t, requests["noop"] = ms.run("sync", url, home, mem)
            rows["ms_noop"].append(t)
            target = mem / "project_bench_00000.md"
            target.write_text(target.read_text() + f"- changed {r}\n")
            t, requests["one"] = ms.run("sync", url, home, mem)
            rows["ms_one"].append(t)

            rcont = f"r{uuid.uuid4().hex[:12]}"
            rsrc = work / f"rsrc-{n}-{r}"
            shutil.copytree(src, rsrc)
            rc.run("mkdir", f"az:{rcont}")
            rows["rc_sync"].append(rc.run("sync", str(rsrc), f"az:{rcont}/mem"))
            rows["rc_pull"].append(
                rc.run("copy", f"az:{rcont}/mem", str(work / f"rpull-{n}-{r}"), "--transfers", "32")
            )
            rows["rc_noop"].append(rc.run("sync", str(rsrc), f"az:{rcont}/mem"))
            rtarget = rsrc / "project_bench_00000.md"
            rtarget.write_text(rtarget.read_text() + f"- changed {r}\n")
            rows["rc_one"].append(rc.run("sync", str(rsrc), f"az:{rcont}/mem"))
            bis = f"az:{rcont}/bisync"
            bsrc = work / f"bsrc-{n}-{r}"
            shutil.copytree(src, bsrc)
            rc.run("mkdir", bis)
            wd = ["--workdir", str(work / f"bisync-wd-{n}-{r}")]
            rows["rc_bisync_resync"].append(rc.run("bisync", str(bsrc), bis, "--resync", *wd))
            rows["rc_bisync_noop"].append(rc.run("bisync", str(bsrc), bis, *wd))
            btarget = bsrc / "project_bench_00000.md"
            btarget.write_text(btarget.read_text() + f"- changed {r}\n")
            rows["rc_bisync_one"].append(rc.run("bisync", str(bsrc), bis, *wd))
            bpull = work / f"bpull-{n}-{r}"  # bisync's fresh pull: --resync into an empty dir
            bpull.mkdir()
            wd_pull = ["--workdir", str(work / f"bisync-wd-pull-{n}-{r}")]
            rows["rc_bisync_pull"].append(rc.run("bisync", str(bpull), bis, "--resync", *wd_pull))
        return {"n": n, **{k: median(v) for k, v in rows.items()}, "requests": requests}
    finally:
        server.stop()


# Each command's floor at any round trip: a new connection (1) and its requests in sequence;
# a fresh pull can open its transfers' connections while the listing is in flight. The hook
# runs after `push FILE` changed one file, so it lists and fetches that file.
FLOORS = {"pull": 3, "noop": 2, "push_file": 2, "hook": 3, "rc_pull": 3, "rc_noop": 2}


class AzureBackend:
    """Azurite, and how each tool reaches it through the front at `front` (scheme://host:port)."""

    label = "Azure (Azurite)"

    def __init__(self, work: Path, n: int) -> None:
        self.server = start_azurite_quiet(work / f"wan-azurite-{n}")
        self.port = self.server.port

    def memsync_env(self, front: str) -> dict[str, str]:
        return {"AZURE_STORAGE_CONNECTION_STRING": self.server.connection_string}

    def url(self, front: str, name: str) -> str:
        return f"{front}/{ACCOUNT}/{name}/mem"

    def rclone_config(self, front: str) -> str:
        return (
            f"[az]\ntype = azureblob\naccount = {ACCOUNT}\nkey = {KEY}\n"
            f"endpoint = {front}/{ACCOUNT}\nuse_emulator = true\n"
        )

    def stop(self) -> None:
        self.server.stop()


class S3Backend:
    """moto's S3 server; memsync finds it through AWS_ENDPOINT_URL, rclone as provider Other."""

    label = "S3 (moto)"

    def __init__(self, work: Path, n: int) -> None:
        os.environ.setdefault("CI", "")
        self.server = start_moto()
        self.port = self.server.port

    def memsync_env(self, front: str) -> dict[str, str]:
        return self.server.env_for(front)

    def url(self, front: str, name: str) -> str:
        return f"s3://{name}/mem"

    def rclone_config(self, front: str) -> str:
        return (
            f"[az]\ntype = s3\nprovider = Other\naccess_key_id = {ACCESS_KEY}\n"
            f"secret_access_key = {SECRET_KEY}\nregion = {REGION}\nendpoint = {front}\n"
            "force_path_style = true\n"
        )

    def stop(self) -> None:
        self.server.stop()


class CephBackend(S3Backend):
    """Ceph's RADOS Gateway on a one-OSD cluster in memory (tests/cephrgw.py): the S3 service
    of production Ceph, where moto is a Python model of S3 whose own CPU is most of a pull."""

    label = "S3 (Ceph radosgw)"

    def __init__(self, work: Path, n: int) -> None:
        self.server = CephRGW()  # type: ignore[assignment]
        self.server.start()
        self.port = self.server.port

    def memsync_env(self, front: str) -> dict[str, str]:
        return {**self.server.env_for(), "AWS_ENDPOINT_URL": front}


BACKENDS = {"azure": AzureBackend, "s3": S3Backend, "ceph": CephBackend}


class TLSFront:
    """A TLS-terminating front before the round-trip proxy: each connection's handshake waits
    one round trip (TLS 1.3's), then its bytes are piped to the proxy and back. On asyncio's
    TLS (a memory BIO per connection; Python 3.11+ for StreamWriter.start_tls): one ssl socket
    read and written from two threads at once can hang."""

    def __init__(self, upstream: FaultProxy, work: Path) -> None:
        import asyncio
        import ssl
        import threading

        self.cert, key = work / "front-cert.pem", work / "front-key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
            + ["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout", str(key)]
            + ["-out", str(self.cert), "-addext", "subjectAltName=IP:127.0.0.1"],
            check=True,
            capture_output=True,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, key)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def pipe(reader, writer) -> None:  # type: ignore[no-untyped-def]
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                with contextlib.suppress(OSError, RuntimeError):
                    writer.close()

        async def serve(reader, writer) -> None:  # type: ignore[no-untyped-def]
            try:
                await writer.start_tls(context)
                if upstream.rtt:  # the handshake's round trip (after it: a ClientHello read
                    await asyncio.sleep(upstream.rtt)  # before start_tls would be lost)
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream.port)
            except (OSError, ssl.SSLError, ConnectionError):
                writer.close()
                return
            with contextlib.suppress(asyncio.CancelledError):  # stop() ends every connection
                await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        async def start() -> None:
            self.server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1024)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(start())
            self.loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)

    def stop(self) -> None:
        import asyncio

        def close() -> None:
            self.server.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.call_later(0.1, self.loop.stop)

        self.loop.call_soon_threadsafe(close)


def wan_size(
    n: int, repeats: int, work: Path, bin_dir: Path, rtt: float, store: str = "azure", tls=False
) -> dict[str, object]:
    """One size through the round-trip proxy: medians at `rtt`, and round trips per command."""
    work = work / f"{store}-{'tls' if tls else 'plain'}"
    work.mkdir(parents=True, exist_ok=True)
    backend = BACKENDS[store](work, n)
    proxy = FaultProxy(backend.port, rtt=0.0)
    front = TLSFront(proxy, work) if tls else None
    try:
        src = work / f"wan-src-{n}"
        make_files(src, n)
        base = f"https://127.0.0.1:{front.port}" if front else f"http://127.0.0.1:{proxy.port}"
        remote_env = backend.memsync_env(base)
        if front:  # every variable that could name another bundle names the front's
            for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "AWS_CA_BUNDLE"):
                remote_env[name] = str(front.cert)
        ms = Memsync(bin_dir / "memsync", remote_env, work)
        rc = Rclone(work, proxy.port, backend.rclone_config(base), front.cert if front else None)
        warm = backend.url(base, f"warm{uuid.uuid4().hex[:8]}")
        ms.run("push", warm, work / f"wan-warm-{n}", src)
        ms.run("pull", warm, work / f"wan-warm-pull-{n}", work / f"wan-warm-pulled-{n}")
        url = backend.url(base, f"b{uuid.uuid4().hex[:12]}")
        home, mem = work / f"wan-home-{n}", work / f"wan-mem-{n}"
        shutil.copytree(src, mem)
        ms.run("push", url, home, mem)
        rcont = f"r{uuid.uuid4().hex[:12]}"
        rsrc = work / f"wan-rsrc-{n}"
        shutil.copytree(src, rsrc)
        rc.run("mkdir", f"az:{rcont}")
        rc.run("sync", str(rsrc), f"az:{rcont}/mem")
        hook_home = work / f"wan-hook-{n}"
        ms.run("pull", url, hook_home, work / f"wan-hook-mem-{n}")
        start = '{"session_id": "b", "source": "startup"}'
        hook_env = ms.env(hook_home, work / f"wan-hook-mem-{n}")
        hook_env["MEMSYNC_REMOTE"] = url
        target = mem / "project_bench_00000.md"
        counter = iter(range(10**6))

        def one(kind: str) -> float:
            """One command's seconds; its requests and new connections, as the proxy saw
            them, are added to `seen` (every connection reaches the proxy: the TLS front
            opens one upstream connection for each of its own)."""
            before = (len(proxy.requests), proxy.connections)
            took = run(kind)
            seen.setdefault((proxy.rtt, kind), []).append(
                (len(proxy.requests) - before[0], proxy.connections - before[1])
            )
            return took

        seen: dict[tuple[float, str], list[tuple[int, int]]] = {}

        def run(kind: str) -> float:
            i = next(counter)
            if kind == "pull":
                return ms.run("pull", url, work / f"wan-h-{n}-{i}", work / f"wan-p-{n}-{i}")[0]
            if kind == "noop":
                return ms.run("sync", url, home, mem)[0]
            if kind == "push_file":
                target.write_text(target.read_text() + f"- changed {i}\n")
                return ms.run("push", url, home, mem, str(target))[0]
            if kind == "hook":
                started = time.perf_counter()
                subprocess.run(
                    [str(bin_dir / "memsync"), "hook", "session-start"],
                    env=hook_env,
                    input=start,
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=work,
                )
                return time.perf_counter() - started
            if kind == "rc_pull":
                dest = str(work / f"wan-rp-{n}-{i}")
                return rc.run("copy", f"az:{rcont}/mem", dest, "--transfers", "32")
            return rc.run("sync", str(rsrc), f"az:{rcont}/mem")  # rc_noop

        # interleaved: each repeat runs every command once at 0 ms and once at `rtt`, so a
        # burst of load on a shared machine touches memsync and rclone, and both round trips,
        # alike instead of one command's or one phase's whole sample
        times: dict[float, dict[str, list[float]]] = {0.0: {}, rtt: {}}
        for _ in range(repeats):
            for delay in (0.0, rtt):
                proxy.rtt = delay
                for k in FLOORS:
                    times[delay].setdefault(k, []).append(one(k))
        kinds = list(FLOORS)
        zero = {k: median(times[0.0][k]) for k in kinds}
        slow = {k: median(times[rtt][k]) for k in kinds}
        rounds = {k: max(0.0, (slow[k] - zero[k]) / rtt) for k in kinds}
        counts = {
            k: (
                median([float(r) for r, _ in seen[(rtt, k)]]),
                median([float(c) for _, c in seen[(rtt, k)]]),
            )
            for k in kinds
        }
        return {
            "n": n,
            "slow": slow,
            "zero": zero,
            "rounds": rounds,
            "counts": counts,
            "store": backend.label,
        }
    finally:
        if front:
            front.stop()
        proxy.stop()
        backend.stop()


def wan_table(results: list[dict[str, object]], rtt: float, tls: bool = False) -> str:
    """The WAN rows; over TLS each floor has one more round trip (the handshake's)."""
    names = {
        "pull": "memsync pull, fresh",
        "rc_pull": "rclone copy --transfers 32, fresh",
        "noop": "memsync sync, no change",
        "rc_noop": "rclone sync, no change",
        "push_file": "memsync push FILE, 1 changed",
        "hook": "memsync hook session-start, 1 changed on the remote",
    }
    lines = [
        f"| remote | N | command | seconds at {rtt * 1000:.0f} ms | at 0 ms (same proxy) "
        "| round trips | floor | requests | connections |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        slow, zero, rounds = r["slow"], r["zero"], r["rounds"]  # type: ignore[assignment]
        counts = r["counts"]  # type: ignore[assignment]
        for kind, label in names.items():
            sent, opened = counts[kind]  # type: ignore[index]
            lines.append(
                f"| {r['store']} | {r['n']} | {label} | {slow[kind]:.3f} | {zero[kind]:.3f} "  # type: ignore[index]
                f"| {rounds[kind]:.1f} | {FLOORS[kind] + tls} | {sent:.0f} | {opened:.0f} |"  # type: ignore[index]
            )
    lines.append("")
    for r in results:
        slow = r["slow"]  # type: ignore[assignment]
        lines.append(
            f"{r['store']}, N={r['n']}: "
            f"fresh pull {slow['pull'] / slow['rc_pull']:.2f}x rclone copy "  # type: ignore[index]
            f"--transfers 32; no-op sync {slow['noop'] / slow['rc_noop']:.2f}x rclone sync."  # type: ignore[index]
        )
    return "\n".join(lines)


def start_azurite_quiet(location: Path):
    os.environ.setdefault("CI", "")
    return start_azurite(location)


def import_cost(python: Path) -> tuple[float, float, float]:
    """Seconds, each in a fresh process: importing the CLI (no Azure) and azure.storage.blob,
    beyond the interpreter's own start-up (the third number)."""

    def cost(stmt: str) -> float:
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            subprocess.run([str(python), "-c", stmt], check=True)
            runs.append(time.perf_counter() - started)
        return median(runs)

    base = cost("pass")
    return (
        cost("import memsync.cli; memsync.cli._register()") - base,
        cost("import azure.storage.blob") - base,
        base,
    )


def table(results: list[dict[str, object]]) -> str:
    def ratio(a: object, b: object) -> str:
        return f"{float(a) / float(b):.2f}x"  # type: ignore[arg-type]

    lines = [
        "One-way rows, memsync against `rclone sync` / `rclone copy` (median seconds):",
        "",
        "| N | push fresh (memsync / rclone sync) "
        "| pull fresh (memsync / rclone copy --transfers 32) "
        "| no-op sync (memsync / rclone sync) | 1 changed (memsync / rclone sync) |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['n']} "
            f"| {r['ms_push']:.2f} / {r['rc_sync']:.2f} s = {ratio(r['ms_push'], r['rc_sync'])} "
            f"| {r['ms_pull']:.2f} / {r['rc_pull']:.2f} s = {ratio(r['ms_pull'], r['rc_pull'])} "
            f"| {r['ms_noop']:.3f} / {r['rc_noop']:.3f} s = {ratio(r['ms_noop'], r['rc_noop'])} "
            f"| {r['ms_one']:.3f} / {r['rc_one']:.3f} s = {ratio(r['ms_one'], r['rc_one'])} |"
        )
    lines += [
        "",
        "Every row against `rclone bisync`, the two-way peer (fresh push and pull: `--resync` "
        "from a full and into an empty local dir):",
        "",
        "| N | push fresh | pull fresh | no-op sync | 1 changed |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        pairs = [
            ("ms_push", "rc_bisync_resync"),
            ("ms_pull", "rc_bisync_pull"),
            ("ms_noop", "rc_bisync_noop"),
            ("ms_one", "rc_bisync_one"),
        ]
        cells = [f"{r[a]:.3f} / {r[b]:.3f} s = {ratio(r[a], r[b])}" for a, b in pairs]
        lines.append(f"| {r['n']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "memsync requests per operation (from `--stats`):",
        "",
        "| N | push fresh | pull fresh | no-op sync | 1 changed |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        q = r["requests"]
        lines.append(f"| {r['n']} | {q['push']} | {q['pull']} | {q['noop']} | {q['one']} |")  # type: ignore[index]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,500,5000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", type=Path, help="also write the Markdown report here")
    parser.add_argument("--wan", type=float, help="round trip in ms: the WAN mode (see above)")
    parser.add_argument(
        "--store",
        default="azure",
        help="azure, s3 (moto), ceph (radosgw) or several with commas; both = azure,s3",
    )
    parser.add_argument("--tls", action="store_true", help="WAN mode over HTTPS (see above)")
    args = parser.parse_args()
    if not shutil.which("rclone"):
        raise SystemExit("rclone is needed for the side-by-side run: apt-get install rclone")
    version = subprocess.run(["rclone", "version"], capture_output=True, text=True).stdout
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.wan:
        with tempfile.TemporaryDirectory(prefix="memsync-wan-") as tmp:
            bin_dir = install(Path(tmp))
            rtt = args.wan / 1000
            stores = ("azure", "s3") if args.store == "both" else args.store.split(",")
            if not set(stores) <= set(BACKENDS):
                raise SystemExit(f"--store takes {', '.join(BACKENDS)} (or both)")
            results = [
                wan_size(n, args.repeats, Path(tmp), bin_dir, rtt, store, args.tls)
                for n in sizes
                for store in stores
            ]
        print(
            f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; {version.splitlines()[0] if version else 'rclone ?'}; "
            f"{'HTTPS' if args.tls else 'HTTP'}; median of {args.repeats}.\n"
        )
        print(wan_table(results, rtt, args.tls))
        return
    with tempfile.TemporaryDirectory(prefix="memsync-bench-") as tmp:
        bin_dir = install(Path(tmp))
        results = [bench_size(n, args.repeats, Path(tmp), bin_dir) for n in sizes]
        cli_import, azure_import, interpreter = import_cost(bin_dir / "python")
    report = "\n".join(
        [
            f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; {version.splitlines()[0] if version else 'rclone ?'}; "
            f"Azurite from .tools/; memsync installed with pip into a fresh venv. "
            f"Median of {args.repeats} whole-process runs, seconds.",
            "",
            table(results),
            "",
            f"In a fresh process: the interpreter alone {interpreter * 1000:.0f} ms; importing "
            f"memsync's CLI (all commands registered) {cli_import * 1000:.0f} ms more; "
            f"azure.storage.blob {azure_import * 1000:.0f} ms more "
            "(paid only with a token credential or a proxy: account keys and SAS tokens go "
            "through memsync's own REST client).",
        ]
    )
    print(report)
    if args.write:
        args.write.write_text(
            args.write.read_text().split("<!-- bench -->")[0] + "<!-- bench -->\n\n" + report + "\n"
        )


if __name__ == "__main__":
    main()
