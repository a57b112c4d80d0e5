"""Partition reassignment (KIP-455), as Kafka's ZooKeeper-era controller carries it out
(``KafkaController.onPartitionReassignment``): the rules and the controller's part in them.

Owns ``ReassignOrder`` (an AlterPartitionReassignments request for the controller's next
round) and ``Reassignments``, the controller's reassignment work, called from its round
(``ZkController``) with the topics the round has just read. With a partition's original
replicas ORS and target replicas TRS:

- **begin** (an order): TRS is checked (not empty, no repeats, registered brokers:
  INVALID_REPLICA_ASSIGNMENT; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION; with
  AlterPartitionReassignments v1's AllowReplicationFactorChange false, as many replicas as
  the partition has, or is being moved to: INVALID_REPLICATION_FACTOR, KIP-860), and the
  topic node gets the full set RS = TRS + (ORS - TRS) as the partition's replicas, with
  TRS - ORS under ``adding_replicas`` and ORS - TRS under ``removing_replicas``, written
  with a version check (a refused write is read again in the next round). A new target
  for a partition already moving keeps its ORS; replicas the earlier move was adding
  that the new one has no use for are stopped and their logs deleted. Null replicas
  cancel: the target is ORS again (NO_REASSIGNMENT_IN_PROGRESS if none is under way).
- **tell** (each round, for a partition whose replica set this controller has not yet
  told): the state node gets the next leader epoch (the ISR within RS) and LeaderAndIsr
  goes to RS, adding and removing replicas included: the new replicas create their logs
  and fetch from the leader, whose ISR takes them in once they have caught up (its ISR
  change notification starts a round). After a controller change the new controller
  tells the replicas again: the reassignment is in ZooKeeper.
- **complete** (each round, once every replica of TRS is in the ISR): a leader outside
  TRS gives way to the first replica of TRS in the ISR; the state gets the next leader
  epoch and the ISR within TRS; the topic node gets TRS without adding or removing
  replicas; LeaderAndIsr goes to TRS and StopReplica with delete to ORS - TRS (kept until
  each has answered, for as long as this broker is the controller). The new replicas have
  caught up before the old ones go, so no acknowledged record is left behind.

Nothing here sends: the round sends what ``stop_request`` builds, with the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field

import trio
from kazoo.exceptions import BadVersionError, NoNodeError

from ...protocol.errors import ErrorCode
from ...protocol.messages.controller import StopReplicaRequest
from . import layout
from .session import ZkSession
from .topic_view import TopicView

log = logging.getLogger("trio_broker.controller")

NO_LEADER = -1
Key = tuple[str, int]
WriteState = Callable[[str, int, TopicView, layout.LeaderIsr], Awaitable[bool]]


@dataclass
class ReassignOrder:
    """Reassignments for the next controller round: partition -> target replicas (None:
    cancel). The round fills ``results`` (error code, message) and sets ``done`` once the
    topic nodes are written and its view of them is the controller's."""

    targets: Mapping[Key, list[int] | None]
    # KIP-860: False refuses a target whose replica count is not the partition's
    allow_rf_change: bool = True
    results: dict[Key, tuple[int, str | None]] = field(default_factory=dict)
    done: trio.Event = field(default_factory=trio.Event)
    error: int = ErrorCode.NONE  # for the whole order (NOT_CONTROLLER: resigned meanwhile)


def check_target(target: list[int], live: Collection[int]) -> str | None:
    """Why ``target`` is an invalid replica assignment (Kafka's messages), or None."""
    if not target:
        return "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return f"Duplicate replica ids in partition reassignment replica list: {target}"
    if any(r < 0 for r in target):
        return f"Invalid broker id in replica list: {target}"
    if not set(target) <= set(live):
        return (
            f"Replica assignment has brokers that are not alive. Replica list: {target}, "
            f"live broker list: {sorted(live)}"
        )
    return None


def rf_change(current: int, target: list[int]) -> str | None:
    """Why ``target`` changes a replication factor of ``current`` (Kafka's message, the
    error INVALID_REPLICATION_FACTOR), or None."""
    if len(target) != current:
        return f"The replication factor is changed from {current} to {len(target)}"
    return None


def plan(original: list[int], target: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(RS, adding, removing) of moving a partition from ``original`` to ``target``."""
    full = target + [r for r in original if r not in target]
    adding = [r for r in target if r not in original]
    return full, adding, [r for r in original if r not in target]


def retold(
    state: layout.LeaderIsr, replicas: list[int], eligible: Collection[int], epoch: int
) -> layout.LeaderIsr:
    """The state that tells the replicas of a new replica set: the next leader epoch, the
    ISR within ``replicas``, the leader kept while it is one of them."""
    isr = tuple(r for r in state.isr if r in replicas)
    leader = state.leader
    if leader not in replicas:
        leader = next((r for r in replicas if r in isr and r in eligible), NO_LEADER)
    return layout.LeaderIsr(leader, state.leader_epoch + 1, isr, epoch)


def finished(
    state: layout.LeaderIsr, target: list[int], eligible: Collection[int], epoch: int
) -> layout.LeaderIsr | None:
    """The state that completes a reassignment to ``target``, or None while some of the
    target is not in the ISR (or no replica of it can lead)."""
    if not all(r in state.isr for r in target):
        return None
    isr = tuple(r for r in state.isr if r in target)
    leader = state.leader
    if leader not in target or leader not in eligible:
        leader = next((r for r in target if r in isr and r in eligible), NO_LEADER)
        if leader == NO_LEADER:
            return None
    return layout.LeaderIsr(leader, state.leader_epoch + 1, isr, epoch)


class Reassignments:
    def __init__(self, session: ZkSession, write_state: WriteState) -> None:
        self.session = session
        self.write_state = write_state
        self.orders: list[ReassignOrder] = []
        self._begun: list[ReassignOrder] = []  # done once the round's view is published
        # The replica set each moving partition's replicas were last told (this controller).
        self.told: dict[Key, tuple[int, ...]] = {}
        self.removals: dict[int, set[Key]] = {}  # broker -> replicas to stop and delete

    def begin_term(self) -> None:
        """A new controller term: every moving partition's replicas are told again."""
        self.told, self.removals = {}, {}

    def end_term(self) -> None:
        """This broker resigned: waiting orders are NOT_CONTROLLER."""
        for order in self.orders:
            order.error = ErrorCode.NOT_CONTROLLER
        self.published()
        for order in self.orders:
            order.done.set()
        self.orders = []

    def published(self) -> None:
        """The round's view is the controller's: the orders it began are done (a List
        after the answer sees them)."""
        for order in self._begun:
            order.done.set()
        self._begun = []

    async def carry_out(self, topics: Mapping[str, TopicView], live: Collection[int]) -> bool:
        """Begin (or cancel) the orders' reassignments; False if a topic node had moved on
        (the rest is left for the next round)."""
        complete = True
        for order in self.orders:
            complete &= await self._carry_out(order, topics, live)
        self.orders = [o for o in self.orders if o not in self._begun]
        return complete

    async def _carry_out(
        self, order: ReassignOrder, topics: Mapping[str, TopicView], live: Collection[int]
    ) -> bool:
        by_topic: dict[str, dict[int, list[int]]] = {}
        for key, wanted in sorted(order.targets.items()):
            if key in order.results:
                continue
            name, p = key
            view = topics.get(name)
            if view is None or p not in view.replicas:
                order.results[key] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif wanted is None and not view.moving(p):
                message = f"no reassignment of {name}-{p} is in progress"
                order.results[key] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, message)
            elif wanted is not None and (problem := check_target(wanted, live)) is not None:
                order.results[key] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
            elif (
                wanted is not None
                and not order.allow_rf_change
                and (problem := rf_change(len(view.target(p)), wanted)) is not None
            ):
                order.results[key] = (ErrorCode.INVALID_REPLICATION_FACTOR, problem)
            else:
                by_topic.setdefault(name, {})[p] = view.original(p) if wanted is None else wanted
        complete = True
        for name, targets in by_topic.items():
            complete &= await self._begin(name, topics[name], targets, order)
        if complete:
            self._begun.append(order)
        return complete

    async def _begin(
        self, name: str, view: TopicView, targets: dict[int, list[int]], order: ReassignOrder
    ) -> bool:
        before = {p: list(view.replicas[p]) for p in targets}
        moved = TopicView(view.topic_id, dict(view.replicas))
        moved.adding, moved.removing = dict(view.adding), dict(view.removing)
        for p, target in targets.items():
            full, adding, removing = plan(view.original(p), target)
            moved.replicas[p], moved.adding[p], moved.removing[p] = full, adding, removing
        try:
            version = await self.session.set(
                layout.topic_path(name), moved.assignment_data(), view.version
            )
        except BadVersionError:
            log.info("%s changed meanwhile: its reassignment waits for the next round", name)
            return False
        except NoNodeError:
            for p in targets:
                order.results[(name, p)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            return True
        view.replicas, view.adding, view.removing = moved.replicas, moved.adding, moved.removing
        view.version = version
        for p, target in targets.items():
            key = (name, p)
            order.results[key] = (ErrorCode.NONE, None)
            self.told[key] = ()  # to be told in this round
            for b in view.replicas[p]:
                self.removals.get(b, set()).discard(key)
            for b in before[p]:
                if b not in view.replicas[p]:  # an earlier move's new replica, not wanted now
                    self.removals.setdefault(b, set()).add(key)
            log.info(
                "reassignment of %s-%d: %s -> %s (replicas %s)",
                name,
                p,
                view.original(p),
                target,
                view.replicas[p],
            )
        return True

    async def advance(
        self,
        topics: Mapping[str, TopicView],
        eligible: Collection[int],
        epoch: int,
        changed: set[Key],
    ) -> bool:
        """Tell and complete the reassignments under way; False if a write was refused
        (the next round reads again)."""
        ok = True
        for name, view in topics.items():
            for p in sorted(set(view.adding) | set(view.removing) | _told(self.told, name)):
                if p in view.replicas and p in view.states:
                    ok &= await self._advance(name, p, view, eligible, epoch, changed)
        return ok

    async def _advance(
        self,
        name: str,
        p: int,
        view: TopicView,
        eligible: Collection[int],
        epoch: int,
        changed: set[Key],
    ) -> bool:
        key = (name, p)
        state = view.states[p]
        if view.moving(p):
            target, original = view.target(p), view.original(p)
            new = finished(state, target, eligible, epoch)
            if new is not None:
                if not await self.write_state(name, p, view, new):
                    return False
                changed.add(key)
                done = TopicView(
                    view.topic_id,
                    {**view.replicas, p: target},
                    adding={q: r for q, r in view.adding.items() if q != p},
                    removing={q: r for q, r in view.removing.items() if q != p},
                )
                try:
                    view.version = await self.session.set(
                        layout.topic_path(name), done.assignment_data(), view.version
                    )
                except (BadVersionError, NoNodeError):
                    return False  # the next round reads the node again and completes it
                view.replicas, view.adding = done.replicas, done.adding
                view.removing = done.removing
                for b in original:
                    if b not in target:
                        self.removals.setdefault(b, set()).add(key)
                self.told.pop(key, None)
                log.info("reassignment of %s-%d complete: replicas %s", name, p, target)
                return True
        if self.told.get(key) != tuple(view.replicas[p]):
            new = retold(state, view.replicas[p], eligible, epoch)
            if not await self.write_state(name, p, view, new):
                return False
            changed.add(key)
            self.told[key] = tuple(view.replicas[p])
        if not view.moving(p):
            self.told.pop(key, None)
        return True

    def stop_request(
        self, epoch: int, controller_id: int, broker: int, topics: Mapping[str, TopicView]
    ) -> tuple[StopReplicaRequest, Callable[[], None]] | None:
        """StopReplica with delete for the replicas ``broker`` no longer holds, and what
        to call once it has answered."""
        todo = sorted(self.removals.get(broker, ()))
        if not todo:
            return None
        S = StopReplicaRequest.TopicState
        by_topic: dict[str, list[StopReplicaRequest.TopicState.PartitionState]] = {}
        for name, p in todo:
            view = topics.get(name)
            state = view.states.get(p) if view is not None else None
            by_topic.setdefault(name, []).append(
                S.PartitionState(
                    partition_index=p,
                    leader_epoch=state.leader_epoch if state is not None else -1,
                    delete_partition=True,
                )
            )
        request = StopReplicaRequest(
            controller_id=controller_id,
            controller_epoch=epoch,
            topic_states=[S(topic_name=n, partition_states=ps) for n, ps in by_topic.items()],
        )

        def done() -> None:
            self.removals.get(broker, set()).difference_update(todo)

        return request, done

    def ongoing(self, topics: Mapping[str, TopicView]) -> dict[Key, tuple[list[int], ...]]:
        """Every partition being reassigned: (replicas, adding, removing)."""
        return {
            (name, p): (view.replicas[p], view.adding.get(p, []), view.removing.get(p, []))
            for name, view in topics.items()
            for p in sorted(view.replicas)
            if view.moving(p)
        }


def _told(told: Mapping[Key, object], name: str) -> set[int]:
    return {p for n, p in told if n == name}
