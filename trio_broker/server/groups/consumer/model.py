"""A consumer-protocol group (KIP-848) and its members, as Kafka's ``ConsumerGroup`` and
``ConsumerGroupMember`` keep them, and the reconciliation of one member towards its
target assignment (Kafka's ``CurrentAssignmentBuilder``).

Owns: ``MemberState``, ``ConsumerMember``, ``ConsumerGroup`` (members, group epoch,
target assignment and its epoch, which member holds which partition at which epoch,
the group's state), ``reconcile``, and ``Timings`` (the assignor's runs, for metrics).
Plain values: no timers, no records, no requests.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

TopicPartition = tuple[uuid.UUID, int]
Partitions = frozenset[TopicPartition]
NO_PARTITIONS: Partitions = frozenset()


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # waits for the member to revoke
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for others to release


@dataclass(frozen=True, slots=True)
class ClassicMeta:
    """What a classic member inside a consumer group keeps of its JoinGroup (Kafka's
    ClassicMemberMetadata): its session timeout and its protocols, in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        return self.protocols[0][0]


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Partitions = NO_PARTITIONS
    pending_revocation: Partitions = NO_PARTITIONS
    classic: ClassicMeta | None = None  # a member speaking the classic protocol

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def with_epoch(self, epoch: int) -> ConsumerMember:
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch


@dataclass(slots=True)
class Timings:
    """How many times something ran, and how long it took in all and at most."""

    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)


class GroupState(enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState``, as ListGroups and
    ConsumerGroupDescribe name it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    # the member epoch under which each partition is held (assigned or being revoked)
    partition_epochs: dict[TopicPartition, int] = field(default_factory=dict)
    # topic name -> (id, partitions) as the last target assignment was computed from
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    assignor_name: str = ""
    # the members' regexes resolved against the topics (a new one is from the heartbeat
    # after the one that brought it, as Kafka resolves them in the background)
    resolved_regexes: set[str] = field(default_factory=set)

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if all(m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.STABLE
        return GroupState.RECONCILING

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def put(self, member: ConsumerMember) -> None:
        """Store ``member`` as it is now, and whose partitions it holds at which epoch."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        for tp in member.assigned | member.pending_revocation:
            self.partition_epochs[tp] = member.member_epoch

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._release(member)
            self.target.pop(member_id, None)
        return member

    def _release(self, member: ConsumerMember) -> None:
        for tp in member.assigned | member.pending_revocation:
            if self.partition_epochs.get(tp) == member.member_epoch:
                del self.partition_epochs[tp]

    def classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.classic is not None)

    def all_classic_except(self, member_id: str) -> bool:
        """Kafka's allMembersUseClassicProtocolExcept: ``member_id`` is the only member
        speaking the consumer protocol."""
        member = self.members.get(member_id)
        return (
            member is not None
            and member.classic is None
            and self.classic_members() == len(self.members) - 1
        )

    def supports_classic(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Kafka's supportsClassicProtocols: a classic member may join if its protocol
        type is consumer and one of its protocols is supported by every classic member."""
        names = list(names)
        if protocol_type != "consumer":
            return False
        classic = [m.classic for m in self.members.values() if m.classic is not None]
        if not self.members:
            return bool(names)
        return any(all(n in (p for p, _ in c.protocols) for c in classic) for n in names)

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """Kafka's waitingOnUnreleasedPartition: a partition of its target still held by
        another member."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        target = self.target.get(member.member_id, NO_PARTITIONS)
        return any(tp in self.partition_epochs for tp in target - member.assigned)

    def subscribed_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    held_by_others: Mapping[TopicPartition, int],
    owned: Iterable[TopicPartition] | None,
) -> ConsumerMember:
    """Kafka's CurrentAssignmentBuilder: the member's next step towards ``target``.

    A partition the member must give up stays its own, pending revocation, until a
    heartbeat's owned partitions no longer list it (UNREVOKED_PARTITIONS, the epoch not
    bumped); a partition still held by another member (``held_by_others``) is not given
    yet (UNRELEASED_PARTITIONS). ``owned`` None: the heartbeat did not say."""
    owned_set = None if owned is None else set(owned)

    def still_owns(partitions: Partitions) -> bool:
        return owned_set is None or bool(owned_set & partitions)

    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, held_by_others, still_owns)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if still_owns(member.pending_revocation):
            return member
        return _next(
            member, member.member_epoch + 1, target_epoch, target, held_by_others, still_owns
        )
    return _next(member, member.member_epoch, target_epoch, target, held_by_others, still_owns)


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Partitions,
    held_by_others: Mapping[TopicPartition, int],
    still_owns: Callable[[Partitions], bool],
) -> ConsumerMember:
    keep = member.assigned & target
    revoke = member.assigned - keep
    wanted = target - keep
    unreleased = frozenset(tp for tp in wanted if tp in held_by_others)
    give = wanted - unreleased
    if revoke and still_owns(revoke):
        return replace(
            member.with_epoch(epoch),
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=keep,
            pending_revocation=revoke,
        )
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(
        member.with_epoch(target_epoch),
        state=state,
        assigned=keep | give,
        pending_revocation=NO_PARTITIONS,
    )
