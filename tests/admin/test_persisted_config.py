"""Dynamic changes survive a restart, as Kafka's dynamic broker configs do: pool resizes
through the admin API (the advisor's ``--apply`` uses the same calls) and ``PUT /v1/config``
are stored in the data directory and are in force when the broker starts again, over the
static config, with ``dynamic`` as their source. The broker runs as a user starts it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka import KafkaConsumer, KafkaProducer

from ..support.brokers import BrokerProcess


def start(data: Path) -> BrokerProcess:
    return BrokerProcess(
        data,
        [f"log.dirs={data}", "admin.listeners=http://127.0.0.1:0", "num.io.threads=2"],
    ).start()


def test_resized_pools_and_config_changes_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = start(data)
    try:
        assert first.admin_url is not None
        with httpx.Client(base_url=first.admin_url, timeout=10) as http:
            assert http.put("/v1/pools/io", json={"size": 6}).status_code == 200
            assert http.put("/v1/pools/network/PLAINTEXT", json={"size": 3}).status_code == 200
            r = http.put("/v1/config", json={"settings": {"max.connections.per.ip": "500"}})
            assert r.status_code == 200, r.text
        producer = KafkaProducer(bootstrap_servers=first.bootstrap, acks="all")
        producer.send("kept", b"before the restart").get(timeout=30)
        producer.close()
    finally:
        assert first.terminate() == 0
    stored = json.loads((data / "dynamic_config.json").read_text())["settings"]
    assert stored == {
        "listener.name.plaintext.num.network.threads": "3",
        "max.connections.per.ip": "500",
        "num.io.threads": "6",
    }

    second = start(data)  # the same command line: num.io.threads=2 there
    try:
        assert second.admin_url is not None
        with httpx.Client(base_url=second.admin_url, timeout=10) as http:
            pools = http.get("/v1/pools").json()
            assert pools["io"]["size"] == 6
            assert pools["network"]["PLAINTEXT"]["size"] == 3
            config = http.get("/v1/config").json()
            assert config["config"]["num.io.threads"] == "6"
            assert config["sources"]["num.io.threads"] == "dynamic"
            assert config["config"]["max.connections.per.ip"] == "500"
            # removing the change makes the command line's value count again, also stored
            r = http.put("/v1/config", json={"settings": {"num.io.threads": None}})
            assert r.status_code == 200, r.text
            assert http.get("/v1/pools").json()["io"]["size"] == 2
        consumer = KafkaConsumer(
            "kept",
            bootstrap_servers=second.bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=10_000,
        )
        assert [m.value for m in consumer] == [b"before the restart"]
        consumer.close()
    finally:
        assert second.terminate() == 0
    stored = json.loads((data / "dynamic_config.json").read_text())["settings"]
    assert "num.io.threads" not in stored


def test_a_bad_stored_value_stops_start_up_naming_the_key_and_the_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "dynamic_config.json").write_text(
        json.dumps({"version": 1, "settings": {"num.io.threads": "zero"}})
    )
    code, lines = BrokerProcess(
        data, [f"log.dirs={data}", "admin.listeners=http://127.0.0.1:0"]
    ).run_to_failure()
    assert code == 2
    assert len(lines) == 1, lines
    assert "num.io.threads=zero" in lines[0] and "dynamic_config.json" in lines[0]


def test_concurrent_changes_are_all_kept_and_all_answered(tmp_path: Path) -> None:
    """Changes that arrive together (the advisor resizing a pool while an operator sets a
    limit) each get their answer, and none undoes another: each is made on top of the
    one before, in memory and in the stored file."""
    data = tmp_path / "data"
    broker = start(data)
    try:
        assert broker.admin_url is not None

        async def together() -> list[httpx.Response]:
            async with httpx.AsyncClient(base_url=broker.admin_url or "", timeout=30) as http:
                calls = [http.put("/v1/pools/io", json={"size": 3})]
                calls += [
                    http.put("/v1/config", json={"settings": {key: value}})
                    for key, value in CONCURRENT_CHANGES.items()
                ]
                return list(await asyncio.gather(*calls))

        answers = asyncio.run(together())
        assert [a.status_code for a in answers] == [200] * len(answers), [a.text for a in answers]
        with httpx.Client(base_url=broker.admin_url, timeout=10) as http:
            config = http.get("/v1/config").json()["config"]
            assert http.get("/v1/pools").json()["io"]["size"] == 3
    finally:
        assert broker.terminate() == 0
    expected = {"num.io.threads": "3", **CONCURRENT_CHANGES}
    assert {k: config[k] for k in expected} == expected
    stored = json.loads((data / "dynamic_config.json").read_text())["settings"]
    assert stored == expected


CONCURRENT_CHANGES = {
    "max.connections.per.ip": "400",
    "max.connections": "900",
    "log.retention.ms": "3600000",
    "log.segment.bytes": "10485760",
    "message.max.bytes": "2000000",
    "log.flush.interval.messages": "100000",
}


def test_concurrent_incremental_alter_configs_from_clients_are_all_kept(tmp_path: Path) -> None:
    """The same through Kafka's API: several AdminClients (each its own connection) set
    one key each on this broker at once, while a pool is resized over HTTP."""
    data = tmp_path / "data"
    broker = start(data)
    try:
        assert broker.admin_url is not None
        admins = [AdminClient({"bootstrap.servers": broker.bootstrap}) for _ in CONCURRENT_CHANGES]
        for admin in admins:  # connected before the race
            admin.list_topics(timeout=30)
        futures = []
        for admin, (key, value) in zip(admins, CONCURRENT_CHANGES.items(), strict=True):
            entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
            resource = ConfigResource("broker", "0", incremental_configs=[entry])
            futures.append(admin.incremental_alter_configs([resource])[resource])
        resized = httpx.put(f"{broker.admin_url}/v1/pools/io", json={"size": 3}, timeout=30)
        for f in futures:
            f.result(30)
        assert resized.status_code == 200, resized.text
    finally:
        assert broker.terminate() == 0
    stored = json.loads((data / "dynamic_config.json").read_text())["settings"]
    assert stored == {"num.io.threads": "3", **CONCURRENT_CHANGES}
