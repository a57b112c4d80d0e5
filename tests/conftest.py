"""Shared fixtures: real brokers on port 0 in a temporary data directory.

Kafka's default ports (9092, 9093) and the admin API's (9644) are taken for the whole
session: held here when they are free, or by another broker (``scripts/start``) when not.
Either way a test that binds or dials one of them fails at once, on any machine.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .support.brokers import BrokerThread

DEFAULT_PORTS = (9092, 9093, 9644)  # PLAINTEXT, CONTROLLER, the admin API

# Every JVM the suite starts (Spark's drivers, executors and standalone daemons, ZooKeeper)
# lives for seconds or minutes on a busy 2-core machine: compiling with C1 alone and
# collecting with the serial collector costs less CPU than the server defaults spend on
# warming up (tests/spark/test_trends.py: 113 -> 64 CPU seconds, 206 -> 117 s). Set before
# any test starts one, for the suite's processes only; a value in the environment wins.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.fixture(scope="session", autouse=True)
def default_ports_taken() -> Iterator[tuple[int, ...]]:
    """Bind (never listen on) each default port that is free, for the session.

    Bound without ``SO_REUSEADDR`` and not listening: a broker binding the port gets
    "Address already in use" and a client dialling it "Connection refused". Yields the
    ports held here (the others belong to someone else).
    """
    held: list[socket.socket] = []
    for port in DEFAULT_PORTS:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()  # another broker has it: the suite must pass beside it anyway
            continue
        held.append(sock)
    yield tuple(s.getsockname()[1] for s in held)
    for sock in held:
        sock.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker with a data plane and a control plane listener."""
    b = BrokerThread(
        tmp_path / "data",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "control.plane.listener.name": "CONTROLLER",
        },
    ).start()
    yield b
    b.stop()


@pytest.fixture
def telemetry_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker with the admin API, for client telemetry (KIP-714): the test module's
    ``TELEMETRY_SETTINGS`` (broker settings) added, and its ``TELEMETRY_SUBSCRIPTIONS``
    (name -> the admin API's body) made through the admin API before the test starts."""
    settings = getattr(request.module, "TELEMETRY_SETTINGS", {})
    b = BrokerThread(tmp_path / "data", {"admin.listeners": "http://127.0.0.1:0", **settings})
    b.start()
    try:
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            for name, body in getattr(request.module, "TELEMETRY_SUBSCRIPTIONS", {}).items():
                r = http.put(f"/v1/client-metrics/subscriptions/{name}", json=body)
                assert r.status_code == 200, r.text
        yield b
    finally:
        b.stop()


@pytest.fixture
def telemetry_http(telemetry_broker: BrokerThread) -> Iterator[httpx.Client]:
    """HTTP to ``telemetry_broker``'s admin API."""
    with httpx.Client(base_url=telemetry_broker.admin_url, timeout=10) as client:
        yield client


@pytest.fixture
async def run_broker(tmp_path: Path, nursery):  # type: ignore[no-untyped-def]
    """Start brokers inside the test's own trio loop: ``await run_broker(settings, table)``."""
    import trio

    from trio_broker.apis.table import API_TABLE
    from trio_broker.server.config.broker_config import load_config
    from trio_broker.server.lifecycle.broker import Broker
    from trio_broker.server.node import new_broker

    from .support.brokers import BASE

    started: list[Broker] = []

    async def start(settings: dict[str, object] | None = None, api_table=API_TABLE) -> Broker:
        merged = {**BASE, "log.dirs": str(tmp_path / f"data{len(started)}"), **(settings or {})}
        config = load_config(None, [f"{k}={v}" for k, v in merged.items()])
        broker = await nursery.start(new_broker(config, api_table=api_table).run)
        started.append(broker)
        return broker

    yield start
    for b in started:
        b.shutdown()
    with trio.fail_after(30):
        for b in started:
            await b.stopped.wait()
