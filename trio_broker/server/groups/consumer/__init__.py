"""KIP-848's consumer group protocol inside the group coordinator: ``model`` (a group,
its members and the reconciliation of one member, Kafka's CurrentAssignmentBuilder),
``assignors`` (``uniform`` and ``range``), ``checks`` (the settings and a request's
checks), ``topics`` (subscriptions against the topics), ``heartbeat`` (``ConsumerGroups``:
the heartbeat, member expiry, offsets' member checks, descriptions), ``classic`` (classic
members inside a consumer group after an online upgrade), ``embedded`` (the consumer
protocol inside the classic protocol's bytes) and ``records`` (the groups as Kafka 4's
``__consumer_offsets`` records, and back). Used only by the group
coordinator (``groups.coordinator``), which writes the records and reads them back.
"""

from .checks import ConsumerGroupConfig, HeartbeatError
from .classic import ClassicMembers
from .embedded import (
    encode_assignment,
    parse_assignment,
    parse_subscription,
    subscription_version,
)
from .heartbeat import ConsumerGroups
from .model import ClassicMeta, ConsumerGroup, ConsumerMember
from .model import GroupState as ConsumerGroupState
from .records import ConsumerReplay, RecordImages, restore

__all__ = [
    "ClassicMembers",
    "ClassicMeta",
    "ConsumerGroup",
    "ConsumerGroupConfig",
    "ConsumerGroupState",
    "ConsumerGroups",
    "ConsumerMember",
    "ConsumerReplay",
    "HeartbeatError",
    "RecordImages",
    "encode_assignment",
    "parse_assignment",
    "parse_subscription",
    "restore",
    "subscription_version",
]
