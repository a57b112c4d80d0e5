"""The elected controller's work: live brokers, topics, partition leaders, and telling
every broker about them.

Owns: ``ZkController``. While this broker is controller (from ``on_controller`` until
``on_resign``), each round it reads ZooKeeper (``/brokers/ids`` and their registrations,
``/brokers/topics`` and every partition's state node) and then, as Kafka's controller:

- gives every partition without a state a leader (its first live replica) and an ISR
  (its live replicas), at leader epoch 0;
- takes a dead follower out of its partitions' ISR, with the next leader epoch;
- moves the leadership of a partition whose leader died to the first live replica of its
  ISR, with the next leader epoch; with none left the partition is offline (leader -1:
  ``unclean.leader.election.enable`` is false) until one of its ISR comes back;
- writes each new state node with a version check (a deposed controller's write fails);
- sends LeaderAndIsr to each live replica of a changed partition (and of every partition
  to a broker that has just (re)joined), StopReplica with delete to the replicas of a
  deleted topic, and UpdateMetadata with the live brokers and every partition to every
  live broker, over the receivers' control-plane listener (``network.PeerClient``);

then waits until a broker or a topic comes or goes, a topic's assignment changes (a data
watch on each ``/brokers/topics/<t>``, as Kafka's: CreatePartitions' new partitions get
leaders and their replicas a LeaderAndIsr at once), or a leader changes an ISR (its
notification under ``/isr_change_notification``: the round reads the state again and
tells every broker). A receiver refuses a deposed
controller's requests by their older epoch; one that cannot be reached is retried
(``RETRY_S``) until it answers or the next round begins.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import trio

from ...network.peer_client import PeerClient
from ...protocol.messages.controller import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from ...protocol.schema import Request
from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker.controller")

LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION = 7, 4, 8
RETRY_S = 1.0
SEND_TIMEOUT_S = 10.0
PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
NO_LEADER = -1


@dataclass
class TopicView:
    """A topic as the controller knows it: assignment and each partition's state."""

    topic_id: uuid.UUID
    replicas: dict[int, list[int]]
    states: dict[int, layout.LeaderIsr] = field(default_factory=dict)
    versions: dict[int, int] = field(default_factory=dict)  # of the state nodes


def elect(
    state: layout.LeaderIsr | None, replicas: list[int], live: Mapping[int, object], epoch: int
) -> layout.LeaderIsr | None:
    """The partition's next state, or None if it stays as it is."""
    if state is None:
        alive = [r for r in replicas if r in live]
        return layout.LeaderIsr(alive[0] if alive else NO_LEADER, 0, tuple(alive), epoch)
    if state.leader in live:
        in_sync = tuple(r for r in state.isr if r in live)
        if in_sync == state.isr:
            return None
        # A follower died: it leaves the ISR at once (acks=all stops waiting for it).
        return layout.LeaderIsr(state.leader, state.leader_epoch + 1, in_sync, epoch)
    candidates = [r for r in state.isr if r in live]
    if not candidates:
        if state.leader == NO_LEADER:
            return None
        return layout.LeaderIsr(NO_LEADER, state.leader_epoch + 1, state.isr, epoch)
    return layout.LeaderIsr(candidates[0], state.leader_epoch + 1, tuple(candidates), epoch)


class ZkController:
    def __init__(self, session: ZkSession, broker_id: int, control_listener: str) -> None:
        self.session = session
        self.broker_id = broker_id
        self.control_listener = control_listener
        self.live: dict[int, layout.Registration] = {}
        self.topics: dict[str, TopicView] = {}
        self.updates_sent = 0

    async def run(self, epoch: int) -> None:
        """Keep the cluster's state and every live broker's view of it, until cancelled
        (this broker resigned)."""
        self.topics, self.live = {}, {}
        # What each broker has yet to be told (kept across rounds until it has answered).
        untold: dict[int, set[tuple[str, int]]] = {}
        unstopped: dict[int, dict[str, TopicView]] = {}
        while True:
            ids, brokers_changed = await self.session.watch_children(layout.BROKER_IDS)
            names, topics_changed = await self.session.watch_children(layout.TOPICS)
            await self.session.ensure_path(layout.ISR_CHANGE_NOTIFICATION)
            notes, isr_changed = await self.session.watch_children(layout.ISR_CHANGE_NOTIFICATION)
            live = await self._registrations(ids)
            joined = [b for b in live if b not in self.live]
            topics: dict[str, TopicView] = {}
            changed: set[tuple[str, int]] = set()
            assignments_changed: list[Callable[[], Awaitable[None]]] = []
            for name in names:
                view, assignment_changed = await self._load_topic(name)
                if view is None:
                    continue  # deleted meanwhile: the next round sees it gone
                assignments_changed.append(assignment_changed)
                for p, replicas in view.replicas.items():
                    new = elect(view.states.get(p), replicas, live, epoch)
                    if new is not None:
                        await self._write_state(name, p, view, new)
                        changed.add((name, p))
                topics[name] = view
            for note in notes:  # every state node was read again just now
                await self.session.delete(f"{layout.ISR_CHANGE_NOTIFICATION}/{note}")
            gone = {n: v for n, v in self.topics.items() if n not in topics}
            self.topics, self.live = topics, live
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
                "controller (epoch %d): brokers %s, %d topics, %d partitions changed",
                epoch,
                sorted(live),
                len(topics),
                len(changed),
            )
            sends: list[tuple[int, Request, int, Callable[[], None]]] = []
            for broker in live:
                todo = set(untold.get(broker, ()))
                lai = self._leader_and_isr(epoch, broker, todo)
                if lai is not None:
                    done = functools.partial(untold[broker].difference_update, todo)
                    sends.append((broker, lai, LEADER_AND_ISR_VERSION, done))
                stopping = dict(unstopped.get(broker, {}))
                stop = self._stop_replica(epoch, broker, stopping)
                if stop is not None:
                    forget = functools.partial(_drop, unstopped[broker], list(stopping))
                    sends.append((broker, stop, STOP_REPLICA_VERSION, forget))
                request = self.update_metadata(epoch)
                sends.append((broker, request, UPDATE_METADATA_VERSION, self._counted))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._send_all, sends)
                await _first_of(brokers_changed, topics_changed, isr_changed, *assignments_changed)
                nursery.cancel_scope.cancel()  # the next round tells them the news

    async def _registrations(self, ids: list[str]) -> dict[int, layout.Registration]:
        live: dict[int, layout.Registration] = {}
        for name in ids:
            found = await self.session.get(layout.broker_path(int(name)))
            if found is not None:
                live[int(name)] = layout.Registration.decode(int(name), found[0])
        return live

    async def _load_topic(
        self, name: str
    ) -> tuple[TopicView | None, Callable[[], Awaitable[None]]]:
        """The topic as ZooKeeper has it, and a function that returns once its assignment
        changes."""
        found, changed = await self.session.watch_data(layout.topic_path(name))
        if found is None:
            return None, changed
        topic_id, replicas = layout.assignment_of(found[0])
        view = TopicView(topic_id, replicas)
        for p in replicas:
            state = await self.session.get(layout.partition_state_path(name, p))
            if state is not None:
                view.states[p] = layout.LeaderIsr.decode(state[0])
                view.versions[p] = state[1]
        return view, changed

    async def _write_state(
        self, name: str, partition: int, view: TopicView, new: layout.LeaderIsr
    ) -> None:
        """Write the state node, checking its version (``BadVersionError``: another
        controller wrote it, so this one is deposed and its round fails)."""
        path = layout.partition_state_path(name, partition)
        if partition in view.versions:
            view.versions[partition] = await self.session.set(
                path, new.encode(), view.versions[partition]
            )
        elif await self.session.create(path, new.encode(), makepath=True):
            view.versions[partition] = 0
        else:
            raise RuntimeError(f"{path} was created by another controller")
        view.states[partition] = new

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
                        if name != self.control_listener
                    ],
                    rack=b.rack,
                )
                for b in sorted(self.live.values(), key=lambda b: b.broker_id)
            ],
        )

    async def _send_all(self, sends: list[tuple[int, Request, int, Callable[[], None]]]) -> None:
        """Each broker's requests in order (LeaderAndIsr before UpdateMetadata, as Kafka
        sends them), the brokers side by side; ``done`` once a request is answered."""
        by_broker: dict[int, list[tuple[Request, int, Callable[[], None]]]] = {}
        for broker, request, version, done in sends:
            by_broker.setdefault(broker, []).append((request, version, done))
        async with trio.open_nursery() as nursery:
            for broker, requests in by_broker.items():
                nursery.start_soon(self._tell, self.live[broker], requests)

    async def _tell(
        self, broker: layout.Registration, requests: list[tuple[Request, int, Callable[[], None]]]
    ) -> None:
        """Send ``requests`` to ``broker``, each until it has been answered."""
        endpoint = broker.endpoints.get(self.control_listener)
        if endpoint is None:
            log.error(
                "broker %d has no %s listener: it cannot be told the cluster's state",
                broker.broker_id,
                self.control_listener,
            )
            return
        address = f"{endpoint[0]}:{endpoint[1]}"
        for request, version, done in requests:
            while True:
                try:
                    with trio.fail_after(SEND_TIMEOUT_S):
                        client = await PeerClient.connect(address, f"controller-{self.broker_id}")
                        try:
                            response = await client.request(request, version)
                        finally:
                            await client.aclose()
                except (OSError, trio.TooSlowError) as exc:
                    log.warning(
                        "%s to broker %d: %s", type(request).__name__, broker.broker_id, exc
                    )
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
