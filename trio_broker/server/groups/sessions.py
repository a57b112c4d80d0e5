"""The second half of the classic rebalance protocol: SyncGroup, heartbeats and member
sessions, LeaveGroup, and removing members.

Owns: ``SyncAndSessions``, the base of ``membership.Membership`` (which adds JoinGroup and
the join phase), and ``validate_member``. Same rules as there: every method is synchronous
and runs to completion; what must wait is a ``Pending`` or a timer, never awaited. The sync
phase ends when the leader's assignment is written (the group becomes Stable) or when its
deadline passes; a member's session is a timer reset by each heartbeat, join or sync, and
its expiry removes the member and starts a rebalance.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping

from ...apis.group_services import JoinResult, Pending, SyncParams, SyncResult
from ...protocol.errors import ErrorCode
from .group import Group
from .log_format import group_metadata_record
from .member import Member
from .state import (
    COMPLETING_REBALANCE,
    EMPTY,
    HEARTBEAT,
    PREPARING_REBALANCE,
    STABLE,
    SYNC_GROUP,
    Reply,
)
from .storage import OrderedWriter
from .timers import Timers

log = logging.getLogger("trio_broker.groups")

# Slack over the coordinator's own deadlines for a parked request's purgatory deadline.
PARK_SLACK_MS = 30_000


class SyncAndSessions:
    """Sync, sessions and leaving; the join phase is the subclass's (``Membership``)."""

    completed_rebalances: int
    groups: dict[str, Group]
    timers: Timers
    writer: OrderedWriter
    partition_for: Callable[[str], int]
    notify: Callable[[Hashable], object]
    now_ms: Callable[[], int]

    # the join phase, in membership.Membership
    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        raise NotImplementedError

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        raise NotImplementedError

    def _try_complete_join(self, group: Group) -> None:
        raise NotImplementedError

    # ============================================================== SyncGroup

    def sync_group(self, params: SyncParams) -> SyncResult | Pending[SyncResult]:
        member_id = params.member_id
        group = self.groups.get(params.group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_dead:
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        error = validate_member(group, member_id, params.group_instance_id)
        if error:
            return SyncResult(error)
        if params.generation_id != group.generation_id:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        protocol_type, protocol_name = params.protocol_type, params.protocol_name
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        reply = SYNC_GROUP[group.state]
        if not isinstance(reply, Reply):
            return SyncResult(reply)
        member = group.get(member_id)
        self._sync_received(group, member_id)
        if reply is Reply.ANSWER:  # Stable: the assignment of this generation
            self._schedule_session(group, member)
            return SyncResult(
                ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
            )
        pending: Pending[SyncResult] = Pending(group.rebalance_timeout_ms + PARK_SLACK_MS)
        replaced = group.take_sync(member)
        if replaced is not None:
            self._resolve(replaced, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = pending
        if group.is_leader(member_id):
            self._store_assignment(group, params.assignments)
        return pending

    def _store_assignment(self, group: Group, assignments: Mapping[str, bytes]) -> None:
        """Write the leader's assignment; once written, the generation is Stable."""
        full = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}
        missing = [mid for mid in group.members if mid not in assignments]
        if missing:
            log.warning("group %s: no assignment for %s", group.group_id, missing)
        generation = group.generation_id

        def stored(error: int) -> None:
            if (
                self.groups.get(group.group_id) is not group
                or group.state is not COMPLETING_REBALANCE
                or group.generation_id != generation
            ):
                return  # the group moved on meanwhile
            if error:
                if error == ErrorCode.INVALID_COMMIT_OFFSET_SIZE:
                    error = ErrorCode.UNKNOWN_SERVER_ERROR
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(group, f"storing the assignment failed ({error})")
                return
            for member in group.members.values():
                member.assignment = full.get(member.member_id, b"")
            group.transition_to(STABLE, self.now_ms())
            self.completed_rebalances += 1
            self._propagate_assignment(group, ErrorCode.NONE)

        self.writer.submit(
            self.partition_for(group.group_id),
            [group_metadata_record(group, full, self.now_ms())],
            stored,
        )

    def _reset_and_propagate_assignment_error(self, group: Group, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: Group, error: int) -> None:
        ok = error == ErrorCode.NONE
        for member in group.members.values():
            sync = group.take_sync(member)
            if sync is None:
                continue
            self._resolve(
                sync,
                SyncResult(
                    error,
                    group.protocol_type if ok else None,
                    group.protocol_name if ok else None,
                    member.assignment,
                ),
            )
            # its session restarts now: it may have run out while the member waited
            self._schedule_session(group, member)

    def _sync_received(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self.timers.cancel(("sync", group.group_id))

    def _clear_pending_sync(self, group: Group) -> None:
        group.pending_sync.clear()
        self.timers.cancel(("sync", group.group_id))

    def _on_sync_deadline(self, group: Group, generation: int) -> None:
        if self.groups.get(group.group_id) is not group or group.generation_id != generation:
            return
        if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync:
            return
        late = sorted(group.pending_sync)
        for member_id in late:
            member = group.members.get(member_id)
            if member is not None:
                self._drop_member(group, member)
        self._prepare_rebalance(group, f"members {late} did not send SyncGroup in time")

    # ============================================================== Heartbeat

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_dead:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = validate_member(group, member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        reply = HEARTBEAT[group.state]
        assert not isinstance(reply, Reply)
        if group.state is not EMPTY:
            self._schedule_session(group, group.get(member_id))
        return reply

    def restart_sessions(self, group: Group) -> None:
        """Every member's session starts now (a group just loaded from the log)."""
        for member in group.members.values():
            self._schedule_session(group, member)

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        self._prepare_rebalance(group, reason)

    def touch(self, group: Group, member_id: str) -> None:
        """A request from a valid member counts as a heartbeat (OffsetCommit does this)."""
        member = group.members.get(member_id)
        if member is not None:
            self._schedule_session(group, member)

    # ============================================================== sessions

    def _schedule_session(
        self, group: Group, member: Member, timeout_ms: int | None = None
    ) -> None:
        member_id = member.member_id
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.timers.schedule(
            session_key(group, member_id),
            timeout / 1000,
            lambda: self._on_session_expired(group, member_id),
        )

    def _on_session_expired(self, group: Group, member_id: str) -> None:
        if self.groups.get(group.group_id) is not group or group.is_dead:
            return
        if group.is_pending_member(member_id):
            log.info("group %s: pending member %s never rejoined", group.group_id, member_id)
            group.pending_members.discard(member_id)
            if group.state is PREPARING_REBALANCE:
                self._try_complete_join(group)
            self.forget_if_unused(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        parked = member.awaiting_join is not None or member.awaiting_sync is not None
        if parked and not member.is_new:
            return  # waiting on us, not dead: its session restarts when it is answered
        log.info("group %s: member %s timed out, removing it", group.group_id, member_id)
        self.remove_member_and_update_group(group, member)

    # ============================================================== LeaveGroup

    def leave(
        self, group: Group, member_id: str, group_instance_id: str | None, reason: str | None
    ) -> int:
        """One member of a LeaveGroup (by member id, or by instance id alone)."""
        if member_id == "":
            current = group.static_member_id(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            log.info("group %s: static member %s removed (%s)", group.group_id, current, reason)
            self.remove_member_and_update_group(group, group.get(current))
            return ErrorCode.NONE
        if group.is_pending_member(member_id):
            group.pending_members.discard(member_id)
            self.timers.cancel(session_key(group, member_id))
            if group.state is PREPARING_REBALANCE:
                self._try_complete_join(group)
            return ErrorCode.NONE
        error = validate_member(group, member_id, group_instance_id)
        if error:
            return error
        log.info("group %s: member %s left (%s)", group.group_id, member_id, reason)
        self.remove_member_and_update_group(group, group.get(member_id))
        return ErrorCode.NONE

    def remove_member_and_update_group(self, group: Group, member: Member) -> None:
        self._drop_member(group, member)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"member {member.member_id} left")
        elif group.state is PREPARING_REBALANCE:
            self._try_complete_join(group)

    def _drop_member(self, group: Group, member: Member) -> None:
        """Take ``member`` out; its parked requests learn it is unknown now."""
        self._resolve_join(group, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
        sync = group.take_sync(member)
        if sync is not None:
            self._resolve(sync, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self.timers.cancel(session_key(group, member.member_id))

    # ============================================================== helpers

    def _resolve(self, pending: Pending[JoinResult] | Pending[SyncResult], result: object) -> None:
        if pending.result is None:
            pending.result = result  # type: ignore[assignment]
            self.notify(pending)

    def _resolve_join(self, group: Group, member: Member, result: JoinResult) -> None:
        join = group.take_join(member)
        if join is not None:
            self._resolve(join, result)

    def _store_quietly(self, group: Group, assignments: Mapping[str, bytes]) -> None:
        def stored(error: int) -> None:
            if error:
                log.warning("group %s: cannot store its metadata: %s", group.group_id, error)

        self.writer.submit(
            self.partition_for(group.group_id),
            [group_metadata_record(group, assignments, self.now_ms())],
            stored,
        )

    def forget_if_unused(self, group: Group) -> None:
        """Drop a group that exists only because a join was tried (never stored)."""
        if (
            group.state is EMPTY
            and group.generation_id == 0
            and not group.members
            and not group.pending_members
            and not group.offsets
            and not group.pending_commits
            and self.groups.get(group.group_id) is group
        ):
            del self.groups[group.group_id]


def validate_member(group: Group, member_id: str, group_instance_id: str | None) -> int:
    """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID for a member that is not the one it claims."""
    if group_instance_id is not None:
        current = group.static_member_id(group_instance_id)
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if current != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE
    return ErrorCode.NONE if group.has(member_id) else ErrorCode.UNKNOWN_MEMBER_ID


def session_key(group: Group, member_id: str) -> tuple[str, str, str]:
    return ("session", group.group_id, member_id)
