"""A new project with nothing but ``pip install trio-broker[testing]`` (and the Kafka
client it uses): a fresh virtualenv, this checkout installed into it as a user installs a
release (not editable), and a test file using the ``kafka_broker`` fixture, which the
``pytest11`` entry point loads with no configuration, passes with confluent-kafka,
kafka-python and aiokafka."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TEST_FILE = """
import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer


def test_confluent_kafka(kafka_broker):
    kafka_broker.create_topic("c")
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    p.produce("c", b"hello")
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "g",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["c"])
    m = None
    for _ in range(30):
        m = c.poll(1.0)
        if m is not None:
            break
    c.close()
    assert m is not None and m.value() == b"hello"


def test_kafka_python(kafka_broker):
    kafka_broker.create_topic("k")
    p = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    p.send("k", b"hello").get(10)
    p.close()
    c = KafkaConsumer("k", bootstrap_servers=kafka_broker.bootstrap,
                      auto_offset_reset="earliest", consumer_timeout_ms=10000)
    assert next(iter(c)).value == b"hello"
    c.close()


def test_aiokafka(kafka_broker):
    kafka_broker.create_topic("a")

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
        await p.start()
        await p.send_and_wait("a", b"hello")
        await p.stop()
        c = AIOKafkaConsumer("a", bootstrap_servers=kafka_broker.bootstrap,
                             auto_offset_reset="earliest")
        await c.start()
        try:
            m = await asyncio.wait_for(c.getone(), 10)
        finally:
            await c.stop()
        return m.value

    assert asyncio.run(main()) == b"hello"
"""


def test_a_new_project_passes_with_each_client(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"{ROOT}[testing]",
            "confluent-kafka",
            "kafka-python",
            "aiokafka",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean,
        cwd=tmp_path,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_app.py").write_text(TEST_FILE)
    run = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean,
        cwd=project,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
    # The broker came from the installed package, not from this checkout.
    where = subprocess.run(
        [str(python), "-c", "import trio_broker; print(trio_broker.__file__)"],
        capture_output=True,
        text=True,
        env=clean,
        cwd=project,
    )
    assert str(env_dir) in where.stdout
