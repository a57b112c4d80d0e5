"""What the controller serves to other brokers and to admins: ControlledShutdown,
ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments; and its
periodic leader balance.

Owns: ``ControllerRequests``, the broker's entry to its ``ZkController`` for these. Each
request becomes an ``ElectionOrder`` the controller's next round carries out (the rules
are in ``elections``); the answer comes once the round has written the states, after the
brokers have been told (up to a bound). A broker that is not the controller answers
NOT_CONTROLLER, as Kafka's ZooKeeper-mode brokers do (the admin client sends ElectLeaders
to the controller named by Metadata; a stopping broker finds it in ``/controller``).

Without ZooKeeper (``controller`` None) a broker is a cluster of one, its own controller,
as a Kafka broker on its own: every partition has one replica, its leader, so every
election is ELECTION_NOT_NEEDED; a reassignment to this broker (the replicas a partition
has) completes at once and any other target is INVALID_REPLICA_ASSIGNMENT with the
controller's message (``reassignment.check_target``), a cancel NO_REASSIGNMENT_IN_PROGRESS;
nothing is ever being moved. ControlledShutdown is not served (no controller to ask: the
broker leaves it out of its API table).

A reassignment order is answered once the round has written the topic nodes (the move
itself goes on in later rounds, as Kafka's); the list is the controller's view of the
partitions being moved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

import trio

from ...apis.services import TopicInfo
from ...protocol.errors import ErrorCode
from . import elections
from .controller import SEND_TIMEOUT_S, ZkController
from .elections import PREFERRED, ElectionOrder, Key
from .reassignment import ReassignOrder, check_target, rf_change

log = logging.getLogger("trio_broker.controller")

# Kafka checks the balance first 5 s after the election, then every interval.
FIRST_BALANCE_CHECK_S = 5.0


class ControllerRequests:
    def __init__(
        self,
        controller: ZkController | None,
        topics: Callable[[], Sequence[TopicInfo]],
        balance: tuple[bool, float, int] = (False, 300.0, 10),
        *,
        broker_id: int = -1,
    ) -> None:
        """``balance``: auto.leader.rebalance.enable, leader.imbalance.check.interval
        (seconds) and leader.imbalance.per.broker.percentage; ``broker_id``: this broker's
        (the one live broker of a cluster of one)."""
        self.controller = controller
        self.topics = topics  # without ZooKeeper: this broker's topics
        self.balance = balance
        self.broker_id = broker_id

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[int, list[Key]]:
        """(error code, the partitions ``broker_id`` still leads)."""
        c = self.controller
        if c is None or c.epoch is None:
            return ErrorCode.NOT_CONTROLLER, []
        if broker_id not in c.live:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        log.info("controlled shutdown of broker %d", broker_id)
        await c.shut_down(broker_id)
        order = ElectionOrder(PREFERRED, frozenset())  # nothing to elect: one round
        c.submit(order)
        await order.done.wait()
        if order.error:
            return order.error, []
        await _told(order, SEND_TIMEOUT_S, c.broker_id)
        states = [
            ((name, p), view.replicas[p], s)
            for name, view in c.topics.items()
            for p, s in view.states.items()
        ]
        left = elections.remaining(broker_id, states)
        log.info("controlled shutdown of broker %d: %d partitions remain", broker_id, len(left))
        return ErrorCode.NONE, left

    async def elect_leaders(
        self, election_type: int, partitions: Iterable[Key] | None, timeout_ms: int
    ) -> dict[Key, int]:
        """An error code for each partition (None: every partition; NONE: it has a new
        leader)."""
        asked = None if partitions is None else frozenset(partitions)
        c = self.controller
        if c is None:
            known = {(t.name, p.index) for t in self.topics() for p in t.partitions}
            return {
                k: ErrorCode.ELECTION_NOT_NEEDED
                if k in known
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                for k in (known if asked is None else asked)
            }
        if c.epoch is None:
            return dict.fromkeys(asked or (), ErrorCode.NOT_CONTROLLER)
        order = ElectionOrder(election_type, asked)
        c.submit(order)
        deadline = trio.current_time() + timeout_ms / 1000
        with trio.move_on_at(deadline):
            await order.done.wait()
        if order.error:
            return dict.fromkeys(asked or (), order.error)
        wanted = order.results.keys() if asked is None else asked
        results = {k: order.results.get(k, ErrorCode.REQUEST_TIMED_OUT) for k in wanted}
        await _told(order, max(0.0, deadline - trio.current_time()), c.broker_id)
        return results

    async def alter_reassignments(
        self,
        targets: Mapping[Key, list[int] | None],
        timeout_ms: int,
        allow_rf_change: bool = True,
    ) -> tuple[int, dict[Key, tuple[int, str | None]]]:
        """(error code, (error code, message) per partition): each reassignment begun
        (or cancelled: None); ``allow_rf_change`` False refuses a target of another
        replica count (KIP-860)."""
        c = self.controller
        if c is None:
            return ErrorCode.NONE, self._alone(targets, allow_rf_change)
        if c.epoch is None:
            return ErrorCode.NOT_CONTROLLER, {}
        order = ReassignOrder(dict(targets), allow_rf_change)
        c.submit_reassignment(order)
        with trio.move_on_after(timeout_ms / 1000):
            await order.done.wait()
        if order.error:
            return order.error, {}
        timed_out = (ErrorCode.REQUEST_TIMED_OUT, None)
        return ErrorCode.NONE, {k: order.results.get(k, timed_out) for k in targets}

    def list_reassignments(
        self, partitions: Iterable[Key] | None
    ) -> tuple[int, dict[Key, tuple[list[int], ...]]]:
        """(error code, (replicas, adding, removing) of each partition being moved of
        ``partitions`` (None: all))."""
        c = self.controller
        if c is None:
            return ErrorCode.NONE, {}  # a cluster of one moves nothing
        if c.epoch is None:
            return ErrorCode.NOT_CONTROLLER, {}
        ongoing = c.moves.ongoing(c.topics)
        if partitions is not None:
            asked = set(partitions)
            ongoing = {k: v for k, v in ongoing.items() if k in asked}
        return ErrorCode.NONE, ongoing

    def _alone(
        self, targets: Mapping[Key, list[int] | None], allow_rf_change: bool
    ) -> dict[Key, tuple[int, str | None]]:
        """Each reassignment's answer on a cluster of one: done (the target is the replica
        set the partition has), or refused as the controller refuses it."""
        replicas = {
            (t.name, p.index): list(p.replicas) for t in self.topics() for p in t.partitions
        }
        results: dict[Key, tuple[int, str | None]] = {}
        for (name, p), wanted in targets.items():
            current = replicas.get((name, p))
            if current is None:
                results[(name, p)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif wanted is None:
                message = f"no reassignment of {name}-{p} is in progress"
                results[(name, p)] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, message)
            elif (problem := check_target(wanted, [self.broker_id])) is not None:
                results[(name, p)] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
            elif not allow_rf_change and (problem := rf_change(len(current), wanted)):
                results[(name, p)] = (ErrorCode.INVALID_REPLICATION_FACTOR, problem)
            else:  # the one live broker, which holds the partition: nothing to move
                results[(name, p)] = (ErrorCode.NONE, None)
        return results

    async def balance_forever(self) -> None:
        """Kafka's automatic preferred elections, while this broker is the controller."""
        enabled, interval_s, percentage = self.balance
        c = self.controller
        if not enabled or c is None:
            return
        await trio.sleep(FIRST_BALANCE_CHECK_S)
        while True:
            if c.epoch is not None:
                states = [
                    ((name, p), view.replicas[p], s)
                    for name, view in c.topics.items()
                    for p, s in view.states.items()
                ]
                eligible = elections.eligible_brokers(c.live, c.shutting_down)
                chosen = elections.imbalanced(states, eligible, percentage)
                if chosen:
                    log.info("leader imbalance: preferred elections for %s", sorted(chosen))
                    c.submit(ElectionOrder(PREFERRED, chosen))
            await trio.sleep(interval_s)


async def _told(order: ElectionOrder, timeout_s: float, controller: int) -> None:
    """Wait (up to ``timeout_s``) until the brokers have been told the order's outcome;
    not the controller itself: its control plane is busy with this very request (one
    handler), so what it tells itself waits until the answer has gone."""
    if order.sent is not None:
        with trio.move_on_after(timeout_s):
            for broker, sent in order.sent.items():
                if broker != controller:
                    await sent.wait()
