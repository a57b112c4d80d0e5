"""WriteTxnMarkers to the other brokers: the coordinator's side of Kafka's
``TransactionMarkerChannelManager``.

Owns: ``MarkerChannel``, one connection per partition leader (kept between requests and
opened again after a failure) on the inter-broker listener, with its TLS and SASL (the
followers' ``PeerListener``), within ``request.timeout.ms``-like ``TIMEOUT_S``. Requests
to one leader go one at a time over its connection; a leader that cannot be reached, or
a connection that breaks, answers every partition NOT_LEADER_OR_FOLLOWER, which the
coordinator retries once the cluster view has moved on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import trio

from ...apis.services import TxnMarker
from ...network.peer_client import PeerClient, PeerListener
from ...protocol.errors import ErrorCode
from ...protocol.messages.txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from .markers import Results

log = logging.getLogger("trio_broker.transactions")

VERSION = 1
TIMEOUT_S = 30.0  # Kafka's request.timeout.ms default


def request_of(markers: Sequence[TxnMarker]) -> WriteTxnMarkersRequest:
    Marker = WriteTxnMarkersRequest.WritableTxnMarker
    out = []
    for m in markers:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in m.partitions:
            by_topic.setdefault(topic, []).append(partition)
        out.append(
            Marker(
                producer_id=m.producer_id,
                producer_epoch=m.producer_epoch,
                transaction_result=m.commit,
                topics=[
                    Marker.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()
                ],
                coordinator_epoch=m.coordinator_epoch,
            )
        )
    return WriteTxnMarkersRequest(markers=out)


def results_of(markers: Sequence[TxnMarker], response: WriteTxnMarkersResponse) -> Results:
    """Each marker's answers (a partition the leader did not answer: NOT_LEADER)."""
    results: Results = []
    answers = list(response.markers)
    for i, m in enumerate(markers):
        got: dict[tuple[str, int], int] = {}
        if i < len(answers) and answers[i].producer_id == m.producer_id:
            for t in answers[i].topics:
                for p in t.partitions:
                    got[(t.name, p.partition_index)] = int(p.error_code)
        results.append({tp: got.get(tp, ErrorCode.NOT_LEADER_OR_FOLLOWER) for tp in m.partitions})
    return results


class MarkerChannel:
    def __init__(
        self,
        broker_id: int,
        address_of: Callable[[int], str | None],
        listener: Callable[[], PeerListener],
    ) -> None:
        self.broker_id = broker_id
        self.address_of = address_of  # a broker's inter-broker endpoint, host:port
        self.listener = listener
        self._clients: dict[int, PeerClient] = {}
        self._locks: dict[int, trio.Lock] = {}
        self.requests = 0
        self.failures = 0

    async def send(self, leader: int, markers: Sequence[TxnMarker]) -> Results:
        lock = self._locks.setdefault(leader, trio.Lock())
        async with lock:
            try:
                with trio.fail_after(TIMEOUT_S):
                    client = await self._client(leader)
                    response = await client.request(request_of(markers), VERSION)
                self.requests += 1
                return results_of(markers, response)
            except (OSError, ConnectionError, trio.TooSlowError, trio.BrokenResourceError) as e:
                self.failures += 1
                log.warning("markers to broker %d not sent: %s", leader, e or type(e).__name__)
                await self._drop(leader)
                lost = ErrorCode.NOT_LEADER_OR_FOLLOWER
                return [dict.fromkeys(m.partitions, lost) for m in markers]

    async def _client(self, leader: int) -> PeerClient:
        client = self._clients.get(leader)
        if client is None:
            address = self.address_of(leader)
            if address is None:
                raise ConnectionError(f"broker {leader} has no inter-broker endpoint known")
            client = await PeerClient.connect(
                address, f"txn-coordinator-{self.broker_id}", self.listener()
            )
            self._clients[leader] = client
        return client

    async def _drop(self, leader: int) -> None:
        client = self._clients.pop(leader, None)
        if client is not None:
            with trio.move_on_after(1) as cleanup:
                cleanup.shield = True
                await client.aclose()

    async def aclose(self) -> None:
        for leader in list(self._clients):
            await self._drop(leader)
