"""The elected controller's work, first part: every broker learns who is alive.

Owns: ``ZkController``. While this broker is controller (from ``on_controller`` until
``on_resign``), it watches ``/brokers/ids``, reads each live broker's registration, and
sends every live broker an UpdateMetadata with the live brokers' endpoints and this
controller's id and epoch, over the receiver's control-plane listener (as Kafka's
ControllerChannelManager does), again whenever a broker comes or goes. A receiver refuses
a deposed controller's request by its older epoch. A broker that cannot be reached is
retried (``RETRY_S``) until it answers or leaves.

Partition state (leaders, ISR) is not sent yet: receivers keep serving their own logs as
a broker on its own does (issue 18, later parts).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import trio

from ...network.peer_client import PeerClient
from ...protocol.messages.controller import UpdateMetadataRequest
from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker.controller")

UPDATE_METADATA_VERSION = 8
RETRY_S = 1.0
SEND_TIMEOUT_S = 10.0
PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class ZkController:
    def __init__(self, session: ZkSession, broker_id: int, control_listener: str) -> None:
        self.session = session
        self.broker_id = broker_id
        self.control_listener = control_listener
        self.live: dict[int, layout.Registration] = {}
        self.updates_sent = 0

    async def run(self, epoch: int) -> None:
        """Keep every live broker told, until cancelled (this broker resigned)."""
        while True:
            ids, changed = await self.session.watch_children(layout.BROKER_IDS)
            live: dict[int, layout.Registration] = {}
            for name in ids:
                found = await self.session.get(layout.broker_path(int(name)))
                if found is not None:
                    live[int(name)] = layout.Registration.decode(int(name), found[0])
            self.live = live
            log.info("controller (epoch %d): live brokers %s", epoch, sorted(live))
            request = self.update_metadata(epoch, live)
            async with trio.open_nursery() as nursery:
                for broker in live.values():
                    nursery.start_soon(self._tell, broker, request)
                await changed()
                nursery.cancel_scope.cancel()  # the next round tells them the news

    def update_metadata(
        self, epoch: int, live: Mapping[int, layout.Registration]
    ) -> UpdateMetadataRequest:
        E = UpdateMetadataRequest.Broker.Endpoint
        return UpdateMetadataRequest(
            controller_id=self.broker_id,
            controller_epoch=epoch,
            topic_states=[],
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
                for b in sorted(live.values(), key=lambda b: b.broker_id)
            ],
        )

    async def _tell(self, broker: layout.Registration, request: UpdateMetadataRequest) -> None:
        """Send ``request`` to ``broker`` until it has answered."""
        endpoint = broker.endpoints.get(self.control_listener)
        if endpoint is None:
            log.error(
                "broker %d has no %s listener: it cannot be told the cluster's state",
                broker.broker_id,
                self.control_listener,
            )
            return
        address = f"{endpoint[0]}:{endpoint[1]}"
        while True:
            try:
                with trio.fail_after(SEND_TIMEOUT_S):
                    client = await PeerClient.connect(address, f"controller-{self.broker_id}")
                    try:
                        response = await client.request(request, UPDATE_METADATA_VERSION)
                    finally:
                        await client.aclose()
            except (OSError, trio.TooSlowError) as exc:
                log.warning("UpdateMetadata to broker %d: %s", broker.broker_id, exc)
            else:
                if response.error_code == 0:
                    self.updates_sent += 1
                    return
                log.warning(
                    "broker %d refused UpdateMetadata: error %d",
                    broker.broker_id,
                    response.error_code,
                )
            await trio.sleep(RETRY_S)
