"""The group coordinator: consumer groups (the classic protocol and KIP-848's, in
``consumer``) and committed offsets.

Modules, from the bottom up: ``state`` (the states and their tables), ``member`` and
``group`` (the model), ``offsets`` (what a committed offset is and when it expires),
``log_format`` (groups and offsets as ``__consumer_offsets`` records and back), ``storage``
(the internal topic and the ordered writer), ``timers`` (keyed trio timers),
``membership`` (join, sync, heartbeat, leave), ``commits`` (offset commit, fetch and
delete), ``migration`` (KIP-848's online upgrade and downgrade between a classic and a
consumer group) and ``coordinator`` (the API surface, admin, start-up replay and retention), and
``locator`` (FindCoordinator's question, which broker coordinates a group or a
transactional id). Nothing here knows about requests
or the wire: ``apis/groups/`` translates.

Face: what ``__all__`` names (the transaction coordinator reuses the internal topic, its
ordered writer, the ownership of its partitions and the locator). Uses of the server:
``topics``, ``replication``, ``config``.
"""

from .coordinator import CoordinatorConfig, GroupCoordinator
from .locator import CoordinatorLocator, CreateTopic
from .membership import MembershipConfig
from .ownership import Ownership
from .state import GroupState
from .storage import (
    OFFSETS,
    OFFSETS_TOPIC,
    InternalTopicSpec,
    LogOffsetsTopic,
    OrderedWriter,
    partition_for,
)

__all__ = [
    "OFFSETS",
    "OFFSETS_TOPIC",
    "CoordinatorConfig",
    "CoordinatorLocator",
    "CreateTopic",
    "GroupCoordinator",
    "GroupState",
    "InternalTopicSpec",
    "LogOffsetsTopic",
    "MembershipConfig",
    "OrderedWriter",
    "Ownership",
    "partition_for",
]
