"""Graceful shutdown: stop accepting, finish what is in flight, close, exit 0."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerProcess
from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient, WireClient


async def test_in_flight_requests_finish_and_new_connections_are_refused(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    broker = await run_broker({}, gated_table(3, gate))
    host, port = broker.bound_listeners()["PLAINTEXT"]
    busy = await AsyncWireClient.connect(f"{host}:{port}")
    idle = await AsyncWireClient.connect(f"{host}:{port}")
    await busy.send(MetadataRequest(topics=[]), 4)
    await trio.testing.wait_all_tasks_blocked()
    assert gate.waiting == 1

    broker.shutdown()
    await trio.testing.wait_all_tasks_blocked()
    with pytest.raises(OSError):
        await trio.open_tcp_stream(host, port)  # no longer accepting
    assert await idle.closed_by_peer()  # idle connections are closed
    assert not broker.stopped.is_set()  # ... but the request in flight is not dropped

    gate.open()
    corr, response = await busy.receive()
    assert corr == 1 and response.brokers[0].node_id == 0
    with trio.fail_after(5):
        await broker.stopped.wait()
    assert await busy.closed_by_peer()


async def test_a_stuck_request_does_not_hold_shutdown_past_the_deadline(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()  # never opened
    broker = await run_broker({"shutdown.timeout.ms": "300"}, gated_table(3, gate))
    host, port = broker.bound_listeners()["PLAINTEXT"]
    client = await AsyncWireClient.connect(f"{host}:{port}")
    await client.send(MetadataRequest(topics=[]), 4)
    await trio.testing.wait_all_tasks_blocked()
    broker.shutdown()
    with trio.fail_after(10):
        await broker.stopped.wait()
    assert await client.closed_by_peer()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_command_exits_0_on_a_signal(tmp_path: Path, signum: signal.Signals) -> None:
    proc = BrokerProcess(
        tmp_path,
        [
            "listeners=PLAINTEXT://127.0.0.1:0",
            "admin.listeners=http://127.0.0.1:0",
            f"log.dirs={tmp_path}",
        ],
    ).start()
    with WireClient(proc.bootstrap) as client:
        assert client.request(MetadataRequest(topics=[]), 4).brokers
    assert proc.proc is not None
    proc.proc.send_signal(signum)
    assert proc.proc.wait(30) == 0
    proc._drain.join(5)
    log = "".join(proc.log)
    assert "shutting down" in log and "stopped" in log
    host, port = proc.bootstrap.split(":")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2)


def test_a_bad_config_key_stops_start_up_naming_it(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trio_broker", "--override", "num.io.thread=4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "num.io.thread" in out.stderr


def test_a_bad_config_value_stops_start_up_naming_it(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trio_broker", "--override", "num.io.threads=zero"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "num.io.threads" in out.stderr and "zero" in out.stderr
