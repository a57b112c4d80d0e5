"""SCRAM credentials and client quotas in a ZooKeeper cluster are the cluster's: a user
created through one broker logs in to every broker, a deletion through another broker
locks it out of all, a broker that joins later knows them; a quota set through one broker
(AlterClientQuotas or the admin API) is in force on every broker, and one written by
Kafka's tools straight to ZooKeeper too. ZooKeeper holds them where Kafka's tools look
(``/config/users/<user>``, ``/config/clients/<client-id>``, Kafka's forms). Real
ZooKeeper, real broker processes, confluent-kafka's AdminClient and SASL/SCRAM clients,
our wire client for the quota APIs (no PyPI client sends them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from trio_broker.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
)

from ..support.brokers import BrokerProcess
from ..support.wire import WireClient
from .test_zookeeper_cluster import broker, metadata, until

SASL = [
    "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
    "CONTROLLER:PLAINTEXT",
    "sasl.enabled.mechanisms=SCRAM-SHA-256",
    "connection.failed.authentication.delay.ms=50",
]


def logs_in(b: BrokerProcess, user: str, password: str) -> bool:
    """Whether a SCRAM-SHA-256 client gets Metadata from ``b``'s SASL listener."""
    admin = AdminClient(
        {
            "bootstrap.servers": b.listeners["SASL_PLAINTEXT"],
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": password,
        }
    )
    try:
        admin.list_topics(timeout=3)
    except KafkaException:
        return False
    return True


def alter(b: BrokerProcess, *changes: object) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.alter_user_scram_credentials(list(changes)).values():
        f.result(15)


def test_a_user_made_through_one_broker_logs_in_to_every_broker(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = {i: broker(tmp_path, connect, i, *SASL).start() for i in (0, 1)}
    try:
        until("both named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        alter(brokers[0], UserScramCredentialUpsertion("alice", info, b"alice-secret"))
        until("alice logs in to broker 1", lambda: logs_in(brokers[1], "alice", "alice-secret"))
        assert logs_in(brokers[0], "alice", "alice-secret")
        assert not logs_in(brokers[1], "alice", "wrong")

        # Where Kafka's tools look, in Kafka's form, beside what else the node holds.
        doc = json.loads(client.get("/config/users/alice")[0])
        text = doc["config"]["SCRAM-SHA-256"]
        assert text.startswith("salt=") and text.endswith(",iterations=4096")
        assert {p.split("=", 1)[0] for p in text.split(",")} == {
            "salt",
            "stored_key",
            "server_key",
            "iterations",
        }
        doc["config"]["producer_byte_rate"] = "1048576"  # a quota, as kafka-configs writes
        client.set("/config/users/alice", json.dumps(doc).encode())

        # A broker that joins later knows her.
        brokers[2] = broker(tmp_path, connect, 2, *SASL).start()
        until("alice logs in to broker 2", lambda: logs_in(brokers[2], "alice", "alice-secret"))

        # Deleted through another broker: locked out of all three; the quota stays.
        alter(brokers[1], UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_256))
        for i in (0, 1, 2):
            until(
                f"alice locked out of broker {i}",
                lambda i=i: not logs_in(brokers[i], "alice", "alice-secret"),  # type: ignore[misc]
            )
        left = json.loads(client.get("/config/users/alice")[0])["config"]
        assert left == {"producer_byte_rate": "1048576"}
    finally:
        for b in brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.terminate()


def test_users_from_before_the_cluster_are_kept(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """A broker's users from before it joined a cluster without users go to ZooKeeper,
    and every broker then has them."""
    connect, client = zk
    first = broker(tmp_path, connect, 0, *SASL).start()
    try:
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        alter(first, UserScramCredentialUpsertion("bob", info, b"bob-secret"))
    finally:
        first.terminate()
    client.delete("/config/users", recursive=True)  # as if bob came before ZooKeeper did
    brokers = {i: broker(tmp_path, connect, i, *SASL).start() for i in (0, 1)}
    try:
        until("bob in ZooKeeper", lambda: client.exists("/config/users/bob"))
        until("bob logs in to broker 1", lambda: logs_in(brokers[1], "bob", "bob-secret"))
    finally:
        for b in brokers.values():
            b.terminate()


def quotas_of(b: BrokerProcess) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """Every quota ``b`` enforces (DescribeClientQuotas), by entity."""
    with WireClient(b.bootstrap) as c:
        r = c.request(DescribeClientQuotasRequest(components=[], strict=False), 1)
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: v.value for v in entry.values
        }
        for entry in r.entries
    }


def alter_quota(b: BrokerProcess, entity: dict[str, str | None], **values: Any) -> None:
    A = AlterClientQuotasRequest.EntryData
    ops = [A.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in values.items()]
    entities = [A.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()]
    req = AlterClientQuotasRequest(entries=[A(entity=entities, ops=ops)], validate_only=False)
    with WireClient(b.bootstrap) as c:
        assert c.request(req, 1).entries[0].error_code == 0


def test_a_quota_set_through_one_broker_is_in_force_on_every_broker(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    admin = "admin.listeners=http://127.0.0.1:0"
    brokers = {i: broker(tmp_path, connect, i, admin).start() for i in (0, 1)}
    app = (("client-id", "app"),)
    alice, alice_app = (("user", "alice"),), (("user", "alice"), ("client-id", "app"))
    try:
        until("both named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        url = f"{brokers[0].admin_url}/v1/quotas/clients/app"
        assert httpx.put(url, json={"producer_byte_rate": 1048576}, timeout=10).status_code == 200
        until("broker 1 has app's quota", lambda: quotas_of(brokers[1]).get(app))
        assert quotas_of(brokers[1])[app] == {"producer_byte_rate": 1048576.0}
        assert json.loads(client.get("/config/clients/app")[0])["config"] == {
            "producer_byte_rate": "1048576"
        }

        alter_quota(brokers[1], {"user": "alice"}, consumer_byte_rate=2048.0)
        alter_quota(brokers[1], {"user": "alice", "client-id": "app"}, request_percentage=50.0)
        until("broker 0 has alice's", lambda: alice_app in quotas_of(brokers[0]))
        assert quotas_of(brokers[0])[alice] == {"consumer_byte_rate": 2048.0}
        assert quotas_of(brokers[0])[alice_app] == {"request_percentage": 50.0}
        nested = json.loads(client.get("/config/users/alice/clients/app")[0])["config"]
        assert nested == {"request_percentage": "50.0"}

        # Written by Kafka's tools: the node, then the announcement.
        data = json.dumps({"version": 1, "config": {"producer_byte_rate": "4096"}}).encode()
        client.create("/config/clients/<default>", data, makepath=True)
        change = {"version": 2, "entity_path": "clients/<default>"}
        client.create("/config/changes/config_change_", json.dumps(change).encode(), sequence=True)
        default = (("client-id", None),)
        for i in (0, 1):
            until(f"broker {i} has the default", lambda i=i: default in quotas_of(brokers[i]))  # type: ignore[misc]

        assert httpx.delete(url, timeout=10).status_code == 200
        until("app's quota gone from broker 1", lambda: app not in quotas_of(brokers[1]))
        # A broker that joins later has them all.
        brokers[2] = broker(tmp_path, connect, 2, admin).start()
        until("broker 2 has alice's", lambda: alice_app in quotas_of(brokers[2]))
        assert quotas_of(brokers[2]) == quotas_of(brokers[0])
    finally:
        for b in brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.terminate()
