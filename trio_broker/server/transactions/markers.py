"""Transaction markers on their way from the coordinator to the partitions.

Owns: ``Markers`` (what the coordinator writes markers through) and ``MarkerWriter``,
the coordinator's side of Kafka's ``TransactionMarkerChannelManager``: each marker's
partitions are split by their current leader (this broker's cluster view, as the
controller last described it); those this broker leads are written through the broker's
own ``write_txn_markers`` (the partition leader's side, as WriteTxnMarkers serves it; it
has its own deadline), the others are sent to their leaders in a WriteTxnMarkers request
(``remote``). Every leader is written to at once, not one after another. A send to
another broker is given up (its partitions answered NOT_LEADER_OR_FOLLOWER, which the
coordinator retries with the cluster view of that moment) when no answer came within
``timeout_s`` (``request.timeout.ms``) or as soon as the cluster view names another
leader for one of its partitions: a leader that is paused, cut off or deposed does not
hold the transaction up. A partition without a known leader is answered
NOT_LEADER_OR_FOLLOWER at once. Must not decide what an answer means for the
transaction (the coordinator does) nor hold connections (``marker_channel`` does).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol

import trio

from ...apis.services import TxnMarker
from ...protocol.errors import ErrorCode

log = logging.getLogger("trio_broker.transactions")

TopicPartition = tuple[str, int]
Results = list[dict[TopicPartition, int]]

# How often a send in flight looks at the cluster view for a moved leadership (the
# metadata cache has no change event; a look is a few dict reads).
WATCH_S = 0.05


class Markers(Protocol):
    async def write(self, markers: Sequence[TxnMarker]) -> Results:
        """Each marker's error code per partition (0: written and replicated)."""
        ...


WriteMarkers = Callable[[Sequence[TxnMarker]], Awaitable[Results]]
SendMarkers = Callable[[int, Sequence[TxnMarker]], Awaitable[Results]]


class MarkerWriter:
    def __init__(
        self,
        broker_id: int,
        leader_of: Callable[[str, int], int | None],
        local: WriteMarkers,
        remote: SendMarkers | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.broker_id = broker_id
        self.leader_of = leader_of
        self.local = local
        self.remote = remote
        self.timeout_s = timeout_s  # request.timeout.ms: a send to another leader
        self.written = 0
        self.given_up = {"timeout": 0, "moved": 0}  # sends abandoned, by reason

    async def write(self, markers: Sequence[TxnMarker]) -> Results:
        results: Results = [{} for _ in markers]
        by_leader: dict[int, list[tuple[int, TxnMarker]]] = {}
        for i, marker in enumerate(markers):
            split: dict[int, list[TopicPartition]] = {}
            for tp in marker.partitions:
                leader = self.leader_of(*tp)
                if (
                    leader is None
                    or leader < 0
                    or (leader != self.broker_id and self.remote is None)
                ):
                    results[i][tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    split.setdefault(leader, []).append(tp)
            for leader, tps in split.items():
                by_leader.setdefault(leader, []).append((i, replace(marker, partitions=tps)))
        async with trio.open_nursery() as nursery:
            for leader, items in by_leader.items():
                nursery.start_soon(self._write_to, leader, items, results)
        self.written += sum(1 for r in results for code in r.values() if code == 0)
        return results

    async def _write_to(
        self, leader: int, items: list[tuple[int, TxnMarker]], results: Results
    ) -> None:
        sub = [m for _, m in items]
        answers: Results | None = None
        try:
            if leader == self.broker_id:
                answers = await self.local(sub)
            else:
                answers = await self._send(leader, sub)
        except (OSError, ConnectionError):  # the leader unreachable: retried
            answers = None
        if answers is None:
            lost = ErrorCode.NOT_LEADER_OR_FOLLOWER
            answers = [dict.fromkeys(m.partitions, lost) for m in sub]
        for (i, _), answer in zip(items, answers, strict=True):
            results[i].update(answer)

    async def _send(self, leader: int, markers: Sequence[TxnMarker]) -> Results | None:
        """The leader's answers; None when it took longer than ``timeout_s`` or the
        leadership of one of the partitions moved meanwhile."""
        assert self.remote is not None
        remote = self.remote
        partitions = [tp for m in markers for tp in m.partitions]
        answers: Results | None = None
        reason = "timeout"

        async def send(cancel: trio.CancelScope) -> None:
            nonlocal answers
            with trio.move_on_after(self.timeout_s):
                answers = await remote(leader, markers)
            cancel.cancel()

        async def watch(cancel: trio.CancelScope) -> None:
            nonlocal reason
            while all(self.leader_of(*tp) == leader for tp in partitions):
                await trio.sleep(WATCH_S)
            reason = "moved"
            cancel.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send, nursery.cancel_scope)
            nursery.start_soon(watch, nursery.cancel_scope)
        if answers is None:
            self.given_up[reason] += 1
            log.warning(
                "markers to broker %d given up (%s): sent again to the current leaders",
                leader,
                "no answer within request.timeout.ms" if reason == "timeout" else "leader moved",
            )
        return answers
