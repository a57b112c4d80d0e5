"""Shared fixtures: real brokers on port 0 in a temporary data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .support.brokers import BrokerThread


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
async def run_broker(tmp_path: Path, nursery):  # type: ignore[no-untyped-def]
    """Start brokers inside the test's own trio loop: ``await run_broker(settings, table)``."""
    import trio

    from trio_broker.apis.table import API_TABLE
    from trio_broker.server.broker import Broker
    from trio_broker.server.config import load_config

    from .support.brokers import BASE

    started: list[Broker] = []

    async def start(settings: dict[str, object] | None = None, api_table=API_TABLE) -> Broker:
        merged = {**BASE, "log.dirs": str(tmp_path / f"data{len(started)}"), **(settings or {})}
        config = load_config(None, [f"{k}={v}" for k, v in merged.items()])
        broker = await nursery.start(Broker(config, api_table=api_table).run)
        started.append(broker)
        return broker

    yield start
    for b in started:
        b.shutdown()
    with trio.fail_after(30):
        for b in started:
            await b.stopped.wait()
