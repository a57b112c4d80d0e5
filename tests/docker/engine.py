"""The container engine the image tests drive: podman and buildah, with no daemon.

Owns building the Dockerfile's stages and starting, waiting on and removing containers.
The engine's storage and settings come from the environment ``scripts/image-test`` sets
(``scripts/_containers.sh``); nothing here knows where they live.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
VERSION_TAG = "0.1.0"
BROKER_IMAGE = f"localhost/trio-broker:{VERSION_TAG}"  # the names compose.yaml uses
SPARK_IMAGE = f"localhost/trio-broker-spark:{VERSION_TAG}"
ZOOKEEPER_IMAGE = f"localhost/trio-broker-zookeeper:{VERSION_TAG}"
# Every stage is tagged, so that pruning dangling images between runs keeps what the next
# build can reuse (the dependency wheels above all).
STAGE_IMAGES = {
    "build": "localhost/trio-broker-stage:build",
    "venv-broker": "localhost/trio-broker-stage:venv-broker",
    "venv-spark": "localhost/trio-broker-stage:venv-spark",
    "broker": BROKER_IMAGE,
    "spark-jobs": SPARK_IMAGE,
    "zookeeper": ZOOKEEPER_IMAGE,
}
TOOLS = ("podman", "buildah", "podman-compose", "kcat")
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"


class EngineError(AssertionError):
    """A podman, buildah or podman-compose command failed; carries its output."""


def run(
    args: Sequence[str],
    *,
    timeout: float = 120,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else {**os.environ, **env},
    )
    if check and done.returncode != 0:
        raise EngineError(
            f"{' '.join(args)} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
    return done


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def host_ca_bundle() -> Path | None:
    """The host's CA bundle, which trusts whatever intercepts TLS on the way to PyPI."""
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        ssl.get_default_verify_paths().openssl_cafile,
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


def build(target: str, tag: str) -> None:
    """``buildah bud`` of one target: layers cached, no pull, chroot isolation."""
    args = ["buildah", "bud", "--layers", "--isolation", "chroot", "--pull=never"]
    ca = host_ca_bundle()
    if ca is not None:  # for the build only: mounted, passed by name, never copied in
        args += ["--volume", f"{ca}:/run/host-ca-certificates.crt:ro"]
        args += ["--build-arg", "PIP_CERT=/run/host-ca-certificates.crt"]
    args += ["--target", target, "--tag", tag, str(ROOT)]
    run(args, timeout=900)


def free_port() -> int:
    """A port no one listens on now (the engine binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_ready(admin: str, timeout: float = 60) -> None:
    """Until the admin API says the broker is ready (it binds in about a second)."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{admin}/v1/status/ready", timeout=2)
            if r.status_code == 200 and r.json().get("ready") is True:
                return
            last = f"HTTP {r.status_code} {r.text}"
        except httpx.HTTPError as exc:
            last = repr(exc)
        time.sleep(0.2)
    raise AssertionError(f"{admin} not ready after {timeout} s: {last}")


@dataclass
class Container:
    name: str

    def inspect(self, fmt: str) -> str:
        return run(["podman", "inspect", "--format", fmt, self.name]).stdout.strip()

    def logs(self) -> str:
        done = run(["podman", "logs", self.name], check=False)
        return done.stdout + done.stderr

    def exec(self, *args: str) -> str:
        return run(["podman", "exec", self.name, *args]).stdout


@dataclass
class RunningBroker:
    container: Container
    kafka: str  # host:port on 127.0.0.1
    admin: str  # http://127.0.0.1:port


@contextlib.contextmanager
def broker_container(env: dict[str, str] | None = None) -> Iterator[RunningBroker]:
    """The broker image with its Kafka and admin ports published on free 127.0.0.1 ports,
    advertised under that address; removed with its anonymous volume afterwards."""
    kafka_port, admin_port = free_port(), free_port()
    name = unique_name("trio-broker-test")
    args = ["podman", "run", "--detach", "--name", name]
    args += ["--publish", f"127.0.0.1:{kafka_port}:9092"]
    args += ["--publish", f"127.0.0.1:{admin_port}:9644"]
    settings = {"TRIO_BROKER_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{kafka_port}"}
    for key, value in {**settings, **(env or {})}.items():
        args += ["--env", f"{key}={value}"]
    run([*args, BROKER_IMAGE])
    container = Container(name)
    try:
        broker = RunningBroker(
            container, f"127.0.0.1:{kafka_port}", f"http://127.0.0.1:{admin_port}"
        )
        try:
            wait_ready(broker.admin)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{container.logs()}") from None
        yield broker
    finally:
        run(["podman", "rm", "--force", "--volumes", name], check=False)
