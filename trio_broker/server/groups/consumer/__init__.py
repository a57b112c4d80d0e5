"""KIP-848's consumer group protocol inside the group coordinator: ``model`` (a group,
its members and the reconciliation of one member, Kafka's CurrentAssignmentBuilder),
``assignors`` (``uniform`` and ``range``), ``heartbeat`` (``ConsumerGroups``: the
heartbeat, member expiry, offsets' member checks, descriptions) and ``records`` (the
groups as Kafka 4's ``__consumer_offsets`` records, and back). Used only by the group
coordinator (``groups.coordinator``), which writes the records and reads them back.
"""

from .heartbeat import ConsumerGroupConfig, ConsumerGroups
from .model import GroupState as ConsumerGroupState
from .records import ConsumerReplay, RecordImages, restore

__all__ = [
    "ConsumerGroupConfig",
    "ConsumerGroupState",
    "ConsumerGroups",
    "ConsumerReplay",
    "RecordImages",
    "restore",
]
