"""A leader's ISR changes, written to ZooKeeper as Kafka's ZooKeeper-era leaders write them.

Owns: ``ZkIsrWriter`` (``replication.leader.IsrWriter``): the partition's state node is replaced
(leader, leader epoch, new ISR, the controller epoch this broker last heard) only if it is
still at the version the leader knows — a controller that has meanwhile moved the
partition wrote a newer one, and the leader's change is refused (None) until that
controller's LeaderAndIsr arrives. A written change leaves a sequential node under
``/isr_change_notification`` so that the controller re-reads the partition and tells every
broker (UpdateMetadata).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.exceptions import BadVersionError, NoNodeError

from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker.replication")


class ZkIsrWriter:
    def __init__(
        self, session: ZkSession, broker_id: int, controller_epoch: Callable[[], int]
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        self._controller_epoch = controller_epoch

    async def __call__(
        self, topic: str, partition: int, leader_epoch: int, isr: tuple[int, ...], version: int
    ) -> int | None:
        state = layout.LeaderIsr(self.broker_id, leader_epoch, isr, self._controller_epoch())
        path = layout.partition_state_path(topic, partition)
        try:
            new_version = await self.session.set(path, state.encode(), version)
        except (BadVersionError, NoNodeError):
            return None
        await self.session.create_sequential(
            layout.ISR_CHANGE_PREFIX, layout.isr_change_data([(topic, partition)])
        )
        return new_version
