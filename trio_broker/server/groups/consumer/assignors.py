"""KIP-848's server-side assignors, ``uniform`` and ``range``: from the members'
subscriptions and the topics as they are now, the group's target assignment.

Owns: ``MemberSpec``, ``assign`` and the two assignors. Pure functions over plain values:
no group state, no timers, no topic lookups (the caller resolves names to ids and counts).

- ``uniform`` (Kafka's default, its ``UniformAssignor``): every member gets as many
  partitions as the others it shares subscriptions with, give or take one, and keeps what
  its target already held wherever balance allows (sticky). Written here as: keep each
  member's current target partitions it is still subscribed to (no partition twice),
  hand the unowned partitions one by one to the least-loaded subscribed member, then move
  partitions from the most- to the least-loaded member that may take them until no move
  narrows the gap. For one shared subscription this gives Kafka's result (balanced to
  within one, as sticky as balance allows); for different subscriptions it is balanced
  and sticky by the same rule but not Kafka's exact heterogeneous algorithm, so the
  partitions a member gets may differ from Kafka's.
- ``range`` (Kafka's ``RangeAssignor``): per topic, its subscribers sorted by instance id
  (else member id) take contiguous ranges, the first ``partitions % members`` one more;
  with the same subscriptions and partition counts a member gets the same partition
  numbers of every topic (co-partitioning). Not sticky: Kafka 4's range assignor keeps a
  member's current ranges where quotas allow, this one recomputes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicPartition = tuple[uuid.UUID, int]
Targets = dict[str, set[TopicPartition]]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    subscribed: frozenset[uuid.UUID]  # topic ids
    instance_id: str | None = None
    current: frozenset[TopicPartition] = field(default_factory=frozenset)  # its target now


def uniform(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> Targets:
    out: Targets = {m: set() for m in members}
    owner: dict[TopicPartition, str] = {}
    for member_id in sorted(members):
        spec = members[member_id]
        for tp in sorted(spec.current):
            topic, partition = tp
            exists = topic in spec.subscribed and partition < topics.get(topic, 0)
            if exists and tp not in owner:
                owner[tp] = member_id
                out[member_id].add(tp)
    eligible = {
        topic: sorted(m for m, spec in members.items() if topic in spec.subscribed)
        for topic in topics
    }
    unowned = [
        (topic, p)
        for topic in sorted(topics, key=lambda t: (len(eligible[t]), str(t)))
        if eligible[topic]
        for p in range(topics[topic])
        if (topic, p) not in owner
    ]
    for tp in unowned:
        taker = min(eligible[tp[0]], key=lambda m: (len(out[m]), m))
        out[taker].add(tp)
    _balance(out, members)
    return out


def _balance(out: Targets, members: Mapping[str, MemberSpec]) -> None:
    """Move one partition at a time from a member to one with at least two fewer that is
    subscribed to its topic, the largest gap first, until there is no such move."""
    while True:
        loads = sorted(out, key=lambda m: (-len(out[m]), m))
        move = _find_move(out, members, loads)
        if move is None:
            return
        giver, taker, tp = move
        out[giver].discard(tp)
        out[taker].add(tp)


def _find_move(
    out: Targets, members: Mapping[str, MemberSpec], loads: list[str]
) -> tuple[str, str, TopicPartition] | None:
    for giver in loads:
        for taker in reversed(loads):
            if len(out[taker]) >= len(out[giver]) - 1:
                break
            movable = [tp for tp in out[giver] if tp[0] in members[taker].subscribed]
            if movable:
                return giver, taker, max(movable, key=lambda tp: (str(tp[0]), tp[1]))
    return None


def range_(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> Targets:
    out: Targets = {m: set() for m in members}
    for topic, count in topics.items():
        subscribers = sorted(
            (m for m, spec in members.items() if topic in spec.subscribed),
            key=lambda m: (members[m].instance_id or m, m),
        )
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, member_id in enumerate(subscribers):
            size = quota + (1 if i < extra else 0)
            out[member_id].update((topic, p) for p in range(start, start + size))
            start += size
    return out


ASSIGNORS: dict[str, Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, int]], Targets]] = {
    "uniform": uniform,
    "range": range_,
}


def assign(
    name: str, members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]
) -> Targets:
    """The target assignment by assignor ``name`` (one of ``ASSIGNORS``)."""
    return ASSIGNORS[name](members, topics)
