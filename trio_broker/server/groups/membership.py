"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

(SyncGroup, heartbeats, sessions and leaving are in ``sessions``, this class's base.)

Owns: ``Membership``, which moves groups through their states (``state``) as members join,
sync, heartbeat, leave or time out, following Kafka's GroupCoordinator as the
specification: the error codes, the order of the checks, when a rebalance starts and when
it ends. Every method is synchronous and runs to completion, so no request ever sees a
half-changed group; what must wait is represented, never awaited:

- a JoinGroup or SyncGroup that must wait gets a ``Pending``; the handler parks its request
  in the ``rebalance`` purgatory under it, and ``notify(pending)`` (the purgatory's
  ``check``) releases it once the result is filled in;
- the join phase, the sync phase, member sessions and the new-member join timeout are
  timers (``Timers``), keyed ``("join", group)``, ``("sync", group)`` and
  ``("session", group, member)``, whose callbacks are the other entry points here;
- group records go to ``OrderedWriter``; what depends on them being written (a stable
  generation, a static member's replacement) happens in the write's callback.

Join phase: a group coming out of Empty waits ``group.initial.rebalance.delay.ms`` (again
for each newcomer of a first generation, within the rebalance timeout), otherwise until
every member has rejoined or the largest rebalance timeout passes; members that did not
rejoin are removed (static ones stay). The leader gets every member with its metadata for
the protocol chosen by vote. It must not touch offsets or know about requests and the wire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from ...apis.group_services import JoinParams, JoinResult, Pending, SyncResult
from ...protocol.errors import ErrorCode
from .group import Group, JoinPhase
from .log_format import group_metadata_record
from .member import Member
from .sessions import PARK_SLACK_MS, SyncAndSessions, session_key, validate_member
from .state import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    REJOIN,
    STABLE,
    Reply,
)
from .storage import OrderedWriter
from .timers import Timers

log = logging.getLogger("trio_broker.groups")

# A member whose first JoinGroup is parked has no session yet; if it goes away (its
# connection is muted while parked, so that cannot be seen) it is removed after this.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True, slots=True)
class MembershipConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_group_size: int = 2**31 - 1


class Membership(SyncAndSessions):
    def __init__(
        self,
        config: MembershipConfig,
        groups: dict[str, Group],
        timers: Timers,
        writer: OrderedWriter,
        partition_for: Callable[[str], int],
        notify: Callable[[Hashable], object],
        now_ms: Callable[[], int],
    ) -> None:
        self.config = config
        self.groups = groups
        self.timers = timers
        self.writer = writer
        self.partition_for = partition_for
        self.notify = notify
        self.now_ms = now_ms
        self.completed_rebalances = 0

    # ============================================================== JoinGroup

    def join_group(self, p: JoinParams) -> JoinResult | Pending[JoinResult]:
        cfg = self.config
        if not cfg.min_session_timeout_ms <= p.session_timeout_ms <= cfg.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=p.member_id)
        is_new = p.member_id == ""
        group = self.groups.get(p.group_id)
        if group is None:
            if not is_new:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=p.member_id)
            group = Group(p.group_id, EMPTY, self.now_ms())
            self.groups[p.group_id] = group
        if not self._accepts(group, p.member_id):
            # (a known member that did not rejoin in time for a full group is let go)
            member = group.members.get(p.member_id)
            if member is not None:
                self._drop_member(group, member)
                self._try_complete_join(group)
            self.forget_if_unused(group)
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id="")
        outcome = self._join_new(group, p) if is_new else self._join_known(group, p)
        if group.state is PREPARING_REBALANCE:
            self._try_complete_join(group)
        self.forget_if_unused(group)
        if isinstance(outcome, Pending) and outcome.result is not None:
            return outcome.result
        return outcome

    def _accepts(self, group: Group, member_id: str) -> bool:
        """Room for this member under ``group.max.size`` (Kafka's acceptJoiningMember)."""
        limit = self.config.max_group_size
        if group.state is PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (
                member is not None and member.awaiting_join is not None
            ) or group.num_awaiting_join < limit
        if group.state in (COMPLETING_REBALANCE, STABLE):
            return group.has(member_id) or group.size < limit
        return True  # Empty, Dead

    def _join_new(self, group: Group, p: JoinParams) -> JoinResult | Pending[JoinResult]:
        if group.is_dead:
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(p.protocol_type, (name for name, _ in p.protocols)):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        new_id = group.new_member_id(p.client_id, p.group_instance_id)
        if p.group_instance_id is not None:
            old_id = group.static_member_id(p.group_instance_id)
            if old_id is not None:
                return self._replace_static_member(group, old_id, new_id, p)
            return self._add_member_and_rebalance(group, new_id, p)
        if p.require_known_member_id:
            group.pending_members.add(new_id)
            self.timers.schedule(
                session_key(group, new_id),
                p.session_timeout_ms / 1000,
                lambda: self._on_session_expired(group, new_id),
            )
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id)
        return self._add_member_and_rebalance(group, new_id, p)

    def _join_known(self, group: Group, p: JoinParams) -> JoinResult | Pending[JoinResult]:
        member_id = p.member_id
        if group.is_dead:
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
        if not group.supports_protocols(p.protocol_type, (name for name, _ in p.protocols)):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        if group.is_pending_member(member_id):
            if p.group_instance_id is not None:  # ids of pending members are dynamic only
                return JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, member_id=member_id)
            self.timers.cancel(session_key(group, member_id))
            return self._add_member_and_rebalance(group, member_id, p)
        error = validate_member(group, member_id, p.group_instance_id)
        if error:
            return JoinResult(error, member_id=member_id)
        reply = REJOIN[group.state]
        if not isinstance(reply, Reply):
            return JoinResult(reply, member_id=member_id)
        member = group.get(member_id)
        unchanged = member.matches(p.protocols)
        if group.state is COMPLETING_REBALANCE and unchanged:
            # the same join again (its answer was lost): the current generation
            return self._generation_result(
                group, member_id, with_members=group.is_leader(member_id)
            )
        if group.state is STABLE and unchanged and not group.is_leader(member_id):
            return self._generation_result(group, member_id, with_members=False)
        # PreparingRebalance; changed metadata; or the leader asking for a new assignment
        return self._update_member_and_rebalance(group, member, p)

    def _generation_result(
        self,
        group: Group,
        member_id: str,
        *,
        with_members: bool,
        leader: str | None = None,
        skip_assignment: bool = False,
    ) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=(leader if leader is not None else group.leader_id) or "",
            skip_assignment=skip_assignment,
            members=group.current_member_metadata() if with_members else [],
        )

    def _park_ms(self, group: Group, rebalance_timeout_ms: int) -> int:
        return (
            max(group.rebalance_timeout_ms, rebalance_timeout_ms)
            + self.config.initial_rebalance_delay_ms
            + PARK_SLACK_MS
        )

    def _add_member_and_rebalance(
        self, group: Group, member_id: str, p: JoinParams
    ) -> Pending[JoinResult]:
        pending: Pending[JoinResult] = Pending(self._park_ms(group, p.rebalance_timeout_ms))
        member = Member(
            member_id=member_id,
            group_instance_id=p.group_instance_id,
            client_id=p.client_id,
            client_host=p.client_host,
            rebalance_timeout_ms=p.rebalance_timeout_ms,
            session_timeout_ms=p.session_timeout_ms,
            protocol_type=p.protocol_type,
            protocols=_protocols(p),
            is_new=True,
        )
        if group.state is PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, pending)
        self._schedule_session(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"new member {member_id} joined")
        return pending

    def _update_member_and_rebalance(
        self, group: Group, member: Member, p: JoinParams
    ) -> Pending[JoinResult]:
        pending: Pending[JoinResult] = Pending(self._park_ms(group, p.rebalance_timeout_ms))
        replaced = group.update_member(
            member, _protocols(p), p.rebalance_timeout_ms, p.session_timeout_ms, pending
        )
        if replaced is not None:  # the same member joined again meanwhile
            self._resolve(replaced, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")
        return pending

    def _replace_static_member(
        self, group: Group, old_id: str, new_id: str, p: JoinParams
    ) -> Pending[JoinResult]:
        """A static member came back with a new member id: it takes its old place. In a
        Stable group whose protocol does not change, without a rebalance."""
        assert p.group_instance_id is not None
        instance = p.group_instance_id
        member = group.get(old_id)
        old_leader = group.leader_id
        fenced_join = group.take_join(member)
        fenced_sync = group.take_sync(member)
        group.replace_static_member(instance, old_id, new_id)
        if fenced_join is not None:
            self._resolve(fenced_join, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        if fenced_sync is not None:
            self._resolve(fenced_sync, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        self.timers.cancel(session_key(group, old_id))
        self._schedule_session(group, member)
        before = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        pending: Pending[JoinResult] = Pending(self._park_ms(group, p.rebalance_timeout_ms))
        group.update_member(
            member, _protocols(p), p.rebalance_timeout_ms, p.session_timeout_ms, pending
        )
        if group.state is STABLE:
            if group.select_protocol() != group.protocol_name:
                self._maybe_prepare_rebalance(group, f"static member {instance} changed protocols")
                return pending
            assignments = {m.member_id: m.assignment for m in group.members.values()}

            def stored(error: int) -> None:
                current = self.groups.get(group.group_id) is group
                if member.awaiting_join is not pending or not current:
                    return
                if error:
                    log.warning(
                        "group %s: cannot store static member %s: %s",
                        group.group_id,
                        instance,
                        error,
                    )
                    group.update_member(member, *before, None)
                    group.replace_static_member(instance, new_id, old_id)
                    self.timers.cancel(session_key(group, new_id))
                    self._schedule_session(group, member)
                    self._resolve(
                        pending,
                        JoinResult(
                            error,
                            generation_id=group.generation_id,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name,
                            leader=old_leader or "",
                        ),
                    )
                elif p.supports_skip_assignment:
                    # KIP-814: the leader learns it leads, without running an assignment
                    leads = group.is_leader(new_id)
                    self._resolve_join(
                        group,
                        member,
                        self._generation_result(
                            group, new_id, with_members=leads, skip_assignment=leads
                        ),
                    )
                else:
                    # the old leader id: a returning leader must not reassign a stable group
                    self._resolve_join(
                        group,
                        member,
                        self._generation_result(
                            group, new_id, with_members=False, leader=old_leader or ""
                        ),
                    )

            self.writer.submit(
                self.partition_for(group.group_id),
                [group_metadata_record(group, assignments, self.now_ms())],
                stored,
            )
        elif group.state is COMPLETING_REBALANCE:
            # the leader may be assigning to the old member id: start over
            self._prepare_rebalance(group, f"static member {instance} replaced during sync")
        return pending

    # ============================================================== join phase

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state is COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._clear_pending_sync(group)
        initial = group.state is EMPTY
        group.transition_to(PREPARING_REBALANCE, self.now_ms())
        log.info(
            "group %s: preparing to rebalance from generation %d (%s)",
            group.group_id,
            group.generation_id,
            reason,
        )
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            group.join_phase = JoinPhase(
                initial=True, remaining_ms=max(group.rebalance_timeout_ms - delay, 0)
            )
            self._arm_join(group, delay)
        else:
            group.join_phase = JoinPhase(initial=False)
            self._arm_join(group, group.rebalance_timeout_ms)
            self._try_complete_join(group)

    def _arm_join(self, group: Group, delay_ms: int) -> None:
        self.timers.schedule(
            ("join", group.group_id), delay_ms / 1000, lambda: self._on_join_deadline(group)
        )

    def _try_complete_join(self, group: Group) -> None:
        """End the join phase early once every member has rejoined (not during the
        initial delay, which always runs its course)."""
        phase = group.join_phase
        if (
            group.state is PREPARING_REBALANCE
            and phase is not None
            and not phase.initial
            and group.has_all_members_joined
        ):
            self.timers.cancel(("join", group.group_id))
            self._complete_join(group)

    def _on_join_deadline(self, group: Group) -> None:
        if self.groups.get(group.group_id) is not group or group.state is not PREPARING_REBALANCE:
            return
        phase = group.join_phase
        if phase is not None and phase.initial and group.new_member_added and phase.remaining_ms:
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, phase.remaining_ms)
            phase.remaining_ms = max(phase.remaining_ms - delay, 0)
            self._arm_join(group, delay)
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """The join phase is over: drop the dynamic members that did not rejoin, start the
        next generation and answer every parked JoinGroup."""
        group.join_phase = None
        group.new_member_added = False
        for member in group.not_yet_rejoined():
            if not member.is_static:
                log.info("group %s: member %s did not rejoin", group.group_id, member.member_id)
                self._drop_member(group, member)
        if group.is_dead:
            return
        if group.members and not group.maybe_elect_new_joined_leader():
            # only static members that have not rejoined: give them another timeout
            group.join_phase = JoinPhase(initial=False)
            self._arm_join(group, group.rebalance_timeout_ms)
            return
        now = self.now_ms()
        group.init_next_generation(now)
        if group.state is EMPTY:
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._store_quietly(group, {})
            return
        log.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation_id,
            group.size,
            group.protocol_name,
            group.leader_id,
        )
        leader_view = group.current_member_metadata()
        for member in list(group.members.values()):
            is_leader = group.is_leader(member.member_id)
            result = self._generation_result(group, member.member_id, with_members=False)
            if is_leader:
                result.members = leader_view
            self._resolve_join(group, member, result)
            self._schedule_session(group, member)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation_id
        self.timers.schedule(
            ("sync", group.group_id),
            group.rebalance_timeout_ms / 1000,
            lambda: self._on_sync_deadline(group, generation),
        )


def _protocols(p: JoinParams) -> tuple[tuple[str, bytes], ...]:
    return tuple((name, bytes(metadata)) for name, metadata in p.protocols)


__all__ = ["Membership", "MembershipConfig", "validate_member"]
