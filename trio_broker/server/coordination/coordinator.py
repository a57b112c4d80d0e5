"""A broker's membership of a ZooKeeper-coordinated cluster: registration and election.

Owns: ``ZkCoordinator``, which, as a ZooKeeper-era Kafka broker does:

- agrees on the cluster id (``/cluster/id``: the first broker writes its own, every later
  one adopts it, and a broker whose data dir belongs to another cluster is refused);
- registers the broker (``/brokers/ids/<id>``, ephemeral: it vanishes with the session);
  an id still held by another live session is refused after the session timeout;
- runs for controller: whoever creates the ephemeral ``/controller`` first is controller,
  bumps ``/controller_epoch`` with a version check (a lost race resigns), and the others
  watch the node and run again when it goes;
- fences itself when its session is lost: it stops being controller at once (``fenced``
  until it has registered again in a new session), since its ephemeral nodes are gone and
  another broker may be elected meanwhile.

The controller's work (topics, leaders, ISR) is not here; ``on_controller`` is told when
this broker becomes controller (with the new epoch) and ``on_resign`` when it stops.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from kazoo.exceptions import BadVersionError, ConnectionLoss, SessionExpiredError

from . import layout
from .session import ZkSession, ZkState

log = logging.getLogger("trio_broker.zookeeper")


class ClusterIdMismatch(RuntimeError):
    """The data dir belongs to another cluster than the one in ZooKeeper."""


class BrokerIdTaken(RuntimeError):
    """Another live broker holds this broker id in ZooKeeper."""


async def _nothing(epoch: int) -> None:
    return None


class ZkCoordinator:
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        registration: Callable[[], layout.Registration],
        *,
        on_controller: Callable[[int], Awaitable[None]] = _nothing,
        on_resign: Callable[[int], Awaitable[None]] = _nothing,
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        self.registration = registration
        self.on_controller = on_controller
        self.on_resign = on_resign
        self.controller_id: int | None = None  # as last seen in /controller
        self.controller_epoch = -1  # this broker's epoch while it is controller
        self.fenced = True  # until registered in the current session
        self.elections_won = 0
        self.registered_at = -float("inf")  # trio time of the current registration
        self._seen = trio.Event()  # set whenever controller_id becomes known

    async def controller_known(self) -> int:
        """The controller's id, once this broker has seen one elected."""
        while self.controller_id is None:
            await self._seen.wait()
        return self.controller_id

    def _saw(self, controller_id: int | None) -> None:
        self.controller_id = controller_id
        if controller_id is not None:
            self._seen.set()
            self._seen = trio.Event()

    @property
    def is_controller(self) -> bool:
        return not self.fenced and self.controller_id == self.broker_id

    # ------------------------------------------------------------- start-up

    async def agree_cluster_id(self, local: str | None, proposed: str) -> str:
        """The cluster's id: ZooKeeper's if it has one, else ``proposed`` (written there).
        ``local`` is the id the data dir holds (None for a new one)."""
        for path in layout.PERSISTENT:
            await self.session.ensure_path(path)
        await self.session.create(layout.CLUSTER_ID, layout.cluster_id_data(local or proposed))
        found = await self.session.get(layout.CLUSTER_ID)
        assert found is not None  # created above or by another broker; never deleted
        cluster_id = layout.cluster_id_of(found[0])
        if local is not None and local != cluster_id:
            raise ClusterIdMismatch(
                f"the data dir belongs to cluster {local}, but ZooKeeper "
                f"({self.session.connect}) holds cluster {cluster_id}"
            )
        return cluster_id

    async def register(self, timeout_s: float) -> None:
        """Create ``/brokers/ids/<id>``; ``BrokerIdTaken`` if another session keeps it
        for longer than ``timeout_s`` (a previous run's session may still be expiring)."""
        path = layout.broker_path(self.broker_id)
        await self.session.ensure_path(layout.BROKER_IDS)
        with trio.move_on_after(timeout_s):
            while not await self.session.create(path, self.registration().encode(), ephemeral=True):
                found = await self.session.get(path)
                if found is not None and await self._own(path):
                    break
                await self.session.wait_for_change(path)
            self.fenced = False
            self.registered_at = trio.current_time()
            log.info("registered as broker %d in ZooKeeper", self.broker_id)
            return
        raise BrokerIdTaken(
            f"broker.id {self.broker_id} is registered in ZooKeeper by another live broker"
        )

    async def _own(self, path: str) -> bool:
        """Whether the ephemeral node at ``path`` belongs to this session."""
        owner = await self.session.owner(path)
        return owner is not None and owner == self.session.session_id

    # -------------------------------------------------------------- election

    async def run(
        self,
        *,
        register_timeout_s: float,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Register, elect, and keep at it through lost sessions, until cancelled."""
        await self.register(register_timeout_s)
        task_status.started()
        while True:
            generation = self.session.sessions
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.through_trouble, self._elect_forever)
                state = await self._until_lost(generation)
                nursery.cancel_scope.cancel()
            await self._fence(state)
            await self.through_trouble(self.register, register_timeout_s)

    async def through_trouble(self, job: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``job`` until it returns, again each time a ZooKeeper call fails for want
        of a connection, once the session is connected again."""
        while True:
            try:
                await job(*args)
                return
            except (ConnectionLoss, SessionExpiredError):
                while self.session.state is not ZkState.CONNECTED:
                    await self.session.state_changed()
                await trio.lowlevel.checkpoint()

    async def _until_lost(self, generation: int) -> ZkState:
        """Wait until the session registered in is over (lost, closed, or replaced)."""
        while self.session.sessions == generation and self.session.state not in (
            ZkState.LOST,
            ZkState.CLOSED,
        ):
            await self.session.state_changed()
        return ZkState.LOST if self.session.state is ZkState.CONNECTED else self.session.state

    async def _fence(self, state: ZkState) -> None:
        was = self.is_controller
        self.fenced = True
        self.controller_id = None
        log.warning("ZooKeeper session %s: broker %d fenced", state.value, self.broker_id)
        if was:
            await self.on_resign(self.controller_epoch)

    async def _elect_forever(self) -> None:
        while True:
            created = await self.session.create(
                layout.CONTROLLER, layout.controller_data(self.broker_id), ephemeral=True
            )
            if created and await self._bump_epoch():
                self._saw(self.broker_id)
                self.elections_won += 1
                log.info(
                    "broker %d is the controller (epoch %d)", self.broker_id, self.controller_epoch
                )
                await self.on_controller(self.controller_epoch)
            else:
                found = await self.session.get(layout.CONTROLLER)
                self._saw(layout.controller_id(found[0]) if found else None)
            await self.session.wait_for_change(layout.CONTROLLER)
            if self.is_controller:  # /controller changed under us: deposed
                await self.on_resign(self.controller_epoch)
            self.controller_id = None

    async def _bump_epoch(self) -> bool:
        """Make the controller epoch one higher; False (and resign) on a lost race."""
        found = await self.session.get(layout.CONTROLLER_EPOCH)
        try:
            if found is None:
                if not await self.session.create(layout.CONTROLLER_EPOCH, b"1"):
                    raise BadVersionError()
                self.controller_epoch = 1
            else:
                epoch = int(found[0]) + 1
                await self.session.set(layout.CONTROLLER_EPOCH, str(epoch).encode(), found[1])
                self.controller_epoch = epoch
        except BadVersionError:
            log.warning("broker %d lost the controller epoch race: resigning", self.broker_id)
            await self.session.delete(layout.CONTROLLER)
            return False
        return True
