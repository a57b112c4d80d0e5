"""The group coordinator: consumer groups (the classic protocol) and committed offsets.

Modules, from the bottom up: ``state`` (the states and their tables), ``member`` and
``group`` (the model), ``offsets`` (what a committed offset is and when it expires),
``log_format`` (groups and offsets as ``__consumer_offsets`` records and back), ``storage``
(the internal topic and the ordered writer), ``timers`` (keyed trio timers),
``membership`` (join, sync, heartbeat, leave) and ``coordinator`` (the API surface, offsets,
admin, start-up replay and retention). Nothing here knows about requests or the wire:
``apis/groups.py`` and ``apis/group_offsets.py`` translate.
"""

from .coordinator import CoordinatorConfig, GroupCoordinator
from .membership import MembershipConfig
from .state import GroupState
from .storage import OFFSETS_TOPIC, LogOffsetsTopic, partition_for

__all__ = [
    "OFFSETS_TOPIC",
    "CoordinatorConfig",
    "GroupCoordinator",
    "GroupState",
    "LogOffsetsTopic",
    "MembershipConfig",
    "partition_for",
]
