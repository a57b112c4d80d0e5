"""The narrow view of the group coordinator that the group API handlers work through.

Owns: the ``GroupCoordinatorView`` protocol and the plain records that cross it (what a
JoinGroup asks, what a join or sync answers, committed offsets, group overviews and
descriptions; KIP-848's heartbeat, its answer, the topics it is assigned from and a
consumer group's description), and ``Pending``: a JoinGroup or SyncGroup answer the
coordinator gives later. A handler that gets a ``Pending`` parks its request in the
``rebalance`` purgatory under the ``Pending`` itself; the coordinator fills in the result
and checks that key.
Nothing here knows trio, the network or how the coordinator keeps its state.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ..protocol.errors import ErrorCode
from .context import RequestContext

T = TypeVar("T")

TopicPartition = tuple[str, int]


class Pending(Generic[T]):
    """An answer given later. Hashable by identity: it is its own purgatory key."""

    __slots__ = ("result", "timeout_ms")

    def __init__(self, timeout_ms: int) -> None:
        self.result: T | None = None
        # How long the parked request may wait at most (a safety bound: the coordinator
        # always answers before it, through its own session and rebalance timers).
        self.timeout_ms = timeout_ms

    @property
    def done(self) -> bool:
        return self.result is not None

    def __repr__(self) -> str:
        return f"Pending({self.result!r})"


@dataclass(frozen=True, slots=True)
class JoinParams:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    # KIP-394 (JoinGroup v4+): a new member first gets MEMBER_ID_REQUIRED and its id.
    require_known_member_id: bool = True
    # KIP-814 (JoinGroup v9+): a static leader rejoining a stable group skips assignment.
    supports_skip_assignment: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SyncParams:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    # SyncGroup v5+: checked against the group's (INCONSISTENT_GROUP_PROTOCOL); None: not sent.
    protocol_type: str | None
    protocol_name: str | None
    assignments: Mapping[str, bytes]  # the leader's, by member id (others send none)


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinResult:
    error_code: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: list[JoinMember] = field(default_factory=list)


@dataclass(slots=True)
class SyncResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class LeaveResult:
    error_code: int
    members: list[tuple[MemberIdentity, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OffsetCommitEntry:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int = -1
    leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"  # ListGroups v5's GroupType: classic or consumer


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error_code: int
    group_id: str
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


# ----------------------------------------------------- KIP-848's consumer protocol

# A member's partitions by topic id, as ConsumerGroupHeartbeat carries them.
Assignment = Mapping[uuid.UUID, Sequence[int]]


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """What the group coordinator needs of a topic: its name, id and partition count."""

    name: str
    topic_id: uuid.UUID
    partitions: int


class TopicLookup(Protocol):
    """The broker's topics as the consumer group coordinator sees them (the handler hands
    it over with each heartbeat: assignments follow the topics as they are now)."""

    def by_name(self, name: str) -> TopicMeta | None: ...

    def names(self) -> Iterable[str]: ...


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeat:
    """One ConsumerGroupHeartbeat, its fields as sent (None: unchanged since the last)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: Assignment | None
    client_id: str
    client_host: str
    # v0: the coordinator makes a new member's id; v1+: the member brings its own
    api_version: int = 1


@dataclass(slots=True)
class ConsumerHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: not sent (unchanged)


@dataclass(frozen=True, slots=True)
class ConsumerMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment
    member_type: int = 1  # ConsumerGroupDescribe v1: 0 classic, 1 consumer protocol


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    error_code: int
    group_id: str
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConsumerMemberDescription, ...] = ()


class GroupCoordinatorView(Protocol):
    # False until the offsets topic is replayed, and again once stopping.
    active: bool

    def join_group(
        self, params: JoinParams, topics: TopicLookup | None = None
    ) -> JoinResult | Pending[JoinResult]: ...

    def sync_group(self, params: SyncParams) -> SyncResult | Pending[SyncResult]: ...

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int: ...

    def leave_group(self, group_id: str, members: Sequence[MemberIdentity]) -> LeaveResult: ...

    async def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_time_ms: int,
        offsets: Sequence[OffsetCommitEntry],
        unknown_group_error: int = ErrorCode.ILLEGAL_GENERATION,
        producer: tuple[int, int] | None = None,
    ) -> dict[TopicPartition, int]: ...

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        require_stable: bool,
        member: tuple[str | None, int] = (None, -1),  # OffsetFetch v9+'s member id, epoch
    ) -> tuple[int, dict[TopicPartition, CommittedOffset]]: ...

    def list_groups(self, states: Sequence[str]) -> tuple[int, list[GroupOverview]]: ...

    def describe_group(self, group_id: str) -> GroupDescription: ...

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]: ...

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]: ...

    # KIP-848: None when the broker does not serve the consumer protocol
    # (group.coordinator.rebalance.protocols without consumer)
    async def consumer_group_heartbeat(
        self, params: ConsumerHeartbeat, topics: TopicLookup
    ) -> ConsumerHeartbeatResult | None: ...

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription: ...


def coordinator_of(ctx: RequestContext) -> GroupCoordinatorView:
    """The group coordinator behind ``ctx.broker``."""
    coordinator: GroupCoordinatorView = ctx.broker.group_coordinator  # type: ignore[attr-defined]
    return coordinator


def unknown_topic_partition(ctx: RequestContext, topic: str, partition: int) -> bool:
    """Whether ``topic``/``partition`` does not exist (Kafka answers
    UNKNOWN_TOPIC_OR_PARTITION for those in OffsetCommit and OffsetDelete)."""
    info = ctx.broker.topic(topic)
    return info is None or not 0 <= partition < len(info.partitions)
