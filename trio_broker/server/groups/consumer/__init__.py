"""KIP-848's consumer group protocol inside the group coordinator: ``model`` (a group,
its members and the reconciliation of one member, Kafka's CurrentAssignmentBuilder),
``assignors`` (``uniform`` and ``range``) and ``heartbeat`` (``ConsumerGroups``: the
heartbeat, member expiry, offsets' member checks, descriptions). Used only by the group
coordinator (``groups.coordinator``); in memory, no records written.
"""

from .heartbeat import ConsumerGroupConfig, ConsumerGroups

__all__ = ["ConsumerGroupConfig", "ConsumerGroups"]
