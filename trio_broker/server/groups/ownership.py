"""Which ``__consumer_offsets`` partitions this broker's group coordinator serves.

Owns: ``Ownership``. On a broker on its own the coordinator serves every group
(``owned`` None). In a ZooKeeper cluster it serves the groups whose partition it leads, as
Kafka's coordinator does: a partition is *loading* from the moment this broker becomes
its leader until its records are read back (requests for its groups get
COORDINATOR_LOAD_IN_PROGRESS), then *owned*; a group of any other partition gets
NOT_COORDINATOR, so its clients look the coordinator up again (FindCoordinator names the
partition's leader). ``unload`` forgets a group whose partition moved away: its parked
JoinGroup and SyncGroup requests are answered NOT_COORDINATOR and its timers cancelled.
"""

from __future__ import annotations

from collections.abc import Callable

from ...apis.group_services import JoinResult, SyncResult
from ...protocol.errors import ErrorCode
from .group import Group
from .timers import Timers


class Ownership:
    def __init__(self) -> None:
        self.owned: set[int] | None = None
        self.loading: set[int] = set()

    def error_for(self, partition: int) -> int:
        if self.owned is None or partition in self.owned:
            return ErrorCode.NONE
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR


def unload(group: Group, timers: Timers, notify: Callable[[object], object]) -> None:
    """Answer the group's parked requests NOT_COORDINATOR and stop its timers."""
    gid = group.group_id
    timers.cancel(("join", gid))
    timers.cancel(("sync", gid))
    for member_id in [*group.members, *group.pending_members]:
        timers.cancel(("session", gid, member_id))
    for member in group.members.values():
        for pending, result in (
            (member.awaiting_join, JoinResult(ErrorCode.NOT_COORDINATOR)),
            (member.awaiting_sync, SyncResult(ErrorCode.NOT_COORDINATOR)),
        ):
            if pending is not None and pending.result is None:
                pending.result = result  # type: ignore[assignment]
                notify(pending)
        member.awaiting_join = member.awaiting_sync = None
