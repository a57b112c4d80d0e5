"""What this broker knows of its cluster, for operators: the metrics' ``cluster`` section
and the admin API's ``GET /v1/cluster``.

Owns: ``cluster_figures`` (small, in every metrics snapshot: mode, controller, whether
this broker is the active controller, live brokers, offline partitions, the ZooKeeper
session) and ``cluster_view`` (those figures, with every broker's endpoint and every
partition's leader, leader epoch, replicas and ISR). The mode is ``single`` (a broker on
its own), ``static`` (steered by ``trio-broker-controller``) or ``zookeeper``.
Reads only; cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..apis.services import BrokerEndpoint, TopicInfo
from .cluster_state import ClusterState
from .zk.membership import ZkMembership


class Broker(Protocol):
    """What the report reads of the broker."""

    zk: ZkMembership | None
    cluster: ClusterState
    cluster_id: str
    broker_id: int

    @property
    def controller_id(self) -> int: ...

    def topics(self) -> Sequence[TopicInfo]: ...

    def endpoints(self, listener: str) -> Sequence[BrokerEndpoint]: ...


def cluster_figures(broker: Broker) -> dict[str, Any]:
    zk = broker.zk
    cache = broker.cluster.cache
    if zk is not None:
        mode, active = "zookeeper", zk.coordinator.is_controller
    elif cache.from_controller:
        mode, active = "static", False  # the controller is trio-broker-controller
    else:
        mode, active = "single", True
    return {
        "mode": mode,
        "cluster_id": broker.cluster_id,
        "broker_id": broker.broker_id,
        "controller_id": broker.controller_id,
        "active_controller": active,
        "controller_epoch": broker.cluster.controller_epoch,
        "brokers": len(cache.brokers) if cache.from_controller else 1,
        "offline_partitions": sum(1 for t in broker.topics() for p in t.partitions if p.leader < 0),
        "zookeeper": None
        if zk is None
        else {
            "connect": zk.session.connect,
            "state": zk.session.state.value,
            "registered": not zk.coordinator.fenced,
            "elections_won": zk.coordinator.elections_won,
        },
    }


def cluster_view(broker: Broker, listener: str) -> dict[str, Any]:
    """The figures, the brokers (their ``listener`` endpoints) and every partition."""
    return {
        **cluster_figures(broker),
        "brokers": [
            {"id": e.node_id, "host": e.host, "port": e.port, "rack": e.rack}
            for e in broker.endpoints(listener)
        ],
        "partitions": [
            {
                "topic": t.name,
                "partition": p.index,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "offline_replicas": list(p.offline),
            }
            for t in sorted(broker.topics(), key=lambda t: t.name)
            for p in t.partitions
        ],
    }
