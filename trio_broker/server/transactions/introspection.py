"""What the transaction coordinator tells about its ids: DescribeTransactions' and
ListTransactions' answers and the metrics' figures.

Owns: ``describe``, ``listing`` and ``figures``, read-only functions of a
``TransactionCoordinator`` (split from it to keep that module about the state changes). They
change nothing, and never block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...protocol.errors import ErrorCode
from .coordinator import TransactionCoordinator
from .state import TxnMetadata, TxnState


def describe(c: TransactionCoordinator, transactional_id: str) -> tuple[int, TxnMetadata | None]:
    """DescribeTransactions: (error, metadata) of one id."""
    error = c.check(transactional_id)
    if error:
        return error, None
    meta = c.txns.get(transactional_id)
    if meta is None:
        return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
    return ErrorCode.NONE, meta


def listing(
    c: TransactionCoordinator,
    states: Sequence[TxnState],
    producer_ids: Sequence[int],
    min_duration_ms: int,
) -> tuple[int, list[TxnMetadata]]:
    """ListTransactions: the ids the coordinator holds, filtered by state, producer id and
    (when >= 0) how long the transaction has run."""
    if not c.active:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
    if c.ownership.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
    now = c.now_ms()
    found = [
        m
        for m in c.txns.values()
        if (not states or m.state in states)
        and (not producer_ids or m.producer_id in producer_ids)
        and (
            min_duration_ms < 0
            or (m.state is TxnState.ONGOING and now - m.start_ms >= min_duration_ms)
        )
    ]
    return ErrorCode.NONE, found


def figures(c: TransactionCoordinator) -> dict[str, Any]:
    """For the metrics: ids held, transactions ongoing and being completed, commits,
    aborts by reason (the client's EndTxn, the timeout, a new producer fencing the old),
    ids expired."""
    return {
        "transactional_ids": len(c.txns),
        "ongoing": sum(1 for m in c.txns.values() if m.state is TxnState.ONGOING),
        "completing": sum(1 for m in c.txns.values() if m.state.preparing),
        "commits": c.commits,
        "aborts": dict(c.aborts),
        "expired_ids": c.expired_ids,
    }
