"""Classic members inside a consumer group (KIP-848's online migration): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup from consumers still speaking the classic protocol
to a group that has become a consumer group, as Kafka's ``GroupMetadataManager`` serves
them (classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup).

Owns: ``ClassicMembers``. Such a member is a ``ConsumerMember`` with ``classic`` set (its
session timeout and protocols). Its JoinGroup is a heartbeat in disguise: its
subscription and owned partitions (read from the embedded consumer protocol, ``embedded``)
update it, the server-side assignor decides, and it is reconciled one step; the answer
makes it a follower (no leader, no members to assign) of generation = its member epoch,
and its SyncGroup gets its assigned partitions. Its Heartbeat answers
REBALANCE_IN_PROGRESS when it must join again: the group epoch moved past its epoch, it
must revoke partitions, or partitions it waited for are free. A member that does not
sync within its rebalance timeout after joining, or does not join within it after being
told to, is fenced, as one whose session (its own session timeout) runs out. A classic
static member that replaces the group's last consumer-protocol member (its instance id)
makes the group classic again, without a rebalance, if the policy allows. Must not
write records (the coordinator writes the group after each call) nor know the wire.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace

from ....apis.group_services import (
    JoinParams,
    JoinResult,
    MemberIdentity,
    SyncParams,
    SyncResult,
    TopicLookup,
)
from ....protocol.errors import ErrorCode
from .embedded import encode_assignment, parse_subscription, subscription_version
from .heartbeat import ConsumerGroups
from .model import NO_PARTITIONS, ClassicMeta, ConsumerGroup, ConsumerMember, MemberState

log = logging.getLogger("trio_broker.groups.consumer")

PROTOCOL_TYPE = "consumer"


class ClassicMembers:
    def __init__(self, consumer: ConsumerGroups) -> None:
        self.consumer = consumer

    # ============================================================== JoinGroup

    def join(self, p: JoinParams, topics: TopicLookup) -> JoinResult:
        """A classic member's JoinGroup to the non-empty consumer group ``p.group_id``."""
        cg = self.consumer
        group = cg.groups[p.group_id]
        unknown = p.member_id == ""
        member_id = str(uuid.uuid4()) if unknown else p.member_id
        if member_id not in group.members and len(group.members) >= cg.config.max_size:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id=member_id)
        if not p.protocols or not group.supports_classic(
            p.protocol_type, (n for n, _ in p.protocols)
        ):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        if unknown and p.group_instance_id is None and p.require_known_member_id:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        try:
            subscription = parse_subscription(p.protocols[0][1])
        except ValueError as exc:
            log.warning("group %s: a classic subscription it cannot read: %s", p.group_id, exc)
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        member, replaced_consumer_member = self._member_for(group, member_id, p.group_instance_id)
        updated = replace(
            member,
            instance_id=p.group_instance_id or member.instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            rebalance_timeout_ms=p.rebalance_timeout_ms,
            subscribed_topic_names=subscription.topics,
            subscribed_topic_regex=None,
            client_id=p.client_id,
            client_host=p.client_host,
            classic=ClassicMeta(
                p.session_timeout_ms, tuple((n, bytes(md)) for n, md in p.protocols)
            ),
        )
        owned = set()
        for name, partition in subscription.owned:
            meta = topics.by_name(name)
            if meta is not None:
                owned.add((meta.topic_id, partition))
        reconciled = cg.update_member(group, member, updated, topics, frozenset(owned))
        timers, gid = cg.timers, group.group_id
        timers.cancel(("consumer-join", gid, member_id))
        cg.schedule_session(gid, member_id, p.session_timeout_ms)
        timers.schedule(
            ("consumer-sync", gid, member_id),
            max(p.rebalance_timeout_ms, 0) / 1000,
            lambda: self._timed_out(gid, member_id, "it did not sync in time"),
        )
        if replaced_consumer_member and self._maybe_downgrade(group):
            log.info("group %s: classic again (static member %s replaced)", gid, member_id)
        assert updated.classic is not None
        return JoinResult(
            ErrorCode.NONE,
            member_id=member_id,
            generation_id=reconciled.member_epoch,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=updated.classic.protocol_name,
        )

    def _member_for(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> tuple[ConsumerMember, bool]:
        """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic
        member (always created if new): a static member takes the place of the member of
        its instance id, if any, under its own member id, at epoch 0 with that one's
        partitions and target. Also whether the member it replaced spoke the consumer
        protocol."""
        static = None if instance_id is None else group.static_member(instance_id)
        if static is None:
            return group.members.get(member_id) or ConsumerMember(member_id), False
        if static.member_id != member_id:
            target = group.target.get(static.member_id, NO_PARTITIONS)
            group.remove(static.member_id)
            self.consumer.cancel_timers(group.group_id, static.member_id)
            group.target[member_id] = target
        taken = replace(static, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        group.put(taken)
        return taken, static.classic is None

    def _maybe_downgrade(self, group: ConsumerGroup) -> bool:
        """Kafka's validateOnlineDowngradeWithReplacedMemberId: the joining static member
        replaced the last consumer-protocol member, and the policy allows a downgrade; the
        group becomes classic without a rebalance."""
        cfg = self.consumer.config
        if group.classic_members() != len(group.members) or not cfg.downgrade_enabled:
            return False
        if len(group.members) > cfg.classic_max_size:
            return False
        return self.consumer.downgrade(group, "")

    # ============================================================== SyncGroup

    def sync(self, p: SyncParams) -> SyncResult:
        group = self.consumer.groups[p.group_id]
        member = self._validate(group, p.member_id, p.group_instance_id)
        if isinstance(member, int):
            return SyncResult(member)
        assert member.classic is not None
        if p.generation_id != member.member_epoch:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (p.protocol_type is not None and p.protocol_type != PROTOCOL_TYPE) or (
            p.protocol_name is not None and p.protocol_name != member.classic.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if self._must_rejoin_now(group, member):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        gid = group.group_id
        self.consumer.timers.cancel(("consumer-sync", gid, member.member_id))
        self.consumer.schedule_session(gid, member.member_id, member.classic.session_timeout_ms)
        names = {topic_id: name for name, (topic_id, _) in group.subscription_metadata.items()}
        assigned = [(names[t], p_) for t, p_ in member.assigned if t in names]
        version = subscription_version(member.classic.protocols[0][1])
        return SyncResult(
            ErrorCode.NONE, p.protocol_type, p.protocol_name, encode_assignment(assigned, version)
        )

    def _must_rejoin_now(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        """Kafka's throwIfRebalanceInProgress: a newer group epoch, unless the member is
        still revoking (its next join follows by itself)."""
        if (
            group.group_epoch > member.member_epoch
            and member.state is not MemberState.UNREVOKED_PARTITIONS
        ):
            self._expect_join(group, member)
            return True
        return False

    # ============================================================== Heartbeat

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None
    ) -> int:
        group = self.consumer.groups[group_id]
        member = self._validate(group, member_id, instance_id)
        if isinstance(member, int):
            return member
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        assert member.classic is not None
        self.consumer.schedule_session(
            group_id, member.member_id, member.classic.session_timeout_ms
        )
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased(member)
            )
        ):
            self._expect_join(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ============================================================== LeaveGroup

    def leave(self, group_id: str, members: Sequence[MemberIdentity]) -> list[int]:
        """Each member leaves (no downgrade on a classic member's leaving, as Kafka); the
        group epoch is bumped once if any did."""
        group = self.consumer.groups[group_id]
        codes = []
        leaving = []
        for m in members:
            if m.group_instance_id is None:
                found = self._validate(group, m.member_id, None)
            else:
                static = group.static_member(m.group_instance_id)
                if static is None:
                    found = ErrorCode.UNKNOWN_MEMBER_ID
                elif m.member_id not in ("", static.member_id):
                    found = ErrorCode.FENCED_INSTANCE_ID
                else:
                    found = self._validate(group, static.member_id, None)
            if isinstance(found, int):
                codes.append(found)
            else:
                codes.append(ErrorCode.NONE)
                leaving.append(found.member_id)
        self.consumer.remove_members(group, leaving, "it left (LeaveGroup)")
        return codes

    # ================================================================ helpers

    @staticmethod
    def _validate(
        group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerMember | int:
        """Kafka's validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member is None or member.classic is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return member

    def _expect_join(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Kafka's join timeout: a member told to rejoin that does not within its
        rebalance timeout is fenced (armed once; a join disarms it)."""
        key = ("consumer-join", group.group_id, member.member_id)
        if key not in self.consumer.timers:
            gid, mid = group.group_id, member.member_id
            self.consumer.timers.schedule(
                key,
                max(member.rebalance_timeout_ms, 0) / 1000,
                lambda: self._timed_out(gid, mid, "it did not join again in time"),
            )

    def _timed_out(self, group_id: str, member_id: str, why: str) -> None:
        group = self.consumer.groups.get(group_id)
        if group is not None and member_id in group.members:
            self.consumer.fence(group, member_id, why)
            self.consumer.on_change(group_id)
