"""SCRAM credentials in a ZooKeeper cluster are the cluster's: a user created through one
broker logs in to every broker, a deletion through another broker locks it out of all, a
broker that joins later knows them, and ZooKeeper holds them where Kafka's tools look
(``/config/users/<user>``, Kafka's credential form). Real ZooKeeper, real broker
processes, confluent-kafka's AdminClient and SASL/SCRAM clients."""

from __future__ import annotations

import json
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
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
