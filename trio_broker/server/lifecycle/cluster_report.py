"""What this broker knows of its cluster, for operators: the metrics' ``cluster`` section
and the admin API's ``GET /v1/cluster``.

Owns: ``cluster_figures`` (small, in every metrics snapshot: mode, controller, whether
this broker is the active controller, live brokers, offline partitions, the ZooKeeper
session, replication) and ``cluster_view`` (those figures, with every broker's endpoint and every
partition's leader, leader epoch, replicas and ISR). The mode is ``single`` (a broker on
its own), ``static`` (steered by ``trio-broker-controller``) or ``zookeeper``.
Reads only; cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...apis.services import BrokerEndpoint, TopicInfo
from ..coordination import ZkMembership
from ..replication import ClusterState, ReplicaFetchers, ReplicaManager


class Broker(Protocol):
    """What the report reads of the broker."""

    zk: ZkMembership | None
    cluster: ClusterState
    cluster_id: str
    broker_id: int
    replica_manager: ReplicaManager
    fetchers: ReplicaFetchers

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
        # ZooKeeper's /controller: what Metadata names too once the controller has told
        # this broker, and the operator's answer before (when Metadata names none).
        "controller_id": zk.controller_id if zk is not None else broker.controller_id,
        "active_controller": active,
        "controller_epoch": broker.cluster.controller_epoch,
        "brokers": len(cache.brokers) if cache.from_controller else 1,
        "offline_partitions": sum(1 for t in broker.topics() for p in t.partitions if p.leader < 0),
        "replication": replication_figures(broker),
        "zookeeper": None
        if zk is None
        else {
            "connect": zk.session.connect,
            "state": zk.session.state.value,
            "registered": not zk.coordinator.fenced,
            "elections_won": zk.coordinator.elections_won,
        },
    }


def replication_figures(broker: Broker) -> dict[str, Any]:
    """The leader's and the follower's figures (Kafka's ReplicaManager and fetcher
    metrics): partitions led with followers, those whose ISR lacks a replica
    (UnderReplicatedPartitions), ISR changes since start, the largest follower lag in
    messages, partitions followed here and the fetchers' truncations and failures; and
    each side's replication throttle (KIP-73): its rate limit, the byte rate of the
    partitions it throttles, how many of those led / followed here it throttles, their
    bytes and the times one was held back since start."""
    replication = broker.replica_manager.replication
    throttles = broker.replica_manager.throttles
    lags = [lag for per in replication.follower_lag().values() for lag in per.values()]
    fetchers = broker.fetchers
    return {
        "led_with_followers": len(replication.leaders),
        "under_replicated_partitions": sum(
            1 for s in replication.leaders.values() if len(s.isr) < len(s.replicas)
        ),
        "isr_shrinks": replication.isr_shrinks,
        "isr_expands": replication.isr_expands,
        "max_follower_lag": max(lags, default=0),
        "followed_partitions": len(fetchers.followed),
        "truncations": fetchers.truncations,
        "fetch_errors": fetchers.fetch_errors,
        "throttles": {
            "leader": throttles.leader.figures(replication.leaders),
            "follower": throttles.follower.figures(fetchers.followed),
        },
    }


def cluster_view(broker: Broker, listener: str) -> dict[str, Any]:
    """The figures, the brokers (their ``listener`` endpoints) and every partition (with
    each follower's lag, in messages, where this broker leads)."""
    lags = broker.replica_manager.replication.follower_lag()
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
                "follower_lag": {str(r): lag for r, lag in lags.get((t.name, p.index), {}).items()},
            }
            for t in sorted(broker.topics(), key=lambda t: t.name)
            for p in t.partitions
        ],
    }
