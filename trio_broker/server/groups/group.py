"""One classic group: its state, generation, members and committed offsets.

Owns: ``Group``: the state (changed only through ``transition_to``, which enforces the
table in ``state``), the generation and its protocol and leader, the members with the
bookkeeping that depends on all of them (protocol votes, how many are parked in a join,
static instance ids, members that must still rejoin or sync), and the offsets committed
for the group. Protocol selection: the protocols every member supports are candidates;
each member votes for its most preferred candidate; the most votes win (ties go to the
candidate voted for first, in member order). It must not answer requests, run timers or
write anything (the coordinator does), and it never reads a clock: times are passed in.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...apis.group_services import JoinMember, JoinResult, Pending, SyncResult
from .member import Member, Protocols
from .offsets import CONSUMER_PROTOCOL_TYPE, OffsetAndMetadata, subscribed_topics
from .state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    GroupState,
    can_enter,
    check_transition,
)

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class JoinPhase:
    """How the current join phase ends: after the initial delay of a new group (which
    may be extended while members keep coming, within ``remaining_ms``), or at the
    rebalance timeout (earlier once every member has joined)."""

    initial: bool
    remaining_ms: int = 0


class Group:
    def __init__(self, group_id: str, state: GroupState = EMPTY, now_ms: int | None = None) -> None:
        self.group_id = group_id
        self.state = state
        # When the state last changed (GroupMetadataValue.currentStateTimestamp).
        self.state_timestamp_ms: int | None = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()  # ids handed out with MEMBER_ID_REQUIRED
        self.pending_sync: set[str] = set()  # members that must still send SyncGroup
        self.new_member_added = False
        self.join_phase: JoinPhase | None = None
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_commits: Counter[TopicPartition] = Counter()
        # producer id -> offsets committed in its open transaction (TxnOffsetCommit)
        self.pending_txn: dict[int, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.subscribed_topics: set[str] | None = None
        self._votes: Counter[str] = Counter()
        self._awaiting_join = 0

    def __repr__(self) -> str:
        return (
            f"<Group {self.group_id!r} {self.state} gen={self.generation_id} "
            f"members={list(self.members)}>"
        )

    # ------------------------------------------------------------------ state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.state_timestamp_ms = now_ms

    @property
    def can_rebalance(self) -> bool:
        return can_enter(PREPARING_REBALANCE, self.state)

    @property
    def is_dead(self) -> bool:
        return self.state is DEAD

    # ---------------------------------------------------------------- members

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def num_awaiting_join(self) -> int:
        return self._awaiting_join

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    @staticmethod
    def new_member_id(client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id or client_id}-{uuid.uuid4()}"

    def add(self, member: Member, join: Pending[JoinResult] | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._votes.update(member.protocol_names)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)
        member.awaiting_join = join
        if join is not None:
            self._awaiting_join += 1

    def remove(self, member_id: str) -> Member | None:
        """Take a member out (its parked answers are the caller's to give)."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._votes.subtract(member.protocol_names)
            self._votes += Counter()  # drop the zero counts
            if member.awaiting_join is not None:
                self._awaiting_join -= 1
            instance = member.group_instance_id
            if instance is not None and self.static_members.get(instance) == member_id:
                del self.static_members[instance]
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        join: Pending[JoinResult] | None,
    ) -> Pending[JoinResult] | None:
        """New protocols and timeouts for ``member``, now parked on ``join``. Returns the
        join it was parked on before, if any (the caller answers it)."""
        self._votes.subtract(member.protocol_names)
        self._votes.update(name for name, _ in protocols)
        self._votes += Counter()
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        replaced = member.awaiting_join
        if replaced is None and join is not None:
            self._awaiting_join += 1
        elif replaced is not None and join is None:
            self._awaiting_join -= 1
        member.awaiting_join = join
        return replaced

    def take_join(self, member: Member) -> Pending[JoinResult] | None:
        """The join ``member`` is parked on, no longer parked."""
        join = member.awaiting_join
        if join is not None:
            member.awaiting_join = None
            self._awaiting_join -= 1
        return join

    @staticmethod
    def take_sync(member: Member) -> Pending[SyncResult] | None:
        sync = member.awaiting_sync
        member.awaiting_sync = None
        return sync

    @property
    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._awaiting_join and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members and member_id not in self.members

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def replace_static_member(self, group_instance_id: str, old_id: str, new_id: str) -> Member:
        """Give the static member ``old_id`` the id ``new_id``, keeping everything else
        (its assignment included). Its parked answers are the caller's to fence."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.is_leader(old_id):
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        self.static_members[group_instance_id] = new_id
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else make the first rejoined member leader.
        False if there is no leader or no member rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join is not None:
                self.leader_id = member_id
                return True
        return False

    # -------------------------------------------------------------- protocols

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, votes in self._votes.items() if votes == n}

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a member with these protocols may join."""
        names = list(names)
        if self.state is EMPTY and not self.members:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(self._votes[p] == n for p in names)

    def select_protocol(self) -> str:
        if not self.members:
            raise ValueError(f"group {self.group_id!r} has no members to select a protocol")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)

    def current_member_metadata(self) -> list[JoinMember]:
        """Every member with its metadata for the selected protocol (for the leader)."""
        assert self.protocol_name is not None
        return [
            JoinMember(m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
            for m in self.members.values()
        ]

    def compute_subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to, for a consumer group; None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics |= subscribed_topics(m.metadata_for(self.protocol_name))
        except (ValueError, KeyError):
            return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        """Unknown subscriptions count as subscribed (the safe answer)."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # ----------------------------------------------------------------- offsets

    def remove_offsets(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        """Forget these committed offsets; returns those that existed."""
        return [tp for tp in partitions if self.offsets.pop(tp, None) is not None]
