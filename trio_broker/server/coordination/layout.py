"""Kafka's ZooKeeper layout: the paths and the JSON of the nodes the broker writes.

Owns the node formats of ZooKeeper-era Kafka (``kafka.zk.ZkData``), so that a Kafka tool
reading ZooKeeper reads ours: a broker's registration (``/brokers/ids/<id>``, ephemeral,
version 5; with one field of ours, ``admin_url``, the broker's admin API, which Kafka's
decoder ignores as it ignores every field it does not read), the controller
(``/controller``, ephemeral, version 1), the controller epoch (``/controller_epoch``, a
decimal number), the cluster id (``/cluster/id``), a topic's replica assignment
(``/brokers/topics/<t>``, version 3, with the topic id and the replicas being added and
removed by a reassignment), each partition's state
(``/brokers/topics/<t>/partitions/<p>/state``: leader, leader epoch, ISR, controller
epoch) and a topic's config overrides (``/config/topics/<t>``). Pure.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
DEFAULT_BROKER = "<default>"  # the cluster-wide default's node under CONFIG_BROKERS
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"
# A leader that changed a partition's ISR leaves a sequential node here for the controller.
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = ISR_CHANGE_NOTIFICATION + "/isr_change_"
# The persistent paths Kafka creates on start-up that a broker of ours uses.
PERSISTENT = (
    "/brokers/ids",
    "/brokers/topics",
    "/config/topics",
    "/config/brokers",
    "/cluster",
    "/isr_change_notification",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


@dataclass(frozen=True, slots=True)
class Registration:
    """What ``/brokers/ids/<id>`` says of a broker."""

    broker_id: int
    endpoints: Mapping[str, tuple[str, int]]  # listener name -> (host, port)
    protocols: Mapping[str, str]  # listener name -> security protocol
    rack: str | None = None
    admin: str | None = None  # the admin API's URL, http://host:port (ours, not Kafka's)

    def encode(self, now_ms: int | None = None) -> bytes:
        plain = self.endpoints.get("PLAINTEXT")
        data: dict[str, object] = {
            "features": {},
            "listener_security_protocol_map": dict(self.protocols),
            "endpoints": [f"{name}://{h}:{p}" for name, (h, p) in self.endpoints.items()],
            "jmx_port": -1,
            "host": plain[0] if plain else None,
            "port": plain[1] if plain else -1,
            "timestamp": str(now_ms if now_ms is not None else int(time.time() * 1000)),
            "version": 5,
        }
        if self.rack is not None:
            data["rack"] = self.rack
        if self.admin is not None:
            data["admin_url"] = self.admin
        return json.dumps(data).encode()

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> Registration:
        doc = json.loads(data)
        endpoints: dict[str, tuple[str, int]] = {}
        for text in doc.get("endpoints", []):
            name, _, address = text.partition("://")
            host, _, port = address.rpartition(":")
            endpoints[name] = (host.strip("[]"), int(port))
        protocols = doc.get("listener_security_protocol_map") or {n: n for n in endpoints}
        admin = doc.get("admin_url")
        return cls(
            broker_id,
            endpoints,
            protocols,
            doc.get("rack"),
            admin if isinstance(admin, str) else None,
        )


def controller_data(broker_id: int, now_ms: int | None = None) -> bytes:
    stamp = now_ms if now_ms is not None else int(time.time() * 1000)
    return json.dumps({"version": 1, "brokerid": broker_id, "timestamp": str(stamp)}).encode()


def controller_id(data: bytes) -> int:
    return int(json.loads(data)["brokerid"])


def cluster_id_data(cluster_id: str) -> bytes:
    return json.dumps({"version": "1", "id": cluster_id}).encode()


def cluster_id_of(data: bytes) -> str:
    return str(json.loads(data)["id"])


def topic_path(name: str) -> str:
    return f"{TOPICS}/{name}"


def partition_state_path(name: str, partition: int) -> str:
    return f"{TOPICS}/{name}/partitions/{partition}/state"


def topic_config_path(name: str) -> str:
    return f"{CONFIG_TOPICS}/{name}"


def broker_config_path(entity: str) -> str:
    """A broker id's own dynamic configs, or the cluster default's (``DEFAULT_BROKER``)."""
    return f"{CONFIG_BROKERS}/{entity}"


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def assignment_data(
    topic_id: uuid.UUID,
    partitions: Mapping[int, Sequence[int]],
    adding: Mapping[int, Sequence[int]] | None = None,
    removing: Mapping[int, Sequence[int]] | None = None,
) -> bytes:
    """A topic node: each partition's replicas and, for a partition being reassigned
    (KIP-455), the replicas being added and removed (its ``partitions`` entry is then the
    full set, target replicas first)."""

    def lists(by_partition: Mapping[int, Sequence[int]] | None) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted((by_partition or {}).items()) if r}

    return json.dumps(
        {
            "version": 3,
            "topic_id": kafka_uuid(topic_id),
            "partitions": {str(p): list(r) for p, r in sorted(partitions.items())},
            "adding_replicas": lists(adding),
            "removing_replicas": lists(removing),
        }
    ).encode()


def assignment_of(data: bytes) -> tuple[uuid.UUID, dict[int, list[int]]]:
    """(topic id, partition -> replicas) of a topic node."""
    doc = json.loads(data)
    partitions = {int(p): [int(b) for b in r] for p, r in doc["partitions"].items()}
    return parse_kafka_uuid(doc["topic_id"]), partitions


def reassignment_of(data: bytes) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(adding, removing): partition -> replicas, of the partitions being reassigned
    (empty for a node written before KIP-455's fields, or with none under way)."""
    doc = json.loads(data)

    def lists(key: str) -> dict[int, list[int]]:
        found = doc.get(key) or {}
        return {int(p): [int(b) for b in r] for p, r in found.items() if r}

    return lists("adding_replicas"), lists("removing_replicas")


def config_data(configs: Mapping[str, str]) -> bytes:
    """A config node's data (a topic's or a broker's), as Kafka writes it."""
    return json.dumps({"version": 1, "config": dict(configs)}).encode()


def config_of(data: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in json.loads(data).get("config", {}).items()}


@dataclass(frozen=True, slots=True)
class LeaderIsr:
    """A partition's state node: who leads, in which epoch, which replicas are in sync,
    and the controller epoch that wrote it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        return json.dumps(
            {
                "controller_epoch": self.controller_epoch,
                "leader": self.leader,
                "version": 1,
                "leader_epoch": self.leader_epoch,
                "isr": list(self.isr),
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> LeaderIsr:
        doc = json.loads(data)
        return cls(
            int(doc["leader"]),
            int(doc["leader_epoch"]),
            tuple(int(b) for b in doc["isr"]),
            int(doc["controller_epoch"]),
        )


def isr_change_data(partitions: Sequence[tuple[str, int]]) -> bytes:
    """An ISR change notification, as Kafka's leaders write it."""
    return json.dumps(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    ).encode()


def isr_change_of(data: bytes) -> list[tuple[str, int]]:
    """The partitions an ISR change notification names."""
    return [(str(e["topic"]), int(e["partition"])) for e in json.loads(data)["partitions"]]
