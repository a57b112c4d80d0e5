"""What this broker knows of its cluster, for operators: the metrics' ``cluster``,
``partitions`` and ``log_dirs`` sections and the admin API's ``GET /v1/cluster``.

Owns: ``cluster_figures`` (small, in every metrics snapshot: mode, controller, whether
this broker is the active controller, live brokers, offline partitions, the ZooKeeper
session, replication, this broker's rack), ``partition_figures`` (each partition replica
held here: leader, role, replicas, ISR, its log's size and offsets, its lag; and the log
dirs: the metrics add their counters) and ``cluster_view`` (the figures, with every
broker's endpoint and admin API URL where known, and every partition's leader, leader
epoch, replicas and ISR). The mode is ``single`` (a broker on its own), ``static``
(steered by ``trio-broker-controller``) or ``zookeeper``.
Reads only; cheap (the log dirs' volumes come from the last survey, never a ``statvfs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...apis.services import BrokerEndpoint, TopicInfo
from ..config import BrokerConfig
from ..coordination import ZkMembership
from ..replication import ClusterState, ReplicaFetchers, ReplicaManager


class Broker(Protocol):
    """What the report reads of the broker."""

    zk: ZkMembership | None
    config: BrokerConfig
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
        "rack": broker.config["broker.rack"] or None,
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


def partition_figures(broker: Broker) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The state of each partition replica held here (the metrics' ``partitions``
    section, less the counters ``BrokerMetrics`` adds) and the ``log_dirs`` section."""
    rm = broker.replica_manager
    if rm.logs is None:
        return [], []
    cluster, leaders, followed = broker.cluster, rm.replication.leaders, broker.fetchers.followed
    lags = rm.replication.follower_lag()
    states = []
    for (topic, index), plog in sorted(rm.logs.logs()):
        key = (topic, index)
        info = cluster.partition_info(topic, index)
        leads = cluster.leads(topic, index)
        led = leaders.get(key)
        end = plog.log_end_offset
        f = followed.get(key)
        states.append(
            {
                "topic": topic,
                "partition": index,
                # A follower's fetcher has LeaderAndIsr's word, which may be newer than
                # the metadata's (UpdateMetadata comes after it).
                "leader": broker.broker_id if leads else f.leader if f else info.leader,
                "role": "leader" if leads else "follower",
                "replicas": list(info.replicas),
                "isr": sorted(led.isr) if led is not None else list(info.isr),
                "log_size_bytes": plog.size_bytes,
                "log_start_offset": plog.log_start_offset,
                "log_end_offset": end,
                "high_watermark": plog.high_watermark,
                "lag_messages": 0 if leads or f is None else f.lag(end),
                "follower_lag_messages": {str(r): n for r, n in lags.get(key, {}).items()}
                if leads
                else {},
            }
        )
    return states, rm.log_dir_figures()


def cluster_view(
    broker: Broker, listener: str, admin_urls: Mapping[int, str | None]
) -> dict[str, Any]:
    """The figures, the brokers (their ``listener`` endpoints, and their admin API as
    ``admin_urls`` has it, else null) and every partition (with each follower's lag, in
    messages, where this broker leads)."""
    lags = broker.replica_manager.replication.follower_lag()
    return {
        **cluster_figures(broker),
        "brokers": [
            {
                "id": e.node_id,
                "host": e.host,
                "port": e.port,
                "rack": e.rack,
                "admin": admin_urls.get(e.node_id),
            }
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
