"""The transaction coordinator as the transaction APIs see it, beside ``BrokerView``.

Owns: the ``TransactionsView`` protocol (``server.transactions`` implements it) and the
plain records it and ``BrokerView.active_producers`` hand out (``TxnDescription``,
``ActiveProducer``). Split from ``apis.services`` to keep that module short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol


@dataclass(frozen=True, slots=True)
class TxnDescription:
    """One transactional id as its coordinator has it (DescribeTransactions,
    ListTransactions, ``GET /v1/transactions``); ``state`` in Kafka's words."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int
    partitions: Sequence[tuple[str, int]]


class ActiveProducer(NamedTuple):
    """A producer a partition keeps state for (DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int  # its open transaction's first offset, -1: none


class TransactionsView(Protocol):
    """The transaction coordinator, as the transaction APIs see it (``server.transactions``).
    Every call answers Kafka's error code (0: done)."""

    async def locate(self, transactional_id: str) -> tuple[int, int, str | None]:
        """FindCoordinator for a transactional id: (broker id, error code, message)."""
        ...

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer starting up."""
        ...

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> int: ...

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], int]: ...

    async def add_offsets(
        self, transactional_id: str, producer_id: int, epoch: int, group_id: str
    ) -> int: ...

    async def add_partitions_for_leader(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], int]:
        """KIP-890 part 2: partitions this broker leads join a producer's transaction at
        its coordinator (here or elsewhere), as their transactional batches arrive."""
        ...

    async def add_offsets_for_leader(
        self, transactional_id: str, producer_id: int, epoch: int, group_id: str
    ) -> int:
        """KIP-890 part 2: the group's offsets partition joins (TxnOffsetCommit v5+)."""
        ...

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, bump: bool
    ) -> tuple[int, int, int]:
        """(error, the producer id and epoch to go on with); ``bump``: EndTxn v5's end
        of transaction version 2, which bumps the epoch."""
        ...

    def describe(self, transactional_id: str) -> tuple[int, TxnDescription | None]: ...

    def listing(
        self,
        states: Sequence[str],
        producer_ids: Sequence[int],
        min_duration_ms: int,
        id_pattern: str | None = None,
    ) -> tuple[int, list[str], list[TxnDescription]]:
        """(error, the state filters not known, the ids that pass the filters: the
        states, producer ids, the transaction's age and ``id_pattern``, a regular
        expression the whole id must match; INVALID_REGULAR_EXPRESSION if it is none)."""
        ...
