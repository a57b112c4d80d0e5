"""Elections on request: preferred and unclean (ElectLeaders), controlled shutdown, and the
controller's automatic leader balancing.

Owns the rules, as Kafka's ZooKeeper-era controller has them (``Election.scala``,
``KafkaController.processReplicaLeaderElection``, ``checkAndTriggerAutoLeaderRebalance``),
and ``ElectionOrder``, a request the controller's round carries out. Pure: the controller
(``ZkController``) reads ZooKeeper, applies these rules in its round, writes the state
nodes with their version checks and tells the brokers; here nothing is read or written.

- **each round** (``elect``): a new partition's leader is its first live replica; a dead
  follower leaves the ISR; a dead leader's partition goes to the first live ISR member of
  the assignment, else it is offline (leader -1) until one comes back. A controller that
  registered less than ``zookeeper.session.timeout.ms`` ago (after a ZooKeeper outage, or
  a whole cluster starting) waits that long at most for the brokers registered before
  it: a partition whose leader or an ISR member is not registered keeps its state
  (``held``) until they are, or until the wait is over.
- **preferred** (type 0): the first replica of the assignment leads if it is alive, not
  shutting down and in the ISR (PREFERRED_LEADER_NOT_AVAILABLE otherwise); a partition it
  already leads is ELECTION_NOT_NEEDED. The ISR stays; the leader epoch goes up.
- **unclean** (type 1): only a partition without a live leader is elected
  (ELECTION_NOT_NEEDED otherwise): the first live ISR member of the assignment, else the
  first live replica at all (its ISR is then that replica alone: records the others had
  may be lost); none alive is ELIGIBLE_LEADERS_NOT_AVAILABLE.
- **controlled shutdown**: a broker that asked for it stays "shutting down" until its
  registration goes. It is elected nowhere and leaves every ISR; each partition it leads
  goes to the first other live ISR member of the assignment, or stays with it (reported
  back as remaining) when there is none (``elect``).
- **balance**: for each broker, the partitions it is preferred leader of but that another
  broker leads; above ``leader.imbalance.per.broker.percentage`` of its preferred
  partitions, those whose preferred replica can lead get a preferred election.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import trio

from ...protocol.errors import ErrorCode
from . import layout

PREFERRED, UNCLEAN = 0, 1
NO_LEADER = -1
Key = tuple[str, int]


@dataclass
class ElectionOrder:
    """Elections the next controller round carries out: ``partitions`` (None: every
    partition) of ``election_type``; the round fills ``results`` (partition -> error code,
    NONE for a new leader) and sets ``done`` once the states are written, and each broker's
    ``sent`` once it has been told."""

    election_type: int
    partitions: frozenset[Key] | None
    results: dict[Key, int] = field(default_factory=dict)
    done: trio.Event = field(default_factory=trio.Event)
    sent: Mapping[int, trio.Event] | None = None  # broker -> told
    error: int = ErrorCode.NONE  # for the whole order (NOT_CONTROLLER: resigned meanwhile)


def preferred(
    state: layout.LeaderIsr, replicas: list[int], eligible: Collection[int], epoch: int
) -> layout.LeaderIsr | int:
    """The state after a preferred election, or the error code when there is none."""
    first = replicas[0]
    if state.leader == first:
        return ErrorCode.ELECTION_NOT_NEEDED
    if first in eligible and first in state.isr:
        return layout.LeaderIsr(first, state.leader_epoch + 1, state.isr, epoch)
    return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


def unclean(
    state: layout.LeaderIsr, replicas: list[int], eligible: Collection[int], epoch: int
) -> layout.LeaderIsr | int:
    """The state after an unclean election, or the error code when there is none."""
    if state.leader != NO_LEADER and state.leader in eligible:
        return ErrorCode.ELECTION_NOT_NEEDED
    in_sync = [r for r in replicas if r in eligible and r in state.isr]
    if in_sync:
        isr = tuple(r for r in state.isr if r in eligible)
        return layout.LeaderIsr(in_sync[0], state.leader_epoch + 1, isr, epoch)
    alive = [r for r in replicas if r in eligible]
    if alive:
        return layout.LeaderIsr(alive[0], state.leader_epoch + 1, (alive[0],), epoch)
    return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def decide(
    election_type: int,
    state: layout.LeaderIsr | None,
    replicas: list[int],
    eligible: Collection[int],
    epoch: int,
) -> layout.LeaderIsr | int:
    """One partition of an order: its new state, or its error code."""
    if state is None:  # not yet given a state: the round gives it one
        return (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            if election_type == PREFERRED
            else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
    if election_type == PREFERRED:
        return preferred(state, replicas, eligible, epoch)
    return unclean(state, replicas, eligible, epoch)


def imbalanced(
    partitions: Iterable[tuple[Key, list[int], layout.LeaderIsr]],
    eligible: Collection[int],
    percentage: int,
) -> frozenset[Key]:
    """The partitions an automatic balance elects (Kafka's leader imbalance check)."""
    by_preferred: dict[int, list[tuple[Key, list[int], layout.LeaderIsr]]] = {}
    for key, replicas, state in partitions:
        if replicas:
            by_preferred.setdefault(replicas[0], []).append((key, replicas, state))
    chosen: set[Key] = set()
    for broker, owned in by_preferred.items():
        elsewhere = [(k, r, s) for k, r, s in owned if s.leader != broker]
        if len(elsewhere) / len(owned) > percentage / 100:
            chosen.update(
                k for k, r, s in elsewhere if not isinstance(preferred(s, r, eligible, 0), int)
            )
    return frozenset(chosen)


def remaining(broker: int, states: Iterable[tuple[Key, list[int], layout.LeaderIsr]]) -> list[Key]:
    """What a broker in controlled shutdown still leads (of partitions with followers)."""
    return sorted(k for k, r, s in states if s.leader == broker and len(r) > 1)


def eligible_brokers(live: Mapping[int, object], shutting_down: Collection[int]) -> set[int]:
    return {b for b in live if b not in shutting_down}


def elect(
    state: layout.LeaderIsr | None,
    replicas: list[int],
    live: Mapping[int, object],
    epoch: int,
    shutting_down: Collection[int] = (),
    waiting: bool = False,
    restarted: Collection[int] = (),
) -> layout.LeaderIsr | None:
    """The partition's next state, or None if it stays as it is. A broker in
    ``shutting_down`` (controlled shutdown) is live but elected nowhere and in no ISR.
    ``waiting``: the controller waits for the brokers registered before it (``held``),
    but not for those it saw register again (``restarted``: treated as dead)."""
    eligible = [r for r in replicas if r in live and r not in shutting_down]
    if state is None:
        alive = eligible or [r for r in replicas if r in live]
        return layout.LeaderIsr(alive[0] if alive else NO_LEADER, 0, tuple(alive), epoch)
    if waiting and held(state, live, restarted):
        return None
    in_sync = tuple(r for r in state.isr if r in eligible)
    if state.leader in live and state.leader not in shutting_down:
        if in_sync == state.isr:
            return None
        # A follower died (or is shutting down): it leaves the ISR at once (acks=all
        # stops waiting for it).
        return layout.LeaderIsr(state.leader, state.leader_epoch + 1, in_sync, epoch)
    # Kafka elects in the order of the assignment.
    candidates = [r for r in replicas if r in in_sync]
    if not candidates:
        if state.leader in live:  # shutting down with no one to take over: it stays
            return None
        if state.leader == NO_LEADER:
            return None
        return layout.LeaderIsr(NO_LEADER, state.leader_epoch + 1, state.isr, epoch)
    return layout.LeaderIsr(candidates[0], state.leader_epoch + 1, in_sync, epoch)


def held(
    state: layout.LeaderIsr, live: Mapping[int, object], restarted: Collection[int] = ()
) -> bool:
    """Whether a partition keeps its state while a controller that registered less than a
    session timeout ago waits for the brokers registered before it: its leader or an ISR
    member is not registered (yet). After a ZooKeeper outage every session expires at
    once and the brokers register again one by one; the first to register becomes
    controller and, without this wait, would take every leadership and shrink every ISR
    to itself, and the leader balance would move them all back seconds later. A broker
    this controller saw registered under a new session (``restarted``, Kafka's "bounced"
    broker) is not waited for: its leaderships move as a dead broker's do."""
    absent = [b for b in (state.leader, *state.isr) if b != NO_LEADER and b not in live]
    return any(b not in restarted for b in absent)
