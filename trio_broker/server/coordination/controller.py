"""The elected controller's work: live brokers, topics, partition leaders, and telling
every broker about them.

Owns: ``ZkController``. While this broker is controller (from ``on_controller`` until
``on_resign``), each round it reads ZooKeeper (``/brokers/ids`` and their registrations,
``/brokers/topics`` and every partition's state node) and then, as Kafka's controller:

- gives every partition without a state a leader (its first live replica) and an ISR
  (its live replicas), at leader epoch 0; leaves alone, for ``grace``, a partition whose
  leader or ISR names an unregistered broker (``elections.held``);
- takes a dead follower out of its partitions' ISR, with the next leader epoch;
- moves the leadership of a partition whose leader died to the first live replica of its
  ISR, with the next leader epoch; with none left the partition is offline (leader -1:
  ``unclean.leader.election.enable`` is false) until one of its ISR comes back;
- writes each new state node with a version check (a deposed controller's write fails);
- sends LeaderAndIsr to each live replica of a changed partition (and of every partition
  to a broker that has just (re)joined), StopReplica with delete to the replicas of a
  deleted topic, and UpdateMetadata with the live brokers and every partition to every
  live broker, over the receivers' control-plane listener, else their inter-broker one
  (``network.PeerClient``, with that listener's TLS and SASL: ``server.access.inter_broker``);

then waits until a broker or a topic comes or goes, a topic's assignment changes (a data watch
on each ``/brokers/topics/<t>``, as Kafka's: CreatePartitions' new partitions get leaders and
their replicas a LeaderAndIsr at once), or a leader changes an ISR (its notification under
``/isr_change_notification``: the round reads the state again and tells every broker), or an
``ElectionOrder`` is submitted (``controller_requests``: the round carries it out after its own
elections, rules in ``elections``), or a ``ReassignOrder`` (AlterPartitionReassignments:
``reassignment`` begins it, then tells and completes each partition's move round by round). A
broker in controlled shutdown (``shut_down``) is elected nowhere and leaves every ISR; instead
of LeaderAndIsr for the partitions it follows it gets StopReplica (logs kept), so that it stops
fetching. A state write refused for its version (a leader's ISR change since the round read it)
is left for the next round, a second later. A receiver refuses a deposed controller's requests
by their older epoch; one that cannot be reached is retried (``RETRY_S``) until it answers or
the next round begins.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping

import trio
from kazoo.exceptions import BadVersionError

from ...network.peer_client import PeerAuthenticationError, PeerClient, PeerListener
from ...protocol.errors import ErrorCode
from ...protocol.messages.controller import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from ...protocol.schema import Request
from . import elections, layout
from .elections import ElectionOrder, elect
from .reassignment import Reassignments, ReassignOrder
from .session import ZkSession
from .topic_view import TopicView

log = logging.getLogger("trio_broker.controller")

LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION = 7, 4, 8
RETRY_S = 1.0
SEND_TIMEOUT_S = 10.0
PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class ZkController:
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        peers: PeerListener,
        control_plane: str | None = None,
        grace: Callable[[], float] = lambda: 0.0,
    ) -> None:
        """``peers``: the listener brokers are told on (the control plane's, else the
        inter-broker one); ``control_plane``: ``control.plane.listener.name``, left out of
        UpdateMetadata's endpoints (clients never see it); ``grace``: ``elections.held``."""
        self.session = session
        self.grace = grace
        self.broker_id = broker_id
        self.peers = peers
        self.control_listener = peers.name
        self.control_plane = control_plane
        self.live: dict[int, layout.Registration] = {}
        self._owners: dict[int, int] = {}  # broker -> its registration's session
        self.topics: dict[str, TopicView] = {}
        self.updates_sent = 0
        self.epoch: int | None = None  # while this broker is the controller
        # Brokers in controlled shutdown -> their registration's session (until it goes).
        self.shutting_down: dict[int, int | None] = {}
        self.orders: list[ElectionOrder] = []  # for the next round (``submit``)
        self._taken: list[ElectionOrder] = []  # by the current round
        self._halted: dict[int, set[tuple[str, int]]] = {}  # replicas stopped for a shutdown
        self._poked = trio.Event()
        self.moves = Reassignments(session, self._write_state)
        # Each topic as last read, with its data watch then: read again only once that
        # watch fires, an ISR change names it or a write to it was refused (``_stale``).
        self._read: dict[str, tuple[TopicView, trio.Event, Callable[[], Awaitable[None]]]] = {}
        self._stale: set[str] = set()
        self._bounced: set[int] = set()  # registered again this round (``_registrations``)

    def submit_reassignment(self, order: ReassignOrder) -> None:
        """Have the next round begin (or cancel) the order's reassignments."""
        self.moves.orders.append(order)
        self._poked.set()

    def submit(self, order: ElectionOrder) -> None:
        """Have the next round carry out ``order`` (one begins at once)."""
        self.orders.append(order)
        self._poked.set()

    async def shut_down(self, broker: int) -> None:
        """Controlled shutdown of ``broker``: elected nowhere and out of every ISR from the
        next round on, until its registration goes."""
        self.shutting_down[broker] = await self.session.owner(layout.broker_path(broker))

    async def run(self, epoch: int) -> None:
        """Keep the cluster's state and every live broker's view of it, until cancelled
        (this broker resigned)."""
        self.epoch = epoch
        try:
            await self._rounds(epoch)
        finally:
            self.epoch = None
            for order in self._taken + self.orders:
                order.error = ErrorCode.NOT_CONTROLLER
                order.done.set()
            self.orders, self._taken = [], []
            self.moves.end_term()

    async def _rounds(self, epoch: int) -> None:
        self.topics, self.live, self._owners = {}, {}, {}
        self._read, self._stale = {}, set()
        self.moves.begin_term()
        # What each broker has yet to be told (kept across rounds until it has answered).
        untold: dict[int, set[tuple[str, int]]] = {}
        unstopped: dict[int, dict[str, TopicView]] = {}
        while True:
            self._poked = trio.Event()
            self._taken, self.orders = self.orders, []
            ids, brokers_changed = await self.session.watch_children(layout.BROKER_IDS)
            names, topics_changed = await self.session.watch_children(layout.TOPICS)
            await self.session.ensure_path(layout.ISR_CHANGE_NOTIFICATION)
            notes, isr_changed = await self.session.watch_children(layout.ISR_CHANGE_NOTIFICATION)
            live = await self._registrations(ids)
            await self._forget_shut_down(live)
            joined = [b for b in live if b not in self.live]
            grace = self.grace()
            topics: dict[str, TopicView] = {}
            changed: set[tuple[str, int]] = set()
            refused = False  # a state write lost to a leader's ISR change: read again
            assignments_changed: list[Callable[[], Awaitable[None]]] = []
            for note in notes:  # the partitions whose state a leader changed
                found = await self.session.get(f"{layout.ISR_CHANGE_NOTIFICATION}/{note}")
                if found is not None:
                    self._stale.update(t for t, _ in layout.isr_change_of(found[0]))
            for name in [n for n in self._read if n not in names]:
                del self._read[name]
            for name in names:
                view, assignment_changed = await self._topic(name)
                if view is None:
                    continue  # deleted meanwhile: the next round sees it gone
                assignments_changed.append(assignment_changed)
                for p, replicas in view.replicas.items():
                    state, down = view.states.get(p), self.shutting_down
                    new = elect(state, replicas, live, epoch, down, grace > 0, self._bounced)
                    if new is not None:
                        if await self._write_state(name, p, view, new):
                            changed.add((name, p))
                        else:
                            refused = True
                topics[name] = view
            for order in self._taken:
                refused |= not await self._carry_out(order, topics, live, epoch, changed)
            eligible = elections.eligible_brokers(live, self.shutting_down)
            refused |= not await self.moves.carry_out(topics, live)
            refused |= not await self.moves.advance(topics, eligible, epoch, changed)
            for note in notes:  # the states they name were read again just now
                await self.session.delete(f"{layout.ISR_CHANGE_NOTIFICATION}/{note}")
            gone = {n: v for n, v in self.topics.items() if n not in topics}
            self.topics, self.live = topics, live
            self.moves.published()
            for b in [b for b in untold if b not in live]:
                del untold[b]  # told everything when it is back
            for name, view in topics.items():
                for p, replicas in view.replicas.items():
                    for b in replicas:
                        if (name, p) in changed or b in joined:
                            untold.setdefault(b, set()).add((name, p))
            for name, view in gone.items():
                for b in {b for r in view.replicas.values() for b in r if b in live}:
                    unstopped.setdefault(b, {})[name] = view
            log.info(
                "controller (epoch %d): brokers %s, %d topics, %d partitions changed%s",
                epoch,
                sorted(live),
                len(topics),
                len(changed),
                f", shutting down {sorted(self.shutting_down)}" if self.shutting_down else "",
            )
            sends: list[tuple[int, Request, int, Callable[[], None]]] = []
            for broker in live:
                if broker in self.shutting_down:  # its followers stop instead of being told
                    halt = self._halt(epoch, broker, untold.setdefault(broker, set()))
                    if halt is not None:
                        sends.append((broker, *halt))
                todo = set(untold.get(broker, ()))
                lai = self._leader_and_isr(epoch, broker, todo)
                if lai is not None:
                    done = functools.partial(untold[broker].difference_update, todo)
                    sends.append((broker, lai, LEADER_AND_ISR_VERSION, done))
                removal = self.moves.stop_request(epoch, self.broker_id, broker, topics)
                if removal is not None:
                    sends.append((broker, removal[0], STOP_REPLICA_VERSION, removal[1]))
                stopping = dict(unstopped.get(broker, {}))
                stop = self._stop_replica(epoch, broker, stopping)
                if stop is not None:
                    forget = functools.partial(_drop, unstopped[broker], list(stopping))
                    sends.append((broker, stop, STOP_REPLICA_VERSION, forget))
                request = self.update_metadata(epoch)
                sends.append((broker, request, UPDATE_METADATA_VERSION, self._counted))
            sent = {b: trio.Event() for b in live}
            for order in [o for o in self._taken if o.done.is_set()]:
                order.sent = sent
            self._taken = [o for o in self._taken if not o.done.is_set()]
            self.orders[:0] = self._taken  # the next round finishes them
            self._taken = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._send_all, sends, sent)
                waits = [brokers_changed, topics_changed, isr_changed, self._poked.wait]
                waits += assignments_changed
                waits += [functools.partial(trio.sleep, RETRY_S)] * refused
                await _first_of(*waits, *([functools.partial(trio.sleep, grace)] * (grace > 0)))
                nursery.cancel_scope.cancel()  # the next round tells them the news

    async def _carry_out(
        self,
        order: ElectionOrder,
        topics: Mapping[str, TopicView],
        live: Mapping[int, object],
        epoch: int,
        changed: set[tuple[str, int]],
    ) -> bool:
        """The order's elections not yet decided; False if a write was refused (the order
        stays for the next round)."""
        eligible = elections.eligible_brokers(live, self.shutting_down)
        wanted = order.partitions
        if wanted is None:
            wanted = frozenset((n, p) for n, v in topics.items() for p in v.replicas)
        complete = True
        for key in sorted(wanted - order.results.keys()):
            view = topics.get(key[0])
            if view is None or key[1] not in view.replicas:
                order.results[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            replicas = view.replicas[key[1]]
            new = elections.decide(
                order.election_type, view.states.get(key[1]), replicas, eligible, epoch
            )
            if isinstance(new, int):
                order.results[key] = new
            elif await self._write_state(key[0], key[1], view, new):
                order.results[key] = ErrorCode.NONE
                changed.add(key)
            else:
                complete = False
        if complete:
            order.done.set()
        return complete

    async def _forget_shut_down(self, live: Mapping[int, object]) -> None:
        """Brokers whose registration went (or was made again) are no longer shutting down."""
        for broker, owner in list(self.shutting_down.items()):
            if broker in live and await self.session.owner(layout.broker_path(broker)) == owner:
                continue
            del self.shutting_down[broker]
            self._halted.pop(broker, None)

    def _halt(
        self, epoch: int, broker: int, untold: set[tuple[str, int]]
    ) -> tuple[Request, int, Callable[[], None]] | None:
        """StopReplica (the log kept) for the partitions a broker in controlled shutdown
        follows: it stops fetching, so that no leader takes it back into the ISR."""
        follows = {
            (name, p)
            for name, view in self.topics.items()
            for p, s in view.states.items()
            if broker in view.replicas[p] and s.leader != broker
        }
        untold -= follows  # stopped instead of told
        todo = follows - self._halted.get(broker, set())
        if not todo:
            return None
        S = StopReplicaRequest.TopicState
        by_topic: dict[str, list[int]] = {}
        for name, p in sorted(todo):
            by_topic.setdefault(name, []).append(p)
        request = StopReplicaRequest(
            controller_id=self.broker_id,
            controller_epoch=epoch,
            topic_states=[
                S(
                    topic_name=name,
                    partition_states=[
                        S.PartitionState(
                            partition_index=p,
                            leader_epoch=self.topics[name].states[p].leader_epoch,
                            delete_partition=False,
                        )
                        for p in ps
                    ],
                )
                for name, ps in by_topic.items()
            ],
        )
        halted = self._halted.setdefault(broker, set())
        return request, STOP_REPLICA_VERSION, functools.partial(halted.update, todo)

    async def _registrations(self, ids: list[str]) -> dict[int, layout.Registration]:
        """The registered brokers, less one registered again under a new session since
        the last round (restarted within its session timeout: Kafka's "bounced" broker,
        told by its broker epoch). It counts as dead for this round, so its partitions get
        leaders and ISRs without it, and as joined in the next, at once (``_poked``)."""
        live: dict[int, layout.Registration] = {}
        self._bounced = set()
        for broker in map(int, ids):
            found = await self.session.get(layout.broker_path(broker))
            owner = await self.session.owner(layout.broker_path(broker))
            if found is None or owner is None:
                continue
            if broker in self.live and self._owners.get(broker, owner) != owner:
                log.info("broker %d registered again: out for a round, then told all", broker)
                self._poked.set()
                self._bounced.add(broker)
            else:
                live[broker] = layout.Registration.decode(broker, found[0])
            self._owners[broker] = owner
        return live

    async def _topic(self, name: str) -> tuple[TopicView | None, Callable[[], Awaitable[None]]]:
        """The topic as last read if nothing can have changed it since (the controller's
        own writes keep the view current), else as ZooKeeper has it now."""
        path = layout.topic_path(name)
        known = self._read.get(name)
        fresh_enough = known is not None and name not in self._stale
        if known is not None and fresh_enough and self.session.data_watch(path) is known[1]:
            return known[0], known[2]
        self._stale.discard(name)
        fresh, changed = await self._load_topic(name)
        watch = self.session.data_watch(path)
        if fresh is not None and watch is not None:
            self._read[name] = (fresh, watch, changed)
        else:
            self._read.pop(name, None)
        return fresh, changed

    async def _load_topic(
        self, name: str
    ) -> tuple[TopicView | None, Callable[[], Awaitable[None]]]:
        """The topic as ZooKeeper has it, and a function that returns once its assignment
        changes."""
        found, changed = await self.session.watch_data(layout.topic_path(name))
        if found is None:
            return None, changed
        topic_id, replicas = layout.assignment_of(found[0])
        adding, removing = layout.reassignment_of(found[0])
        view = TopicView(topic_id, replicas, adding=adding, removing=removing, version=found[1])
        for p in replicas:
            state = await self.session.get(layout.partition_state_path(name, p))
            if state is not None:
                view.states[p] = layout.LeaderIsr.decode(state[0])
                view.versions[p] = state[1]
        return view, changed

    async def _write_state(
        self, name: str, partition: int, view: TopicView, new: layout.LeaderIsr
    ) -> bool:
        """Write the state node, checking its version. False when the node has moved on
        (a leader's ISR change since the round read it: the next round reads it again; or
        another controller's write: this one is deposed and will be cancelled)."""
        path = layout.partition_state_path(name, partition)
        if partition in view.versions:
            try:
                view.versions[partition] = await self.session.set(
                    path, new.encode(), view.versions[partition]
                )
            except BadVersionError:
                log.info("%s changed meanwhile: read again in the next round", path)
                self._stale.add(name)
                return False
        elif await self.session.create(path, new.encode(), makepath=True):
            view.versions[partition] = 0
        else:
            raise RuntimeError(f"{path} was created by another controller")
        view.states[partition] = new
        return True

    def _counted(self) -> None:
        self.updates_sent += 1

    def _leader_and_isr(
        self, epoch: int, broker: int, todo: set[tuple[str, int]]
    ) -> LeaderAndIsrRequest | None:
        topic_states = []
        for name, view in sorted(self.topics.items()):
            states = [
                LeaderAndIsrPartitionState(
                    partition_index=p,
                    controller_epoch=epoch,
                    leader=s.leader,
                    leader_epoch=s.leader_epoch,
                    isr=list(s.isr),
                    partition_epoch=view.versions.get(p, 0),
                    replicas=view.replicas[p],
                    adding_replicas=view.adding.get(p, []),
                    removing_replicas=view.removing.get(p, []),
                )
                for p, s in sorted(view.states.items())
                if broker in view.replicas[p] and (name, p) in todo
            ]
            if states:
                topic_states.append(
                    LeaderAndIsrRequest.TopicState(
                        topic_name=name, topic_id=view.topic_id, partition_states=states
                    )
                )
        if not topic_states:
            return None
        return LeaderAndIsrRequest(
            controller_id=self.broker_id,
            controller_epoch=epoch,
            type=0,
            topic_states=topic_states,
            live_leaders=[],
        )

    def _stop_replica(
        self, epoch: int, broker: int, gone: Mapping[str, TopicView]
    ) -> StopReplicaRequest | None:
        S = StopReplicaRequest.TopicState
        topic_states = [
            S(
                topic_name=name,
                partition_states=[
                    S.PartitionState(partition_index=p, delete_partition=True)
                    for p, replicas in sorted(view.replicas.items())
                    if broker in replicas
                ],
            )
            for name, view in sorted(gone.items())
            if any(broker in r for r in view.replicas.values())
        ]
        if not topic_states:
            return None
        return StopReplicaRequest(
            controller_id=self.broker_id, controller_epoch=epoch, topic_states=topic_states
        )

    def update_metadata(self, epoch: int) -> UpdateMetadataRequest:
        E = UpdateMetadataRequest.Broker.Endpoint
        return UpdateMetadataRequest(
            controller_id=self.broker_id,
            controller_epoch=epoch,
            topic_states=[
                UpdateMetadataRequest.TopicState(
                    topic_name=name,
                    topic_id=view.topic_id,
                    partition_states=[
                        UpdateMetadataPartitionState(
                            partition_index=p,
                            controller_epoch=s.controller_epoch,
                            leader=s.leader,
                            leader_epoch=s.leader_epoch,
                            isr=list(s.isr),
                            zk_version=view.versions.get(p, 0),
                            replicas=view.replicas[p],
                            offline_replicas=[r for r in view.replicas[p] if r not in self.live],
                        )
                        for p, s in sorted(view.states.items())
                    ],
                )
                for name, view in sorted(self.topics.items())
            ],
            live_brokers=[
                UpdateMetadataRequest.Broker(
                    id=b.broker_id,
                    endpoints=[
                        E(
                            host=host,
                            port=port,
                            listener=name,
                            security_protocol=PROTOCOL_IDS.get(b.protocols.get(name, name), 0),
                        )
                        for name, (host, port) in b.endpoints.items()
                        if name != self.control_plane
                    ],
                    rack=b.rack,
                )
                for b in sorted(self.live.values(), key=lambda b: b.broker_id)
            ],
        )

    async def _send_all(
        self,
        sends: list[tuple[int, Request, int, Callable[[], None]]],
        sent: Mapping[int, trio.Event],
    ) -> None:
        """Each broker's requests in order (LeaderAndIsr before UpdateMetadata, as Kafka
        sends them), the brokers side by side; ``done`` once a request is answered,
        ``sent[broker]`` once all of the broker's are."""
        by_broker: dict[int, list[tuple[Request, int, Callable[[], None]]]] = {}
        for broker, request, version, done in sends:
            by_broker.setdefault(broker, []).append((request, version, done))
        async with trio.open_nursery() as nursery:
            for broker, requests in by_broker.items():
                nursery.start_soon(self._tell, self.live[broker], requests, sent[broker])

    async def _tell(
        self,
        broker: layout.Registration,
        requests: list[tuple[Request, int, Callable[[], None]]],
        sent: trio.Event,
    ) -> None:
        """Send ``requests`` to ``broker``, each until it has been answered."""
        await self._tell_each(broker, requests)
        sent.set()

    async def _tell_each(
        self, broker: layout.Registration, requests: list[tuple[Request, int, Callable[[], None]]]
    ) -> None:
        endpoint = broker.endpoints.get(self.control_listener)
        if endpoint is None:
            log.error(
                "broker %d has no %s listener: it cannot be told the cluster's state",
                broker.broker_id,
                self.control_listener,
            )
            return
        address = f"{endpoint[0]}:{endpoint[1]}"
        # One connection for the round's requests to this broker (a TLS and SASL
        # handshake each would cost more than the requests), a new one after a failure.
        client: PeerClient | None = None
        try:
            for request, version, done in requests:
                while True:
                    try:
                        with trio.fail_after(SEND_TIMEOUT_S):
                            if client is None:
                                client_id = f"controller-{self.broker_id}"
                                client = await PeerClient.connect(address, client_id, self.peers)
                            response = await client.request(request, version)
                    except (OSError, trio.BrokenResourceError, trio.TooSlowError) as exc:
                        if client is not None:
                            await _close(client)
                            client = None
                        failed = (
                            log.error if isinstance(exc, PeerAuthenticationError) else log.warning
                        )
                        failed("%s to broker %d: %s", type(request).__name__, broker.broker_id, exc)
                        await trio.sleep(RETRY_S)
                        continue
                    if getattr(response, "error_code", 0):
                        log.warning(
                            "broker %d refused %s: error %d",
                            broker.broker_id,
                            type(request).__name__,
                            response.error_code,
                        )
                    done()  # answered: a refusal is not sent again (its epoch is stale)
                    break
        finally:
            if client is not None:
                await _close(client)


async def _close(client: PeerClient) -> None:
    """Close ``client`` even while cancelled, within a send's time (TLS: its close_notify)."""
    with trio.move_on_after(SEND_TIMEOUT_S, shield=True):
        await client.aclose()


def _drop(pending: dict[str, TopicView], names: list[str]) -> None:
    for name in names:
        pending.pop(name, None)


async def _first_of(*waits: Callable[[], Awaitable[None]]) -> None:
    """Return when the first of ``waits`` returns."""
    async with trio.open_nursery() as nursery:

        async def one(wait: Callable[[], Awaitable[None]]) -> None:
            await wait()
            nursery.cancel_scope.cancel()

        for wait in waits:
            nursery.start_soon(one, wait)
