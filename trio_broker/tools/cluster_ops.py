"""The operations of a ZooKeeper cluster, as a thin client of Kafka's own APIs.

Owns: ``ClusterOps``, behind ``trio-broker-controller elect``, ``reassign`` and
``reassignments``: it asks any broker (a ``listeners.json``'s data listener) for Metadata,
finds the cluster's controller there, and sends it ElectLeaders (preferred or unclean),
AlterPartitionReassignments or ListPartitionReassignments, as ``kafka-leader-election.sh``
and ``kafka-reassign-partitions.sh`` do. The same operations work from any Kafka
AdminClient; the controller in the broker does the work and the checks.

A move's replication throttle (KIP-73), as ``kafka-reassign-partitions.sh --throttle``
sets it before the move: both ``*.replication.throttled.rate`` on every broker involved
(the current replicas and the new ones; IncrementalAlterConfigs at each broker's own
level, sent to that broker), and on the topic ``leader.replication.throttled.replicas``
gains the current replicas, ``follower.replication.throttled.replicas`` the new ones
(APPEND, so other moves' entries stay; a list that is ``*`` already throttles them). As
its ``--verify``, ``clear_throttles`` removes them once nothing moves: the topic's lists
when none of its partitions moves, the rates of every broker when no move is under way.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ErrorCode
from ..protocol.messages.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from ..protocol.messages.elections import ElectLeadersRequest
from ..protocol.messages.metadata import MetadataRequest
from ..protocol.messages.reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from ..protocol.schema import ZERO_UUID
from .client import WireClient

METADATA_VERSION = 12
ELECT_LEADERS_VERSION = 2
CONFIGS_VERSION = 1
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND = 0, 1, 2
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


class ClusterOpsError(Exception):
    pass


class ClusterOps:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _controller(self) -> WireClient:
        client = WireClient(self.bootstrap)
        try:
            md = client.request(MetadataRequest(topics=[]), METADATA_VERSION)
        finally:
            client.close()
        found = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
        address = found.get(md.controller_id)
        if address is None:
            raise ClusterOpsError(f"no controller known to {self.bootstrap}")
        return WireClient(address)

    def _ask(self, request: Any, version: int) -> Any:
        client = self._controller()
        try:
            return client.request(request, version)
        finally:
            client.close()

    def elect(self, partitions: list[tuple[str, int]] | None, unclean: bool) -> dict[str, Any]:
        """ElectLeaders: each partition's outcome (error name, or "ok")."""
        wanted: dict[str, list[int]] = {}
        for topic, p in partitions or ():
            wanted.setdefault(topic, []).append(p)
        response = self._ask(
            ElectLeadersRequest(
                election_type=1 if unclean else 0,
                topic_partitions=None
                if partitions is None
                else [
                    ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
                    for t, ps in wanted.items()
                ],
            ),
            ELECT_LEADERS_VERSION,
        )
        if response.error_code:
            raise ClusterOpsError(f"ElectLeaders refused: error {response.error_code}")
        return {
            f"{r.topic}-{p.partition_id}": p.error_message or _code(p.error_code)
            for r in response.replica_election_results
            for p in r.partition_result
        }

    def reassign(self, topic: str, partition: int, replicas: list[int] | None) -> str:
        """AlterPartitionReassignments of one partition (None: cancel); "ok" or the error."""
        T = AlterPartitionReassignmentsRequest.ReassignableTopic
        response = self._ask(
            AlterPartitionReassignmentsRequest(
                topics=[
                    T(
                        name=topic,
                        partitions=[
                            T.ReassignablePartition(partition_index=partition, replicas=replicas)
                        ],
                    )
                ]
            ),
            0,
        )
        if response.error_code:
            raise ClusterOpsError(response.error_message or f"error {response.error_code}")
        (result,) = [p for t in response.responses for p in t.partitions]
        return result.error_message or _code(result.error_code)

    def _metadata(self, topics: list[str]) -> Any:
        wanted = [MetadataRequest.Topic(topic_id=ZERO_UUID, name=t) for t in topics]
        request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        with WireClient(self.bootstrap) as client:
            return client.request(request, METADATA_VERSION)

    def _alter(self, address: str, kind: int, name: str, ops: list[tuple[str, int, Any]]) -> None:
        """IncrementalAlterConfigs of one resource at ``address``."""
        R = IncrementalAlterConfigsRequest.AlterConfigsResource
        request = IncrementalAlterConfigsRequest(
            resources=[
                R(
                    resource_type=kind,
                    resource_name=name,
                    configs=[
                        R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops
                    ],
                )
            ],
            validate_only=False,
        )
        with WireClient(address) as client:
            (result,) = client.request(request, CONFIGS_VERSION).responses
        if result.error_code:
            what = "topic" if kind == TOPIC else "broker"
            raise ClusterOpsError(
                f"{what} {name}: {result.error_message or _code(result.error_code)}"
            )

    def _topic_configs(self, topic: str) -> dict[str, str | None]:
        R = DescribeConfigsRequest.Resource
        request = DescribeConfigsRequest(
            resources=[R(resource_type=TOPIC, resource_name=topic, configuration_keys=None)],
            include_synonyms=False,
        )
        with WireClient(self.bootstrap) as client:
            (result,) = client.request(request, CONFIGS_VERSION).results
        if result.error_code:
            raise ClusterOpsError(result.error_message or _code(result.error_code))
        return {c.name: c.value for c in result.configs}

    def throttle(self, topic: str, partition: int, target: list[int], rate: int) -> list[int]:
        """Throttle the move of ``topic``-``partition`` to ``target`` at ``rate`` bytes/s
        (before it starts); the brokers whose rates were set."""
        md = self._metadata([topic])
        found = [
            p.replica_nodes
            for t in md.topics
            if t.name == topic and not t.error_code
            for p in t.partitions
            if p.partition_index == partition
        ]
        if not found:
            raise ClusterOpsError(f"no partition {topic}-{partition}")
        current = list(found[0])
        addresses = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
        involved = sorted({*current, *target})
        for broker in involved:
            if broker not in addresses:
                raise ClusterOpsError(f"broker {broker} is not live")
        for broker in involved:
            self._alter(
                addresses[broker], BROKER, str(broker), [(k, SET, str(rate)) for k in RATES]
            )
        configs = self._topic_configs(topic)
        lists = (
            (LEADER_REPLICAS, current),
            (FOLLOWER_REPLICAS, [b for b in target if b not in current]),
        )
        ops = [
            (key, APPEND, ",".join(f"{partition}:{b}" for b in brokers))
            for key, brokers in lists
            if brokers and (configs.get(key) or "").strip() != "*"
        ]
        if ops:
            self._alter(self.bootstrap, TOPIC, topic, ops)
        return involved

    def clear_throttles(self, topic: str) -> list[str]:
        """Kafka's ``--verify`` clean-up: what was removed ("topic"; "brokers" too when no
        move is under way anywhere); nothing while a partition of ``topic`` moves."""
        ongoing = self.reassignments()
        if any(name.rpartition("-")[0] == topic for name in ongoing):
            return []
        self._alter(
            self.bootstrap,
            TOPIC,
            topic,
            [(LEADER_REPLICAS, DELETE, None), (FOLLOWER_REPLICAS, DELETE, None)],
        )
        if ongoing:
            return ["topic"]
        for b in self._metadata([]).brokers:
            self._alter(
                f"{b.host}:{b.port}", BROKER, str(b.node_id), [(k, DELETE, None) for k in RATES]
            )
        return ["topic", "brokers"]

    def reassignments(self) -> dict[str, Any]:
        """ListPartitionReassignments: every move under way."""
        response = self._ask(ListPartitionReassignmentsRequest(topics=None), 0)
        if response.error_code:
            raise ClusterOpsError(response.error_message or f"error {response.error_code}")
        return {
            f"{t.name}-{p.partition_index}": {
                "replicas": p.replicas,
                "adding": p.adding_replicas,
                "removing": p.removing_replicas,
            }
            for t in response.topics
            for p in t.partitions
        }


def _code(error: int) -> str:
    if error == 0:
        return "ok"
    try:
        return ErrorCode(error).name
    except ValueError:
        return f"error {error}"
