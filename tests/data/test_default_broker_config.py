"""The cluster-wide default broker config level, as Kafka's (``kafka-configs
--entity-default --entity-type brokers``), with real clients: confluent-kafka's
AdminClient on broker resource ``""`` and ``"0"``, the admin API's ``/v1/config``.

Precedence: this broker's own run-time setting > the cluster default's > the static
setting > the key's default, for the config in force (a pool size, a topic's retention)
and for what DescribeConfigs and ``GET /v1/config`` say; resource ``""`` describes only
its own keys; legacy AlterConfigs replaces one level only; both levels survive a restart,
and a dynamic_config.json of one level reads as this broker's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from trio_broker.protocol.messages.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from trio_broker.server.config.dynamic import DynamicConfigStore

from ..support.brokers import BrokerThread
from ..support.wire import WireClient

ADMIN = {"admin.listeners": "http://127.0.0.1:0"}
# DescribeConfigsResponse.ConfigSource
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC_BROKER, DEFAULT = 1, 2, 3, 4, 5
# BrokerThread's static settings include num.io.threads=4; this adds log.retention.hours.
STATIC = {**ADMIN, "log.retention.hours": "100"}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", dict(STATIC)).start()
    yield b
    b.stop()


def broker(name: str) -> ConfigResource:
    return ConfigResource(ConfigResource.Type.BROKER, name)


Ops = dict[str, tuple[AlterConfigOpType, str | None]]


def wire(b: BrokerThread, req: Any, version: int) -> None:
    """librdkafka and kafka-python refuse broker resource "" (Kafka's Java AdminClient
    takes it): requests for it go on the wire, through the codec the oracle tests check."""
    with WireClient(b.bootstrap) as client:
        (answer,) = client.request(req, version).responses
    assert answer.error_code == 0, answer.error_message


def alter(b: BrokerThread, name: str, ops: Ops) -> None:
    """IncrementalAlterConfigs on broker resource ``name``."""
    if name == "":
        Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
        configs = [
            Resource.AlterableConfig(name=k, config_operation=int(op.value), value=v)
            for k, (op, v) in ops.items()
        ]
        req = IncrementalAlterConfigsRequest(
            resources=[Resource(resource_type=4, resource_name="", configs=configs)],
            validate_only=False,
        )
        return wire(b, req, 1)
    res = broker(name)
    for key, (kind, value) in ops.items():
        res.add_incremental_config(ConfigEntry(key, value, incremental_operation=kind))
    admin = admin_for(b)  # kept until the answer comes
    admin.incremental_alter_configs([res])[res].result(10)
    return None


def replace(b: BrokerThread, name: str, settings: dict[str, str]) -> None:
    """AlterConfigs (legacy: the resource's whole set) on broker resource ``name``."""
    if name == "":
        Resource = AlterConfigsRequest.Resource
        configs = [Resource.AlterableConfig(name=k, value=v) for k, v in settings.items()]
        req = AlterConfigsRequest(
            resources=[Resource(resource_type=4, resource_name="", configs=configs)],
            validate_only=False,
        )
        return wire(b, req, 2)
    res = broker(name)
    for key, value in settings.items():
        res.set_config(key, value)
    admin = admin_for(b)
    admin.alter_configs([res])[res].result(10)
    return None


def admin_for(b: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap})


def described(admin: AdminClient, res: ConfigResource) -> dict[str, Any]:
    return admin.describe_configs([res])[res].result(10)  # type: ignore[no-any-return]


def default_level(b: BrokerThread) -> dict[str, tuple[str | None, int]]:
    """DescribeConfigs of resource "": name -> (value, source)."""
    return {n: e[:2] for n, e in wire_described(b, "", None).items()}


def wire_described(
    b: BrokerThread, name: str, keys: list[str] | None, resource_type: int = 4
) -> dict[str, Any]:
    """DescribeConfigs v4 with synonyms, on the wire: entry name -> (value, source,
    [(synonym name, value, source), ...]); confluent-kafka keys synonyms by name, so a key
    set at two levels would show once there."""
    req = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.Resource(
                resource_type=resource_type, resource_name=name, configuration_keys=keys
            )
        ],
        include_synonyms=True,
        include_documentation=False,
    )
    with WireClient(b.bootstrap) as client:
        (result,) = client.request(req, 4).results
    assert result.error_code == 0, result.error_message
    return {
        e.name: (e.value, e.config_source, [(s.name, s.value, s.source) for s in e.synonyms])
        for e in result.configs
    }


def io_pool_size(b: BrokerThread) -> int:
    return int(httpx.get(f"{b.admin_url}/v1/pools", timeout=10).json()["io"]["size"])


def admin_config(b: BrokerThread) -> dict[str, Any]:
    return httpx.get(f"{b.admin_url}/v1/config", timeout=10).json()  # type: ignore[no-any-return]


SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE


def test_the_cluster_default_counts_below_this_brokers_own_setting(node: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
    alter(node, "", {"log.retention.ms": (SET, "7200000"), "num.io.threads": (SET, "3")})

    # In force at once: the pool is resized, a topic takes the default's retention.
    assert io_pool_size(node) == 3
    entry = described(admin, ConfigResource(ConfigResource.Type.TOPIC, "t"))["retention.ms"]
    assert (entry.value, entry.source) == ("7200000", DYNAMIC_DEFAULT)
    _, _, synonyms = wire_described(node, "t", ["retention.ms"], resource_type=2)["retention.ms"]
    assert synonyms[:2] == [
        ("log.retention.ms", "7200000", DYNAMIC_DEFAULT),
        ("log.retention.hours", "100", STATIC_BROKER),
    ]
    config = admin_config(node)
    assert config["sources"]["num.io.threads"] == "dynamic-default"
    assert config["config"]["num.io.threads"] == "3"
    assert config["default_settings"] == {"log.retention.ms": "7200000", "num.io.threads": "3"}
    assert config["dynamic_settings"] == {}

    # This broker's own setting wins over the default; the synonyms list every level.
    alter(node, "0", {"num.io.threads": (SET, "5")})
    assert io_pool_size(node) == 5
    own = wire_described(node, "0", ["num.io.threads", "log.retention.ms"])
    value, source, synonyms = own["num.io.threads"]
    assert (value, source) == ("5", DYNAMIC_BROKER)
    assert synonyms[:3] == [
        ("num.io.threads", "5", DYNAMIC_BROKER),
        ("num.io.threads", "3", DYNAMIC_DEFAULT),
        ("num.io.threads", "4", STATIC_BROKER),
    ]
    assert synonyms[-1][2] == DEFAULT
    assert own["log.retention.ms"][:2] == ("7200000", DYNAMIC_DEFAULT)
    config = admin_config(node)
    assert config["sources"]["num.io.threads"] == "dynamic"
    assert config["dynamic_settings"] == {"num.io.threads": "5"}

    # Resource "" describes only its own keys, its own values, without this broker's level.
    default = wire_described(node, "", None)
    assert set(default) == {"log.retention.ms", "num.io.threads"}
    value, source, synonyms = default["num.io.threads"]
    assert (value, source) == ("3", DYNAMIC_DEFAULT)
    assert synonyms[0] == ("num.io.threads", "3", DYNAMIC_DEFAULT)
    assert DYNAMIC_BROKER not in [s[2] for s in synonyms]
    assert default_level(node) == {
        "log.retention.ms": ("7200000", DYNAMIC_DEFAULT),
        "num.io.threads": ("3", DYNAMIC_DEFAULT),
    }

    # Deleting this broker's setting lets the default count again.
    alter(node, "0", {"num.io.threads": (DELETE, None)})
    assert io_pool_size(node) == 3
    assert described(admin, broker("0"))["num.io.threads"].source == DYNAMIC_DEFAULT
    assert admin_config(node)["sources"]["num.io.threads"] == "dynamic-default"

    # PUT /v1/config changes this broker's level, not the default's.
    r = httpx.put(
        f"{node.admin_url}/v1/config", json={"settings": {"num.io.threads": "2"}}, timeout=10
    )
    assert r.status_code == 200, r.text
    assert io_pool_size(node) == 2
    assert described(admin, broker("0"))["num.io.threads"].source == DYNAMIC_BROKER
    assert default_level(node)["num.io.threads"] == ("3", DYNAMIC_DEFAULT)

    # Deleting the default's setting lets the static one count (for topics too).
    alter(node, "", {"log.retention.ms": (DELETE, None)})
    entry = described(admin, ConfigResource(ConfigResource.Type.TOPIC, "t"))["retention.ms"]
    assert (entry.value, entry.source) == (str(100 * 3600 * 1000), STATIC_BROKER)
    assert set(default_level(node)) == {"num.io.threads"}


def test_legacy_alter_configs_replaces_one_level_only(node: BrokerThread) -> None:
    replace(node, "", {"num.io.threads": "3", "max.connections.per.ip": "900"})
    alter(node, "0", {"message.max.bytes": (SET, "500000")})
    # Replacing the default's set drops its keys not named, and leaves this broker's alone.
    replace(node, "", {"max.connections.per.ip": "800"})
    config = admin_config(node)
    assert config["default_settings"] == {"max.connections.per.ip": "800"}
    assert config["dynamic_settings"] == {"message.max.bytes": "500000"}
    assert config["sources"]["num.io.threads"] == "override"  # the static setting again
    assert io_pool_size(node) == 4
    # Replacing this broker's set leaves the default's alone.
    replace(node, "0", {"max.connections.per.ip": "700"})
    config = admin_config(node)
    assert config["default_settings"] == {"max.connections.per.ip": "800"}
    assert config["dynamic_settings"] == {"max.connections.per.ip": "700"}
    assert config["config"]["max.connections.per.ip"] == "700"
    assert config["sources"]["message.max.bytes"] == "default"


def test_both_levels_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = BrokerThread(data, dict(STATIC)).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        alter(b, "", {"num.io.threads": (SET, "3"), "message.max.bytes": (SET, "600000")})
        alter(b, "0", {"message.max.bytes": (SET, "700000")})
    finally:
        b.stop()
    stored = json.loads((data / "dynamic_config.json").read_text())
    assert stored["settings"] == {"message.max.bytes": "700000"}
    assert stored["cluster_default"] == {"message.max.bytes": "600000", "num.io.threads": "3"}

    b = BrokerThread(data, dict(STATIC)).start()
    try:
        assert io_pool_size(b) == 3
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        own = described(admin, broker("0"))
        assert (own["num.io.threads"].value, own["num.io.threads"].source) == (
            "3",
            DYNAMIC_DEFAULT,
        )
        assert (own["message.max.bytes"].value, own["message.max.bytes"].source) == (
            "700000",
            DYNAMIC_BROKER,
        )
        assert default_level(b) == {
            "message.max.bytes": ("600000", DYNAMIC_DEFAULT),
            "num.io.threads": ("3", DYNAMIC_DEFAULT),
        }
    finally:
        b.stop()


def test_a_one_level_file_from_before_reads_as_this_brokers_settings(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    DynamicConfigStore(data).document.write({"settings": {"num.io.threads": "3"}})
    b = BrokerThread(data, dict(STATIC)).start()
    try:
        assert io_pool_size(b) == 3
        config = admin_config(b)
        assert config["sources"]["num.io.threads"] == "dynamic"
        assert config["default_settings"] == {}
        assert default_level(b) == {}
        alter(b, "", {"max.connections.per.ip": (SET, "900")})
    finally:
        b.stop()
    stored = json.loads((data / "dynamic_config.json").read_text())
    assert stored["settings"] == {"num.io.threads": "3"}
    assert stored["cluster_default"] == {"max.connections.per.ip": "900"}


def test_describe_configs_v0_says_whether_each_value_is_the_default(node: BrokerThread) -> None:
    """Kafka 3.9 serves DescribeConfigs v0 (4.0 removed it): no sources, only is_default."""
    alter(node, "", {"message.max.bytes": (SET, "600000")})

    def v0(name: str) -> dict[str, tuple[str | None, bool]]:
        req = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.Resource(
                    resource_type=4,
                    resource_name=name,
                    configuration_keys=[
                        "num.io.threads",
                        "message.max.bytes",
                        "queued.max.requests",
                    ],
                )
            ]
        )
        with WireClient(node.bootstrap) as client:
            (result,) = client.request(req, 0).results
        assert result.error_code == 0, result.error_message
        return {e.name: (e.value, e.is_default) for e in result.configs}

    assert v0("0") == {
        "num.io.threads": ("4", False),  # static
        "message.max.bytes": ("600000", False),  # the cluster default's
        "queued.max.requests": ("500", True),
    }
    assert v0("") == {"message.max.bytes": ("600000", False)}


def test_another_broker_id_is_kafkas_invalid_request(node: BrokerThread) -> None:
    req = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.Resource(
                resource_type=4, resource_name=name, configuration_keys=None
            )
            for name in ("7", "x", "")
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    with WireClient(node.bootstrap) as client:
        results = client.request(req, 4).results
    assert [(r.error_code, r.error_message) for r in results] == [
        (42, "Unexpected broker id, expected 0 or empty string, but received 7"),
        (42, "Broker id must be an integer, but it is: x"),
        (0, None),
    ]
