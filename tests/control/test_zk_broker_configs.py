"""Dynamic broker configs in a ZooKeeper cluster, as ``kafka-configs.sh --entity-type
brokers`` makes them: the cluster default (``--entity-default``) asked of one broker is in
force on every broker, one that joins later included; a broker's own level stays its own;
every change, whichever door (AlterConfigs, the admin API), is kept in ZooKeeper's
``/config/brokers``; a change a broker had before it joined is not dropped. Real
ZooKeeper, real broker processes, confluent-kafka's AdminClient."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kazoo.client import KazooClient

from trio_broker.protocol.messages.configs import IncrementalAlterConfigsRequest

from ..support.brokers import BrokerProcess
from ..support.wire import WireClient
from .test_replication import stop_all
from .test_zookeeper_cluster import broker, metadata, until

SET = AlterConfigOpType.SET
ADMIN = "admin.listeners=http://127.0.0.1:0"


def io_threads(b: BrokerProcess) -> int:
    """The io pool's size as the broker's admin API reports it."""
    assert b.admin_url is not None
    size: int = httpx.get(f"{b.admin_url}/v1/pools", timeout=10).json()["io"]["size"]
    return size


def stored(client: KazooClient, entity: str) -> dict[str, str] | None:
    found = client.exists(f"/config/brokers/{entity}")
    if found is None:
        return None
    doc: dict[str, Any] = json.loads(client.get(f"/config/brokers/{entity}")[0])
    return doc["config"]


def set_io_threads(bootstrap: str, entity: str, size: int) -> None:
    """IncrementalAlterConfigs SET num.io.threads on broker resource ``entity``, asked
    of the broker at ``bootstrap`` (for ``""``, the cluster default, on the wire:
    librdkafka refuses that name, Kafka's Java AdminClient takes it)."""
    if entity:
        entry = ConfigEntry("num.io.threads", str(size), incremental_operation=SET)
        resource = ConfigResource("broker", entity, incremental_configs=[entry])
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.incremental_alter_configs([resource])[resource].result(30)
        return
    Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    change = Resource.AlterableConfig(
        name="num.io.threads", config_operation=int(SET.value), value=str(size)
    )
    req = IncrementalAlterConfigsRequest(
        resources=[Resource(resource_type=4, resource_name="", configs=[change])],
        validate_only=False,
    )
    with WireClient(bootstrap) as client:
        (answer,) = client.request(req, 1).responses
    assert answer.error_code == 0, answer.error_message


def test_the_cluster_default_is_in_force_on_every_broker_and_each_keeps_its_own(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    # Broker 1 had a cluster-default change of its own before it joined this cluster.
    early = broker(tmp_path, connect, 1, ADMIN, "zookeeper.connect=")
    early.start()
    try:
        set_io_threads(early.bootstrap, "", 6)
    finally:
        early.terminate()
    brokers: dict[int, BrokerProcess] = {}
    try:
        # Broker 1 first: ZooKeeper takes its data dir's cluster id (a second id would be
        # refused, as Kafka refuses one).
        for i in (1, 0):
            brokers[i] = broker(tmp_path, connect, i, ADMIN).start()
        until("both brokers named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        # Kept, not dropped: ZooKeeper had no default, so broker 1 wrote its own there,
        # and broker 0 follows it.
        until("the earlier default in ZooKeeper", lambda: stored(client, "<default>"))
        assert stored(client, "<default>") == {"num.io.threads": "6"}
        until("broker 0 follows it", lambda: io_threads(brokers[0]) == 6)

        # The cluster default asked of broker 0 reaches broker 1.
        set_io_threads(brokers[0].bootstrap, "", 3)
        assert stored(client, "<default>") == {"num.io.threads": "3"}
        for b in brokers.values():
            until(f"broker {b} runs 3 io threads", lambda b=b: io_threads(b) == 3)
        config = httpx.get(f"{brokers[1].admin_url}/v1/config", timeout=10).json()
        assert config["sources"]["num.io.threads"] == "dynamic-default"

        # A broker's own level (AlterConfigs asked of that broker) is its own.
        set_io_threads(brokers[1].bootstrap, "1", 5)
        assert stored(client, "1") == {"num.io.threads": "5"}
        assert io_threads(brokers[1]) == 5
        assert io_threads(brokers[0]) == 3

        # The admin API's resize is a change of the broker's own level too.
        assert brokers[0].admin_url is not None
        put = httpx.put(f"{brokers[0].admin_url}/v1/pools/io", json={"size": 4}, timeout=10)
        assert put.status_code == 200, put.text
        assert stored(client, "0") == {"num.io.threads": "4"}

        # A broker that joins later starts with the cluster's default.
        brokers[2] = broker(tmp_path, connect, 2, ADMIN).start()
        until("broker 2 runs the default", lambda: io_threads(brokers[2]) == 3)
        assert io_threads(brokers[1]) == 5
    finally:
        stop_all(brokers)
