"""The operations of a ZooKeeper cluster, as a thin client of Kafka's own APIs.

Owns: ``ClusterOps``, behind ``trio-broker-controller elect``, ``reassign`` and
``reassignments``: it asks any broker (a ``listeners.json``'s data listener) for Metadata,
finds the cluster's controller there, and sends it ElectLeaders (preferred or unclean),
AlterPartitionReassignments or ListPartitionReassignments, as ``kafka-leader-election.sh``
and ``kafka-reassign-partitions.sh`` do. The same operations work from any Kafka
AdminClient; the controller in the broker does the work and the checks.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ErrorCode
from ..protocol.messages.elections import ElectLeadersRequest
from ..protocol.messages.metadata import MetadataRequest
from ..protocol.messages.reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from .client import WireClient

METADATA_VERSION = 12
ELECT_LEADERS_VERSION = 2


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
