"""WriteTxnMarkers to the other brokers: the coordinator's side of Kafka's
``TransactionMarkerChannelManager``; and AddPartitionsToTxn to a transaction's coordinator,
the partition leaders' side of Kafka's ``AddPartitionsToTxnManager`` (``add_partitions``).

Owns: ``MarkerChannel``, one connection per broker asked (kept between requests and
opened again after a failure) on the inter-broker listener, with its TLS and SASL (the
followers' ``PeerListener``), within ``request.timeout.ms`` (``timeout_s``). Requests
to one leader go one at a time over its connection; a leader that cannot be reached, or
a connection that breaks, answers every partition NOT_LEADER_OR_FOLLOWER, which the
coordinator retries once the cluster view has moved on. A request its caller gives up
(``MarkerWriter``: the leadership moved) drops the connection, whose next answer would
belong to that request. A coordinator that cannot be reached answers
COORDINATOR_NOT_AVAILABLE for the partitions a leader asked to add.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import trio

from ...apis.services import TxnMarker
from ...network.peer_client import PeerClient, PeerListener
from ...protocol.errors import ErrorCode
from ...protocol.messages.transactions import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from ...protocol.messages.txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from .markers import Results

log = logging.getLogger("trio_broker.transactions")

VERSION = 1
ADD_VERSION = 5  # AddPartitionsToTxn's batched form, for brokers (verify_only false: add)
TIMEOUT_S = 30.0  # Kafka's request.timeout.ms default (the broker's key sets it)
_LOST = (OSError, ConnectionError, trio.TooSlowError, trio.BrokenResourceError)


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
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.broker_id = broker_id
        self.timeout_s = timeout_s
        self.address_of = address_of  # a broker's inter-broker endpoint, host:port
        self.listener = listener
        self._clients: dict[int, PeerClient] = {}
        self._locks: dict[int, trio.Lock] = {}
        self.requests = 0
        self.failures = 0

    async def send(self, leader: int, markers: Sequence[TxnMarker]) -> Results:
        try:
            response = await self._call(leader, request_of(markers), VERSION)
        except _LOST as e:
            log.warning("markers to broker %d not sent: %s", leader, e or type(e).__name__)
            lost = ErrorCode.NOT_LEADER_OR_FOLLOWER
            return [dict.fromkeys(m.partitions, lost) for m in markers]
        return results_of(markers, response)

    async def add_partitions(
        self,
        coordinator: int,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], int]:
        """The partitions added to a transaction by its coordinator on another broker
        (each one's error code)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        Transaction = AddPartitionsToTxnRequest.Transaction
        request = AddPartitionsToTxnRequest(
            transactions=[
                Transaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    topics=[
                        AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()
                    ],
                )
            ]
        )
        try:
            response = await self._call(coordinator, request, ADD_VERSION)
        except _LOST as e:
            log.warning("partitions not added at broker %d: %s", coordinator, e or type(e).__name__)
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        got = {
            (t.name, p.partition_index): int(p.partition_error_code)
            for r in response.results_by_transaction
            for t in r.topic_results
            for p in t.results_by_partition
        }
        top = int(response.error_code) or ErrorCode.UNKNOWN_SERVER_ERROR
        return {tp: got.get(tp, top) for tp in partitions}

    async def _call(self, broker: int, request: Any, version: int) -> Any:
        """One request to ``broker``, one at a time over its connection; a failure drops
        the connection (counted) and raises."""
        lock = self._locks.setdefault(broker, trio.Lock())
        async with lock:
            try:
                with trio.fail_after(self.timeout_s):
                    client = await self._client(broker)
                    response = await client.request(request, version)
            except _LOST:
                self.failures += 1
                await self._drop(broker)
                raise
            except trio.Cancelled:  # given up by the caller: the answer would come late
                await self._drop(broker)
                raise
            self.requests += 1
            return response

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
