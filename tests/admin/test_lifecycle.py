"""The admin server's life: up before the Kafka listeners, down after them; readiness;
where its address is published; state that outlives a restart."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.server.config.broker_config import load_config
from trio_broker.server.lifecycle.broker import Broker
from trio_broker.server.node import new_broker
from trio_broker.server.startup import startup_error

from ..support.brokers import BASE, BrokerProcess, BrokerThread
from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient
from .conftest import ADMIN

METADATA = 3


def make_broker(data_dir: Path, api_table: Any = None, **settings: str) -> Broker:
    merged = {**BASE, **ADMIN, "log.dirs": str(data_dir), **settings}
    config = load_config(None, [f"{k}={v}" for k, v in merged.items()])
    return new_broker(config) if api_table is None else new_broker(config, api_table=api_table)


async def test_readiness_is_503_until_every_listener_accepts(tmp_path: Path) -> None:
    broker = make_broker(tmp_path)
    reached, release = trio.Event(), trio.Event()
    real_run = broker.socket_server.run

    async def held_run(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        reached.set()  # the admin server is up: it starts before the Kafka listeners
        await release.wait()
        await real_run(task_status=task_status)

    broker.socket_server.run = held_run  # type: ignore[method-assign]
    started = trio.Event()

    async def run() -> None:
        await nursery.start(broker.run)
        started.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        with trio.fail_after(10):
            await reached.wait()
        assert broker.admin_url is not None
        async with httpx.AsyncClient(base_url=broker.admin_url) as http:
            r = await http.get("/v1/status/ready")
            assert (r.status_code, r.json()) == (503, {"ready": False})
            assert (await http.get("/v1/pools")).status_code == 200  # the rest already works
            release.set()
            with trio.fail_after(10):
                await started.wait()
            r = await http.get("/v1/status/ready")
            assert (r.status_code, r.json()) == (200, {"ready": True})
        broker.shutdown()


async def test_readiness_is_503_while_shutting_down_and_the_server_stops_last(
    tmp_path: Path,
) -> None:
    gate = Gate()
    broker = make_broker(tmp_path, gated_table(METADATA, gate))
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.run)
        assert broker.admin_url is not None
        host, port = broker.bound_listeners()["PLAINTEXT"]
        busy = await AsyncWireClient.connect(f"{host}:{port}")
        await busy.send(MetadataRequest(topics=[]), 4)
        await trio.testing.wait_all_tasks_blocked()
        assert gate.waiting == 1
        async with httpx.AsyncClient(base_url=broker.admin_url) as http:
            assert (await http.get("/v1/status/ready")).status_code == 200
            broker.shutdown()
            await trio.testing.wait_all_tasks_blocked()
            # Kafka listeners no longer accept; a request is still in flight; the admin
            # API still answers, and says it is not ready.
            with pytest.raises(OSError):
                await trio.open_tcp_stream(host, port)
            r = await http.get("/v1/status/ready")
            assert (r.status_code, r.json()) == (503, {"ready": False})
            r = await http.get("/v1/connections")
            assert [c["mute_state"] for c in r.json()["connections"]] == [
                "MUTED_AND_RESPONSE_PENDING"
            ]
            assert not broker.stopped.is_set()
            gate.open()
            assert (await busy.receive())[0] == 1
            with trio.fail_after(10):
                await broker.stopped.wait()
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient(base_url=broker.admin_url) as http:
                await http.get("/v1/status/ready")
        await busy.aclose()


async def test_the_address_is_logged_and_written_to_listeners_json(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="trio_broker")
    broker = make_broker(tmp_path)
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.run)
        url = broker.admin_url
        assert url is not None and url.startswith("http://127.0.0.1:")
        assert int(url.rsplit(":", 1)[1]) > 0
        written = json.loads((tmp_path / "listeners.json").read_text())
        assert written["admin"] == url
        (line,) = [r.getMessage() for r in caplog.records if " started: " in r.getMessage()]
        assert line.endswith(f"admin={url}")
        assert not [r for r in caplog.records if "Running on" in r.getMessage()]
        broker.shutdown()


async def test_empty_admin_listeners_means_no_admin_server(tmp_path: Path) -> None:
    broker = make_broker(tmp_path, **{"admin.listeners": ""})
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.run)
        assert broker.admin_url is None
        assert "admin" not in json.loads((tmp_path / "listeners.json").read_text())
        broker.shutdown()


async def test_a_busy_admin_port_stops_start_up_before_kafka_listens(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    broker = make_broker(tmp_path, **{"admin.listeners": f"http://127.0.0.1:{port}"})
    try:
        with pytest.raises(BaseException) as caught:  # an exception group
            async with trio.open_nursery() as nursery:
                await nursery.start(broker.run)
        # the one line the command prints (see server.startup), naming the address
        error = startup_error(caught.value)
        assert error is not None and "address already in use" in str(error), caught.value
        assert f"127.0.0.1:{port}" in str(error)
        assert not broker.ready
        assert broker.socket_server.listener("PLAINTEXT").bound == []
    finally:
        taken.close()


def test_quotas_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = BrokerThread(data, ADMIN).start()
    try:
        with httpx.Client(base_url=first.admin_url) as http:
            assert http.put("/v1/quotas/clients/app", json={"producer_byte_rate": 4096}).is_success
            assert http.put(
                "/v1/quotas/clients/<default>", json={"request_percentage": 20}
            ).is_success
            assert http.put("/v1/quotas/clients/gone", json={"consumer_byte_rate": 1}).is_success
            assert http.delete("/v1/quotas/clients/gone").is_success
            before = http.get("/v1/quotas").json()
    finally:
        first.stop()
    second = BrokerThread(data, ADMIN).start()
    try:
        with httpx.Client(base_url=second.admin_url) as http:
            assert http.get("/v1/quotas").json() == before
            assert [q["entity"]["client-id"] for q in before["quotas"]] == [None, "app"]
    finally:
        second.stop()


def test_the_command_serves_the_admin_api(tmp_path: Path) -> None:
    proc = BrokerProcess(
        tmp_path,
        [
            "listeners=PLAINTEXT://127.0.0.1:0",
            "admin.listeners=http://127.0.0.1:0",
            f"log.dirs={tmp_path}",
        ],
    ).start()
    try:
        assert proc.admin_url is not None
        assert f"admin={proc.admin_url}" in "".join(proc.log)
        with httpx.Client(base_url=proc.admin_url, timeout=10) as http:
            assert http.get("/v1/status/ready").json() == {"ready": True}
            assert http.get("/v1/broker").json()["listeners"][0]["port"] == int(
                proc.bootstrap.rsplit(":", 1)[1]
            )
    finally:
        assert proc.terminate() == 0
    host, port = proc.admin_url.removeprefix("http://").rsplit(":", 1)
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2)
