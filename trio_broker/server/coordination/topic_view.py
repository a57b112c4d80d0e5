"""A topic as the elected controller knows it, read from ZooKeeper in each round.

Owns ``TopicView``: the topic id, each partition's replicas (during a reassignment the
full set: target replicas first, then the original ones being removed), the replicas being
added and removed, each partition's state node and the versions the round read (of the
state nodes, and of the topic node for a version-checked rewrite). Plain data.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from . import layout


@dataclass
class TopicView:
    topic_id: uuid.UUID
    replicas: dict[int, list[int]]
    states: dict[int, layout.LeaderIsr] = field(default_factory=dict)
    versions: dict[int, int] = field(default_factory=dict)  # of the state nodes
    adding: dict[int, list[int]] = field(default_factory=dict)  # partitions being reassigned
    removing: dict[int, list[int]] = field(default_factory=dict)
    version: int = -1  # of the topic node (its assignment)

    def moving(self, partition: int) -> bool:
        """Is the partition being reassigned?"""
        return bool(self.adding.get(partition) or self.removing.get(partition))

    def target(self, partition: int) -> list[int]:
        """The replicas the partition is being moved to (its replicas if it is not)."""
        removing = self.removing.get(partition, [])
        return [r for r in self.replicas[partition] if r not in removing]

    def original(self, partition: int) -> list[int]:
        """The replicas the partition had before its reassignment (its replicas if none)."""
        adding = self.adding.get(partition, [])
        return [r for r in self.replicas[partition] if r not in adding]

    def assignment_data(self) -> bytes:
        return layout.assignment_data(self.topic_id, self.replicas, self.adding, self.removing)
