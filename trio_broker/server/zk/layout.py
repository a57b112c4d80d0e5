"""Kafka's ZooKeeper layout: the paths and the JSON of the nodes the broker writes.

Owns the node formats of ZooKeeper-era Kafka (``kafka.zk.ZkData``), so that a Kafka tool
reading ZooKeeper reads ours: a broker's registration (``/brokers/ids/<id>``, ephemeral,
version 5), the controller (``/controller``, ephemeral, version 1), the controller epoch
(``/controller_epoch``, a decimal number) and the cluster id (``/cluster/id``). Pure.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

BROKER_IDS = "/brokers/ids"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"
# The persistent paths Kafka creates on start-up that a broker of ours uses.
PERSISTENT = ("/brokers/ids", "/brokers/topics", "/config/topics", "/config/brokers", "/cluster")


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


@dataclass(frozen=True, slots=True)
class Registration:
    """What ``/brokers/ids/<id>`` says of a broker."""

    broker_id: int
    endpoints: Mapping[str, tuple[str, int]]  # listener name -> (host, port)
    protocols: Mapping[str, str]  # listener name -> security protocol
    rack: str | None = None

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
        return cls(broker_id, endpoints, protocols, doc.get("rack"))


def controller_data(broker_id: int, now_ms: int | None = None) -> bytes:
    stamp = now_ms if now_ms is not None else int(time.time() * 1000)
    return json.dumps({"version": 1, "brokerid": broker_id, "timestamp": str(stamp)}).encode()


def controller_id(data: bytes) -> int:
    return int(json.loads(data)["brokerid"])


def cluster_id_data(cluster_id: str) -> bytes:
    return json.dumps({"version": "1", "id": cluster_id}).encode()


def cluster_id_of(data: bytes) -> str:
    return str(json.loads(data)["id"])
