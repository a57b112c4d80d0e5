"""Client-side helpers of the security tests: a confluent-kafka round trip, waiting for a
client's error, and reading the broker's connections and counters."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ..support.brokers import BrokerThread


def round_trip(conf: dict[str, Any], topic: str, count: int = 5) -> list[bytes]:
    """Create ``topic``, produce ``count`` messages and consume them back (in a group)."""
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    producer = Producer(conf)
    for i in range(count):
        producer.produce(topic, f"{topic}-{i}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def kcat_round_trip(conf: dict[str, Any], topic: str, tmp_path: Path, count: int = 20) -> list[str]:
    """Produce ``count`` lines with kcat using librdkafka settings ``conf`` and consume
    them back with kcat; the lines read."""
    args = [f"-X{k}={v}" for k, v in conf.items() if k != "bootstrap.servers"]
    bootstrap = conf["bootstrap.servers"]
    src = tmp_path / f"{topic}.txt"
    src.write_text("".join(f"line {i}\n" for i in range(count)))
    subprocess.run(
        ["kcat", "-P", "-b", bootstrap, *args, "-t", topic, "-l", str(src)],
        check=True,
        timeout=30,
        capture_output=True,
    )
    out = subprocess.run(
        ["kcat", "-C", "-b", bootstrap, *args, "-t", topic, "-o", "beginning", "-e", "-q"],
        check=True,
        timeout=30,
        capture_output=True,
        text=True,
    )
    return out.stdout.splitlines()


def authenticates(conf: dict[str, Any]) -> bool:
    """Whether the client gets metadata (on a SASL listener: it authenticated)."""
    return bool(AdminClient(conf).list_topics(timeout=10).brokers)


def first_error(conf: dict[str, Any], timeout: float = 15) -> KafkaError:
    """The first error a client reports while trying to reach the broker."""
    errors: list[KafkaError] = []
    producer = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "the client reported no error"
    return errors[0]


def principals(broker: BrokerThread, listener: str) -> list[str]:
    assert broker.broker is not None
    server = broker.broker.socket_server

    def read() -> list[str]:
        return sorted(c.principal for c in server.listener(listener).connections)

    return broker.call(read)  # type: ignore[no-any-return]


def wait_for(predicate: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
