"""The transaction coordinator's clock-driven duties and its restart, on trio's mock clock
and an in-memory ``__transaction_state``: a transaction past its timeout is aborted with
the producer's epoch bumped; an id idle past ``transactional.id.expiration.ms`` is
forgotten (a tombstone; the id starts over with a new producer id); a commit decided
before a crash (PREPARE_COMMIT, no markers yet) is completed by the next coordinator
reading the topic back; and none of the timeouts follows a jump of the wall clock. The
markers go to a recorder standing in for the partitions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count

import trio

from trio_broker.apis.services import TxnMarker
from trio_broker.protocol.errors import ErrorCode
from trio_broker.server.transactions import TransactionCoordinator, TxnConfig
from trio_broker.server.transactions.markers import Results
from trio_broker.server.transactions.state import TxnState, metadata_of

from .groups.harness import MemoryTopic, clock_ms

CONFIG = TxnConfig(
    max_timeout_ms=900_000, id_expiration_ms=60_000, abort_interval_s=1, expire_interval_s=10
)


class Partitions:
    """The partitions' side of WriteTxnMarkers: records every marker; ``refuse`` answers
    NOT_LEADER_OR_FOLLOWER (a leader away) instead of writing."""

    def __init__(self) -> None:
        self.markers: list[TxnMarker] = []
        self.refuse = False

    async def write(self, markers: Sequence[TxnMarker]) -> Results:
        await trio.sleep(0)
        if self.refuse:
            return [dict.fromkeys(m.partitions, ErrorCode.NOT_LEADER_OR_FOLLOWER) for m in markers]
        self.markers.extend(markers)
        return [dict.fromkeys(m.partitions, 0) for m in markers]


def coordinator(
    topic: MemoryTopic, partitions: Partitions, wall_ms: Callable[[], int] = clock_ms
) -> TransactionCoordinator:
    topic.replicated = False  # type: ignore[attr-defined]
    ids = count(100)

    async def new_producer_id() -> int:
        return next(ids)

    return TransactionCoordinator(
        CONFIG,
        topic,
        new_producer_id,
        partitions,
        exists=lambda: True,
        now_ms=wall_ms,
    )


def stored_states(topic: MemoryTopic) -> list[TxnState | None]:
    out: list[TxnState | None] = []
    for r in topic.records():
        assert r.key is not None
        _, meta = metadata_of(r.key, r.value)
        out.append(None if meta is None else meta.state)
    return out


async def test_a_timed_out_transaction_is_aborted_and_an_idle_id_expires(
    autojump_clock: trio.testing.MockClock,
) -> None:
    topic, partitions = MemoryTopic(1), Partitions()
    c = coordinator(topic, partitions)
    async with trio.open_nursery() as nursery:
        await nursery.start(c.run)
        error, pid, epoch = await c.init_producer_id("app", 5000)
        assert (error, epoch) == (0, 0)
        assert await c.add_partitions("app", pid, 0, [("t", 0), ("t", 1)]) == 0

        await trio.sleep(7)  # past its 5 s timeout (checked every second)
        meta = c.txns["app"]
        assert meta.state is TxnState.COMPLETE_ABORT and meta.producer_epoch == 1
        (marker,) = partitions.markers
        assert (marker.commit, marker.producer_epoch, sorted(marker.partitions)) == (
            False,
            1,
            [("t", 0), ("t", 1)],
        )
        assert c.aborts["timeout"] == 1
        # the fenced producer's next call is refused
        assert await c.end_txn("app", pid, 0, True) == ErrorCode.PRODUCER_FENCED

        await trio.sleep(80)  # idle past transactional.id.expiration.ms (60 s)
        assert "app" not in c.txns and c.expired_ids == 1
        assert stored_states(topic)[-1] is None  # the tombstone
        error, new_pid, epoch = await c.init_producer_id("app", 5000)
        assert (error, epoch) == (0, 0) and new_pid != pid
        nursery.cancel_scope.cancel()


async def test_a_commit_decided_before_a_crash_is_completed_on_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    topic, partitions = MemoryTopic(1), Partitions()
    first = coordinator(topic, partitions)
    async with trio.open_nursery() as nursery:
        await nursery.start(first.run)
        _, pid, epoch = await first.init_producer_id("app", 60_000)
        await first.add_partitions("app", pid, epoch, [("t", 0)])
        partitions.refuse = True  # the markers cannot be written: the crash comes first
        with trio.move_on_after(1):  # EndTxn waits for completion; the client gives up
            await first.end_txn("app", pid, epoch, True)
        assert first.txns["app"].state is TxnState.PREPARE_COMMIT
        first.stop()
    assert stored_states(topic)[-1] is TxnState.PREPARE_COMMIT

    partitions.refuse = False
    again = coordinator(topic, partitions)
    async with trio.open_nursery() as nursery:
        await nursery.start(again.run)
        await trio.sleep(1)
        assert again.txns["app"].state is TxnState.COMPLETE_COMMIT
        (marker,) = partitions.markers
        assert (marker.commit, marker.producer_id, list(marker.partitions)) == (
            True,
            pid,
            [("t", 0)],
        )
        # and a retry of the EndTxn the first coordinator never answered: done already
        assert await again.end_txn("app", pid, epoch, True) == 0
        nursery.cancel_scope.cancel()
    assert stored_states(topic)[-1] is TxnState.COMPLETE_COMMIT


async def test_transaction_version_2_ends_bump_the_epoch_and_survive_a_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """KIP-890 part 2: each EndTxn v5 bumps the epoch (the markers carry the new one), a
    retry from before the bump gets the same answer, an abort with nothing added still
    bumps it, a commit with nothing added is refused; an exhausted epoch moves the producer
    to a new id at epoch 0; the version and the next id are in ``__transaction_state``."""
    topic, partitions = MemoryTopic(1), Partitions()
    c = coordinator(topic, partitions)
    async with trio.open_nursery() as nursery:
        await nursery.start(c.run)
        _, pid, epoch = await c.init_producer_id("app", 60_000)
        assert await c.add_partitions("app", pid, epoch, [("t", 0)]) == 0  # a leader's
        assert await c.end_transaction("app", pid, epoch, True, bump=True) == (0, pid, 1)
        (marker,) = partitions.markers
        assert (marker.commit, marker.producer_epoch) == (True, 1)  # the bumped epoch
        # the answer was lost: the retry, from epoch 0, gets it again
        assert await c.end_transaction("app", pid, 0, True, bump=True) == (0, pid, 1)
        assert await c.end_transaction("app", pid, 0, False, bump=True) == (
            ErrorCode.PRODUCER_FENCED,
            -1,
            -1,
        )
        # a late batch of epoch 0 cannot join the next transaction
        assert await c.add_partitions("app", pid, 0, [("t", 1)]) == ErrorCode.PRODUCER_FENCED
        assert await c.end_transaction("app", pid, 1, False, bump=True) == (0, pid, 2)
        assert len(partitions.markers) == 1  # nothing was added: no markers
        assert await c.end_transaction("app", pid, 2, True, bump=True) == (
            ErrorCode.INVALID_TXN_STATE,
            -1,
            -1,
        )

        # the epoch runs out: the end moves the producer to a new id
        c.txns["app"] = c.txns["app"].moved(producer_epoch=2**15 - 2)
        assert await c.add_partitions("app", pid, 2**15 - 2, [("t", 0)]) == 0
        error, new_pid, new_epoch = await c.end_transaction("app", pid, 2**15 - 2, True, bump=True)
        assert (error, new_epoch) == (0, 0) and new_pid != pid
        assert partitions.markers[-1].producer_id == pid
        assert partitions.markers[-1].producer_epoch == 2**15 - 1
        assert await c.end_transaction("app", pid, 2**15 - 2, True, bump=True) == (
            0,
            new_pid,
            0,
        )
        meta = c.txns["app"]
        assert (meta.producer_id, meta.producer_epoch, meta.client_tv) == (new_pid, 0, 2)
        c.stop()

    again = coordinator(topic, partitions)
    async with trio.open_nursery() as nursery:
        await nursery.start(again.run)
        meta = again.txns["app"]
        assert (meta.producer_id, meta.producer_epoch, meta.client_tv) == (new_pid, 0, 2)
        assert meta.state is TxnState.COMPLETE_COMMIT
        # the new id goes on: its first transaction ends at epoch 1
        assert await again.add_partitions("app", new_pid, 0, [("t", 0)]) == 0
        assert await again.end_transaction("app", new_pid, 0, True, bump=True) == (0, new_pid, 1)
        nursery.cancel_scope.cancel()


async def test_a_jump_of_the_wall_clock_times_out_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The coordinator's wall clock jumps two days ahead (past the transaction's timeout
    and the id's expiration): the open transaction goes on and commits, and the id stays.
    Past the timeout on the monotonic clock, a transaction is still aborted; and a second
    coordinator that loads a transaction from the log credits the wall-clock age it has
    then, once."""
    jump = [0]
    topic, partitions = MemoryTopic(1), Partitions()
    c = coordinator(topic, partitions, lambda: clock_ms() + jump[0])
    async with trio.open_nursery() as nursery:
        await nursery.start(c.run)
        _, pid, epoch = await c.init_producer_id("app", 5000)
        assert await c.add_partitions("app", pid, epoch, [("t", 0)]) == 0
        await trio.sleep(2)
        jump[0] = 2 * 86_400_000  # two days ahead
        await trio.sleep(2)  # the timeout check ran twice since
        assert c.txns["app"].state is TxnState.ONGOING and c.aborts["timeout"] == 0
        assert await c.end_txn("app", pid, epoch, True) == 0
        await trio.sleep(11)  # the idle-id check ran: 15 s idle, not two days
        assert "app" in c.txns and c.expired_ids == 0

        assert await c.add_partitions("app", pid, epoch, [("t", 0)]) == 0
        await trio.sleep(7)  # past its 5 s timeout on the monotonic clock
        assert c.aborts["timeout"] == 1
        jump[0] = 0  # and back
        _, pid, epoch = await c.init_producer_id("app", 5000)
        assert await c.add_partitions("app", pid, epoch, [("t", 0)]) == 0
        nursery.cancel_scope.cancel()

    # the open transaction, loaded by a coordinator whose wall clock is 4 s past its start
    # (within its 5 s): aborted about a second later by the monotonic count, not at once
    jump[0] = 4000
    second = coordinator(topic, partitions, lambda: clock_ms() + jump[0])
    async with trio.open_nursery() as nursery:
        await nursery.start(second.run)
        assert second.txns["app"].state is TxnState.ONGOING
        await trio.sleep(0.5)
        assert second.txns["app"].state is TxnState.ONGOING
        await trio.sleep(2.5)
        assert second.txns["app"].state is TxnState.COMPLETE_ABORT
        nursery.cancel_scope.cancel()
