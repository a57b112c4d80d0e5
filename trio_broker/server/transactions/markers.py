"""Transaction markers on their way from the coordinator to the partitions.

Owns: ``Markers`` (what the coordinator writes markers through) and ``MarkerWriter``:
each marker's partitions are split by their leader (this broker's cluster view); those
this broker leads are written at once through the broker's own ``write_txn_markers``
(the partition leader's side, as WriteTxnMarkers serves it), the others are sent to their
leaders in a WriteTxnMarkers request (``remote``). A partition without a known leader is
answered NOT_LEADER_OR_FOLLOWER, which the coordinator retries.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol

from ...apis.services import TxnMarker
from ...protocol.errors import ErrorCode

TopicPartition = tuple[str, int]
Results = list[dict[TopicPartition, int]]


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
    ) -> None:
        self.broker_id = broker_id
        self.leader_of = leader_of
        self.local = local
        self.remote = remote
        self.written = 0

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
        for leader, items in by_leader.items():
            sub = [m for _, m in items]
            try:
                if leader == self.broker_id:
                    answers = await self.local(sub)
                else:
                    assert self.remote is not None
                    answers = await self.remote(leader, sub)
            except (OSError, ConnectionError):  # the leader unreachable: retried
                answers = [
                    dict.fromkeys(m.partitions, ErrorCode.NOT_LEADER_OR_FOLLOWER) for m in sub
                ]
            for (i, _), answer in zip(items, answers, strict=True):
                results[i].update(answer)
        self.written += sum(1 for r in results for code in r.values() if code == 0)
        return results
