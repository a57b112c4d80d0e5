"""What Metadata answers from: the cluster's brokers and who leads each partition.

Owns: ``MetadataCache``. A broker on its own knows only itself and leads every partition
it holds; once a controller sends UpdateMetadata (the control plane at work), the cache
holds the cluster as the controller described it — every live broker with its endpoint per
listener, and every partition's leader, leader epoch, replicas and ISR — and Metadata
answers from it, so clients find the leader of a partition on another broker. A newer
UpdateMetadata replaces the older one whole; one from an older controller epoch is refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from ...apis.services import BrokerEndpoint, ClusterBroker, ClusterMetadata, PartitionInfo


@dataclass(slots=True)
class MetadataCache:
    controller_id: int = -1
    controller_epoch: int = -1
    brokers: dict[int, ClusterBroker] = field(default_factory=dict)
    partitions: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)

    @property
    def from_controller(self) -> bool:
        """Whether a controller has described the cluster (else: this broker alone)."""
        return self.controller_epoch >= 0

    def replace(self, metadata: ClusterMetadata) -> None:
        self.controller_id = metadata.controller_id
        self.controller_epoch = metadata.controller_epoch
        self.brokers = {b.broker_id: b for b in metadata.brokers}
        self.partitions = metadata.partitions
        self.topic_ids = metadata.topic_ids

    def endpoints(self, listener: str) -> list[BrokerEndpoint]:
        out = []
        for b in sorted(self.brokers.values(), key=lambda b: b.broker_id):
            address = b.endpoints.get(listener)
            if address is not None:
                out.append(BrokerEndpoint(b.broker_id, address[0], address[1], b.rack))
        return out

    def partitions_of(self, topic: str) -> dict[int, PartitionInfo] | None:
        return self.partitions.get(topic)
