"""The broker's membership of a ZooKeeper cluster, when ``zookeeper.connect`` is set.

Owns: ``ZkMembership``, the one object the broker holds for ZooKeeper. In the broker's
life cycle:

- ``join`` (before the stores load): opens the session and agrees on the cluster id (the
  data dirs' id must be the cluster's);
- ``run`` (once the listeners are bound): registers the broker with its endpoints, runs
  for controller, and while elected runs the controller's work (``ZkController``), all
  through lost sessions, until cancelled;
- ``controlled_shutdown`` (on SIGTERM, before the listeners stop): asks the controller to
  move this broker's leaderships away (``controlled_shutdown``);
- ``stop`` and ``close`` (after the listeners have stopped): ends the session, so the registration
  (and the controllership) goes at once rather than after the session timeout.

``watchers`` run beside the registration (the broker's ``ZkConfigChanges``).

``requests`` serves what the controller answers (ControlledShutdown, ElectLeaders) and,
while this broker leads, runs the periodic leader balance.

``controller_id`` is the controller as last seen in ZooKeeper (-1: none known);
``admin_urls`` reads every registered broker's admin API URL from its registration.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable

import trio
from kazoo.exceptions import KazooException

from ...network.peer_client import PeerListener
from ..config import BrokerConfig
from ..datadir import new_cluster_id
from . import layout
from .controlled_shutdown import request_controlled_shutdown
from .controller import RETRY_S, ZkController
from .controller_requests import ControllerRequests
from .coordinator import ZkCoordinator
from .layout import Registration
from .session import ZkSession, ZkState

log = logging.getLogger("trio_broker.controller")


class ZkMembership:
    def __init__(
        self,
        config: BrokerConfig,
        registration: Callable[[], Registration],
        control: PeerListener,
    ) -> None:
        """``control``: the listener the controller tells brokers on (and a stopping broker
        reaches the controller on): the control plane's, else the inter-broker one."""
        self.config = config
        timeout_ms = config["zookeeper.session.timeout.ms"]
        self.session = ZkSession(
            config["zookeeper.connect"],
            session_timeout_ms=timeout_ms,
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"] or timeout_ms,
        )
        # A previous run's registration lasts until its session expires: wait that long.
        self.register_timeout_s = timeout_ms / 1000 + 5
        self.coordinator = ZkCoordinator(
            self.session,
            config.broker_id,
            registration,
            on_controller=self._lead,
            on_resign=self._resign,
        )

        # A controller that registered less than a session timeout ago waits (at most
        # until then) for the brokers registered before it (``elections.held``).
        def grace() -> float:
            until = self.coordinator.registered_at + timeout_ms / 1000
            return max(0.0, until - trio.current_time())

        self.controller = ZkController(
            self.session, config.broker_id, control, config.control_plane_listener_name, grace
        )
        balance = (
            config["auto.leader.rebalance.enable"],
            float(config["leader.imbalance.check.interval.seconds"]),
            config["leader.imbalance.per.broker.percentage"],
        )
        self.requests = ControllerRequests(self.controller, tuple, balance)
        self._nursery: trio.Nursery | None = None
        # Watchers of ZooKeeper the broker adds (the topic configs'), run beside the
        # registration until ``stop``.
        self.watchers: list[Callable[[], Awaitable[None]]] = []
        self._leading = trio.CancelScope()
        self._running = trio.CancelScope()

    @property
    def controller_id(self) -> int:
        known = self.coordinator.controller_id
        return -1 if known is None or self.coordinator.fenced else known

    async def admin_urls(self) -> dict[int, str | None]:
        """Each registered broker's admin API URL, as its ``/brokers/ids/<id>`` says
        (None: it names none); {} while the session is not connected (a read would wait
        for it) or when ZooKeeper fails the read."""
        if self.session.state is not ZkState.CONNECTED:
            return {}
        out: dict[int, str | None] = {}
        try:
            for child in await self.session.children(layout.BROKER_IDS):
                found = await self.session.get(layout.broker_path(int(child)))
                if found is not None:
                    out[int(child)] = Registration.decode(int(child), found[0]).admin
        except KazooException as exc:
            log.warning("cannot read the brokers' registrations: %r", exc)
            return {}
        return out

    async def join(self, local_cluster_id: str | None) -> str:
        """Open the session; the cluster's id (``ClusterIdMismatch`` if the dirs' differs)."""
        await self.session.start()
        return await self.coordinator.agree_cluster_id(
            local_cluster_id, local_cluster_id or new_cluster_id()
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Register (started then), elect and lead, until ``stop``."""
        with self._running:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                run = functools.partial(
                    self.coordinator.run, register_timeout_s=self.register_timeout_s
                )
                await nursery.start(run)
                for watch in self.watchers:
                    nursery.start_soon(watch)
                task_status.started()

    def stop(self) -> None:
        self._running.cancel()

    async def controlled_shutdown(self) -> None:
        """Have the controller move this broker's leaderships away (if enabled), before
        the listeners stop."""
        config = self.config
        if config["controlled.shutdown.enable"] and not self.coordinator.fenced:
            await request_controlled_shutdown(
                self.session,
                config.broker_id,
                self.controller.peers,
                config["controlled.shutdown.max.retries"],
                config["controlled.shutdown.retry.backoff.ms"] / 1000,
            )

    async def _lead(self, epoch: int) -> None:
        assert self._nursery is not None
        self._leading = trio.CancelScope()
        self._nursery.start_soon(self._lead_until_resigned, self._leading, epoch)

    async def _lead_until_resigned(self, scope: trio.CancelScope, epoch: int) -> None:
        with scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.requests.balance_forever)
                while True:  # a failed round is logged and begun again; the broker goes on
                    try:
                        await self.coordinator.through_trouble(self.controller.run, epoch)
                    except Exception:
                        log.exception("the controller's work failed; retrying")
                        await trio.sleep(RETRY_S)

    async def _resign(self, epoch: int) -> None:
        self._leading.cancel()

    async def close(self) -> None:
        await self.session.close()
