"""KIP-848's online migration between a classic group and a consumer group, as Kafka's
``GroupMetadataManager`` does it (``group.consumer.migration.policy``).

Owns: ``OnlineMigration``, a base of ``GroupCoordinator``, and the two conversions.

- **Upgrade** (``upgrade``, asked by a consumer-protocol member's first heartbeat to a
  group id that is a classic group): an empty classic group is simply replaced (its
  metadata record tombstoned, its offsets kept), whatever the policy. A classic group with
  members becomes a consumer group if the policy allows upgrades, its protocol type is
  ``consumer`` and it is no larger than ``group.consumer.max.size``; else the heartbeat is
  GROUP_ID_NOT_FOUND "Group <id> is not a consumer group", as Kafka answers. Converting
  (Kafka's ``ConsumerGroup.fromClassicGroup``): group and assignment epoch = the
  generation; each member at that epoch, Stable, holding and targeted at the partitions of
  its last SyncGroup assignment, subscribed to its subscription's topics, with its session
  timeout and protocols kept. Its parked JoinGroup and SyncGroup requests are answered
  REBALANCE_IN_PROGRESS, the classic group's record gets its tombstone, and the consumer
  group's records follow (the coordinator writes them after the heartbeat).
- **Downgrade** (``downgrade``, asked by ``ConsumerGroups.fence`` when the last
  consumer-protocol member leaves, is fenced or times out while classic members remain and
  the policy allows downgrades, or by ``ClassicMembers`` when a static classic member
  takes the place of the last one): the consumer group's records get their tombstones and a
  classic group (Kafka's ``ClassicGroup.fromConsumerGroup``) is written: generation = the
  group epoch, protocol type ``consumer``, the protocol chosen by the members' votes, each
  member's target assignment as its assignment; after a leaving it then prepares a
  rebalance, so the members join again and their leader assigns.

The committed offsets stay with the classic ``Group`` object of the id (the same dicts
are handed over, so commits in flight land in the group that serves the id). It must not
know about requests or the wire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ...apis.group_services import JoinResult, SyncResult, TopicLookup
from ...protocol.errors import ErrorCode
from .consumer import (
    ClassicMeta,
    ConsumerGroup,
    ConsumerGroups,
    ConsumerMember,
    HeartbeatError,
    RecordImages,
    encode_assignment,
    parse_assignment,
    parse_subscription,
    subscription_version,
)
from .group import Group
from .log_format import group_metadata_record, group_tombstone
from .member import Member
from .membership import Membership
from .offsets import CONSUMER_PROTOCOL_TYPE
from .state import DEAD, EMPTY, STABLE
from .storage import Ack, OrderedWriter

log = logging.getLogger("trio_broker.groups")


class OnlineMigration:
    """The migration half of ``GroupCoordinator`` (see there for the attributes)."""

    groups: dict[str, Group]
    consumer: ConsumerGroups
    consumer_images: RecordImages
    membership: Membership
    writer: OrderedWriter
    now_ms: Callable[[], int]

    def partition_for(self, group_id: str) -> int:
        raise NotImplementedError

    def _consumer_changed(
        self, group_id: str, then: Callable[[int], object] = lambda code: None
    ) -> Ack:
        raise NotImplementedError

    # ================================================================ upgrade

    def upgrade(self, group_id: str, topics: TopicLookup) -> ConsumerGroup | None:
        """Kafka's getOrMaybeCreateConsumerGroup for a classic group of that id."""
        group = self.groups.get(group_id)
        if group is None or group.state is DEAD:
            return None
        if group.state is EMPTY and not group.members:
            if group.generation_id or group.protocol_type:  # its metadata record goes
                self._retire(group)
            return None
        cfg = self.consumer.config
        why = ""
        if not cfg.upgrade_enabled:
            why = "the online upgrade is disabled (group.consumer.migration.policy)"
        elif group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            why = f"its protocol type is {group.protocol_type!r}, not consumer"
        elif group.size > cfg.max_size:
            why = "it has more members than group.consumer.max.size"
        if why:
            log.info("group %s: not upgraded to a consumer group: %s", group_id, why)
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        try:
            converted = consumer_group_from(group, topics)
        except ValueError as exc:
            log.warning("group %s: not upgraded: %s", group_id, exc)
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade the classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed.",
            ) from None
        self._retire(group)
        self.consumer.restore(converted)  # its members' sessions start now
        log.info(
            "group %s: upgraded from classic to consumer at epoch %d (%d members)",
            group_id,
            converted.group_epoch,
            len(converted.members),
        )
        return converted

    def _retire(self, group: Group) -> None:
        """The classic group stops serving: its parked requests are told to rejoin, its
        timers stop, its record gets a tombstone, and a bare holder keeps its offsets."""
        m = self.membership
        for member in list(group.members.values()):
            join = group.take_join(member)
            if join is not None:
                m._resolve(join, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            sync = group.take_sync(member)
            if sync is not None:
                m._resolve(sync, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        gid = group.group_id
        m.timers.cancel(("join", gid))
        m.timers.cancel(("sync", gid))
        for member_id in [*group.members, *group.pending_members]:
            m.timers.cancel(("session", gid, member_id))
        now = self.now_ms()
        self.groups[gid] = _holder(group, now)
        self.writer.submit(self.partition_for(gid), [group_tombstone(gid, now)])

    # ============================================================== downgrade

    def downgrade(self, converted: ConsumerGroup, leaving: str) -> bool:
        """The consumer group becomes classic without ``leaving`` and prepares a
        rebalance; with ``leaving`` empty (a static classic member replaced the last
        consumer-protocol one) it stays Stable. False if it cannot (a member's protocols
        unreadable): then it stays a consumer group."""
        gid = converted.group_id
        now = self.now_ms()
        try:
            group = classic_group_from(converted, leaving, now)
        except (ValueError, KeyError) as exc:
            log.warning("group %s: not downgraded to classic: %s", gid, exc)
            return False
        self.consumer.unload([gid])
        self._consumer_changed(gid)  # the consumer group's tombstones, first
        holder = self.groups.get(gid)
        if holder is not None:
            group.offsets = holder.offsets
            group.pending_commits = holder.pending_commits
            group.pending_txn = holder.pending_txn
        self.groups[gid] = group
        assignments = {m.member_id: m.assignment for m in group.members.values()}
        self.writer.submit(
            self.partition_for(gid), [group_metadata_record(group, assignments, now)]
        )
        log.info(
            "group %s: downgraded from consumer to classic at generation %d (%d members)",
            gid,
            group.generation_id,
            group.size,
        )
        self.membership.restart_sessions(group)
        if leaving:
            self.membership.prepare_rebalance(group, f"group {gid} downgraded from consumer")
        return True


def _holder(group: Group, now: int) -> Group:
    """An Empty group holding ``group``'s committed offsets (the very same dicts)."""
    holder = Group(group.group_id, EMPTY, now)
    holder.offsets = group.offsets
    holder.pending_commits = group.pending_commits
    holder.pending_txn = group.pending_txn
    return holder


def consumer_group_from(group: Group, topics: TopicLookup) -> ConsumerGroup:
    """Kafka's ConsumerGroup.fromClassicGroup. Raises ``ValueError`` if a member's
    subscription or assignment is not the consumer protocol's."""
    epoch = group.generation_id
    converted = ConsumerGroup(group.group_id, group_epoch=epoch, assignment_epoch=epoch)
    for m in group.members.values():
        metadata = m.metadata_for(group.protocol_name) if group.protocol_name else b""
        subscription = parse_subscription(metadata or m.protocols[0][1])
        assigned = set()
        for name, partition in parse_assignment(m.assignment):
            meta = topics.by_name(name)
            if meta is not None:
                assigned.add((meta.topic_id, partition))
        member = ConsumerMember(
            m.member_id,
            instance_id=m.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_epoch=epoch,
            previous_member_epoch=epoch,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscribed_topic_names=subscription.topics,
            assigned=frozenset(assigned),
            classic=ClassicMeta(m.session_timeout_ms, m.protocols),
        )
        converted.target[m.member_id] = member.assigned
        converted.put(member)
    return converted


def classic_group_from(converted: ConsumerGroup, leaving: str, now: int) -> Group:
    """Kafka's ClassicGroup.fromConsumerGroup, without the member ``leaving``: Stable at
    generation = the group epoch, each member's target assignment as its assignment."""
    group = Group(converted.group_id, STABLE, now)
    group.generation_id = converted.group_epoch
    for cm in converted.members.values():
        if cm.member_id == leaving:
            continue
        assert cm.classic is not None
        group.add(
            Member(
                member_id=cm.member_id,
                group_instance_id=cm.instance_id,
                client_id=cm.client_id,
                client_host=cm.client_host,
                rebalance_timeout_ms=cm.rebalance_timeout_ms,
                session_timeout_ms=cm.classic.session_timeout_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocols=cm.classic.protocols,
            )
        )
    group.protocol_type = CONSUMER_PROTOCOL_TYPE
    group.protocol_name = group.select_protocol()
    group.subscribed_topics = group.compute_subscribed_topics()
    names = {topic_id: name for name, (topic_id, _) in converted.subscription_metadata.items()}
    for m in group.members.values():
        target = converted.target.get(m.member_id, frozenset())
        version = subscription_version(m.metadata_for(group.protocol_name))
        m.assignment = encode_assignment([(names[t], p) for t, p in target if t in names], version)
    return group
