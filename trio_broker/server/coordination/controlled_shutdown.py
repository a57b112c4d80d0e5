"""The stopping broker's side of a controlled shutdown (Kafka's
``KafkaServer.controlledShutdown``).

Owns: ``request_controlled_shutdown``. Before its listeners stop, a broker of a ZooKeeper
cluster (``controlled.shutdown.enable``) asks the controller (``/controller``, reached on
its control-plane listener, else its inter-broker one, as registered in ``/brokers/ids``,
with that listener's TLS and SASL) to move its leaderships to
other in-sync replicas: ControlledShutdown v3. The controller answers once it has done so,
with the partitions it could not move. An attempt that fails (no controller, unreachable,
an error, partitions remaining) is made again after ``controlled.shutdown.retry.backoff.ms``,
up to ``controlled.shutdown.max.retries`` attempts in all; then the broker stops anyway.
It never raises: shutdown goes on whatever happens here.
"""

from __future__ import annotations

import logging

import trio
from kazoo.exceptions import KazooException

from ...network.peer_client import PeerClient, PeerListener
from ...protocol.errors import ErrorCode
from ...protocol.messages.controller import ControlledShutdownRequest
from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker")

CONTROLLED_SHUTDOWN_VERSION = 3
REQUEST_TIMEOUT_S = 30.0  # Kafka's controller.socket.timeout.ms


async def request_controlled_shutdown(
    session: ZkSession, broker_id: int, listener: PeerListener, retries: int, backoff_s: float
) -> bool:
    """Ask the controller to move this broker's leaderships away; True once it has moved
    them all."""
    for attempt in range(1, retries + 1):
        try:
            with trio.fail_after(REQUEST_TIMEOUT_S):
                outcome = await _attempt(session, broker_id, listener)
        except (
            OSError,
            trio.BrokenResourceError,
            trio.TooSlowError,
            KazooException,
            ValueError,
        ) as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        if outcome is None:
            log.info("controlled shutdown of broker %d succeeded", broker_id)
            return True
        log.warning("controlled shutdown attempt %d of %d: %s", attempt, retries, outcome)
        if attempt < retries:
            await trio.sleep(backoff_s)
    log.warning("controlled shutdown of broker %d failed: stopping anyway", broker_id)
    return False


async def _attempt(session: ZkSession, broker_id: int, listener: PeerListener) -> str | None:
    """One attempt: None on success, else what went wrong."""
    found = await session.get(layout.CONTROLLER)
    if found is None:
        return "no controller"
    controller = layout.controller_id(found[0])
    registered = await session.get(layout.broker_path(controller))
    if registered is None:
        return f"controller {controller} is not registered"
    endpoints = layout.Registration.decode(controller, registered[0]).endpoints
    endpoint = endpoints.get(listener.name)
    if endpoint is None:
        return f"controller {controller} has no {listener.name} listener"
    address = f"{endpoint[0]}:{endpoint[1]}"
    client = await PeerClient.connect(address, f"broker-{broker_id}", listener)
    try:
        request = ControlledShutdownRequest(broker_id=broker_id, broker_epoch=-1)
        response = await client.request(request, CONTROLLED_SHUTDOWN_VERSION)
    finally:
        await client.aclose()
    if response.error_code != ErrorCode.NONE:
        return f"controller {controller} answered {ErrorCode(response.error_code).name}"
    left = [f"{r.topic_name}-{r.partition_index}" for r in response.remaining_partitions]
    return f"partitions remaining to move: {', '.join(left)}" if left else None
