"""Dynamic changes survive a restart, as Kafka's dynamic broker configs do: pool resizes
through the admin API (the advisor's ``--apply`` uses the same calls) and ``PUT /v1/config``
are stored in the data directory and are in force when the broker starts again, over the
static config, with ``dynamic`` as their source. The broker runs as a user starts it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
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
