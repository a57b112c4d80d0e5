"""The leader's side of replication: its followers' progress, the ISR, the high watermark.

Owns: ``Replication``, which for every partition this broker leads with more than one
replica keeps Kafka's leader state (``Partition.scala``):

- each follower's log end offset, as its last fetch said (a follower's fetch offset is
  what it has), and the last time it was caught up: a fetch at or past the leader's log
  end, or past the end the leader had at the follower's previous fetch;
- the ISR. A follower out of the ISR joins once it has reached the high watermark and the
  start of the leader's epoch; one in it that has not caught up for
  ``replica.lag.time.max.ms`` leaves (checked every half of that). The leader writes an
  ISR change to ZooKeeper with a version check (``IsrWriter``) and uses it only once
  written: a shrink that is not written yet does not advance the high watermark, and a
  write refused for its version (the controller changed the partition) is dropped until
  the controller's LeaderAndIsr comes;
- the high watermark: the smallest log end offset over the ISR (the leader's own
  included), only ever moved up. Parked consumer fetches and acks=all produces are told
  when it moves.

``status`` is the acks=all rule: a produce's records count once the high watermark has
passed them; then NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is smaller than
``min.insync.replicas``. ``enough_replicas`` is the rule before an append
(NOT_ENOUGH_REPLICAS). Everything runs on the event loop and touches only memory, except
the ISR writes (ZooKeeper, awaited in this object's own tasks).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import trio

from ...apis.services import PartitionAssignment
from ...log.partition_log import PartitionLog
from ...protocol.errors import ErrorCode
from ..common import Purgatory

log = logging.getLogger("trio_broker.replication")

Key = tuple[str, int]


class IsrWriter(Protocol):
    def __call__(
        self, topic: str, partition: int, leader_epoch: int, isr: tuple[int, ...], version: int
    ) -> Awaitable[int | None]:
        """Write the partition's new ISR if its state node is still at ``version``;
        the new version, or None if the node has moved on (this leader is stale)."""
        ...


@dataclass
class LeaderState:
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: frozenset[int]
    version: int  # of the partition's state node (LeaderAndIsr's partition epoch)
    epoch_start: int  # the log end offset when this leadership began
    follower_end: dict[int, int] = field(default_factory=dict)
    caught_up: dict[int, float] = field(default_factory=dict)  # monotonic seconds
    end_at_last_fetch: dict[int, int] = field(default_factory=dict)
    writing: bool = False
    # ISR changes made since the leader began: (expansions, shrinks)
    expands: int = 0
    shrinks: int = 0


class Replication:
    def __init__(
        self,
        broker_id: int,
        partition: Callable[[str, int], PartitionLog | None],
        fetch_purgatory: Purgatory,
        produce_purgatory: Purgatory,
        lag_time_max_ms: Callable[[], int],
        min_insync: Callable[[str], int],
    ) -> None:
        self.broker_id = broker_id
        self._partition = partition
        self.fetch_purgatory = fetch_purgatory
        self.produce_purgatory = produce_purgatory
        self._lag_time_max_ms = lag_time_max_ms
        self._min_insync = min_insync
        self.leaders: dict[Key, LeaderState] = {}
        self.isr_writer: IsrWriter | None = None  # ZooKeeper's, in a ZooKeeper cluster
        self.isr_expands = 0
        self.isr_shrinks = 0
        self._nursery: trio.Nursery | None = None
        self._moved: dict[Key, trio.Event] = {}  # for wait_replicated: news of a partition

    # ------------------------------------------------------------- leadership

    def become_leader(self, a: PartitionAssignment, version: int, log_end: int) -> None:
        """LeaderAndIsr made this broker leader of a partition with followers."""
        key = (a.topic, a.partition)
        now = time.monotonic()
        state = LeaderState(a.leader_epoch, a.replicas, frozenset(a.isr), version, log_end)
        for r in a.replicas:
            if r != self.broker_id:
                state.follower_end[r] = -1
                state.caught_up[r] = now if r in a.isr else 0.0
                state.end_at_last_fetch[r] = -1
        self.leaders[key] = state
        self._advance(key, state)

    def resign(self, topic: str, partition: int) -> None:
        """This broker no longer leads the partition: waiting produces answer now."""
        if self.leaders.pop((topic, partition), None) is not None:
            self._news((topic, partition))

    def _news(self, key: Key) -> None:
        self.produce_purgatory.check(key)
        event = self._moved.pop(key, None)
        if event is not None:
            event.set()

    async def wait_replicated(
        self, topic: str, partition: int, required: int, timeout_s: float
    ) -> int:
        """``status`` once it is known (the broker's own records, as acks=all: the group
        coordinator's commits); REQUEST_TIMED_OUT after ``timeout_s``."""
        key = (topic, partition)
        with trio.move_on_after(timeout_s):
            while (status := self.status(topic, partition, required)) is None:
                await self._moved.setdefault(key, trio.Event()).wait()
            return status
        return ErrorCode.REQUEST_TIMED_OUT

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.leaders if k[0] == topic]:
            self.resign(*key)

    # ---------------------------------------------------------------- queries

    def isr_size(self, topic: str, partition: int) -> int:
        state = self.leaders.get((topic, partition))
        return 1 if state is None else len(state.isr)

    def high_watermark_lagging(self, topic: str, partition: int, high_watermark: int) -> bool:
        """Is this leader's high watermark still below the log end it began its epoch
        with? A new leader learns the high watermark from its followers' fetches, so
        until then offsets acknowledged by the previous leader may lie above it (Kafka's
        KIP-207: ListOffsets answers OFFSET_NOT_AVAILABLE meanwhile)."""
        state = self.leaders.get((topic, partition))
        return state is not None and state.epoch_start > high_watermark

    def enough_replicas(self, topic: str, partition: int, min_insync: int) -> bool:
        """Before an acks=all append: is the ISR at least ``min.insync.replicas``?"""
        return self.isr_size(topic, partition) >= min_insync

    def status(self, topic: str, partition: int, required: int) -> int | None:
        """An acks=all produce whose records end before ``required``: None while it
        waits, else its error code (NONE: replicated to the whole ISR)."""
        plog = self._partition(topic, partition)
        if plog is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        state = self.leaders.get((topic, partition))
        if state is None:  # not (or no longer) a leader with followers
            if plog.replicated:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            return ErrorCode.NONE
        if plog.high_watermark < required:
            return None
        if len(state.isr) < self._min_insync(topic):
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def follower_lag(self) -> dict[Key, dict[int, int]]:
        """Messages each follower is behind the leader's log end (its last fetch offset;
        one that has not fetched yet counts from 0), per led partition."""
        out: dict[Key, dict[int, int]] = {}
        for key, state in self.leaders.items():
            plog = self._partition(*key)
            if plog is not None:
                end = plog.log_end_offset
                out[key] = {r: max(0, end - max(e, 0)) for r, e in state.follower_end.items()}
        return out

    # ---------------------------------------------------------------- changes

    def appended(self, topic: str, partition: int) -> None:
        """The leader's log grew: with a one-member ISR the high watermark follows."""
        state = self.leaders.get((topic, partition))
        if state is not None:
            self._advance((topic, partition), state)

    def follower_fetched(self, topic: str, partition: int, replica: int, offset: int) -> None:
        """A follower fetched from ``offset``: it holds everything before it."""
        key = (topic, partition)
        state = self.leaders.get(key)
        plog = self._partition(topic, partition)
        if state is None or plog is None or replica not in state.follower_end:
            return
        now = time.monotonic()
        end = plog.log_end_offset
        if offset >= end or offset >= state.end_at_last_fetch[replica] >= 0:
            state.caught_up[replica] = now
        state.follower_end[replica] = offset
        state.end_at_last_fetch[replica] = end
        if (
            replica not in state.isr
            and offset >= plog.high_watermark
            and offset >= state.epoch_start
        ):
            self._change_isr(key, state, state.isr | {replica})
        self._advance(key, state)

    def _advance(self, key: Key, state: LeaderState) -> None:
        plog = self._partition(*key)
        if plog is None:
            return
        ends = [plog.log_end_offset]
        ends += [state.follower_end[r] for r in state.isr if r != self.broker_id]
        hw = min(ends)
        if hw > plog.high_watermark and plog.set_high_watermark(hw):
            self.fetch_purgatory.check(key)
            self._news(key)

    # -------------------------------------------------------------------- ISR

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Shrink the ISRs of led partitions every half ``replica.lag.time.max.ms``."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while True:
                lag_s = self._lag_time_max_ms() / 1000
                await trio.sleep(lag_s / 2)
                self.shrink_isrs(time.monotonic(), lag_s)

    def shrink_isrs(self, now: float, lag_s: float) -> None:
        for key, state in list(self.leaders.items()):
            out = {
                r
                for r in state.isr
                if r != self.broker_id and now - state.caught_up.get(r, 0.0) > lag_s
            }
            if out:
                self._change_isr(key, state, state.isr - out)

    def _change_isr(self, key: Key, state: LeaderState, new: frozenset[int]) -> None:
        if state.writing or new == state.isr:
            return
        if self.isr_writer is None or self._nursery is None:
            self._isr_written(key, state, new, state.version)
            return
        state.writing = True
        self._nursery.start_soon(self._write_isr, key, state, new)

    async def _write_isr(self, key: Key, state: LeaderState, new: frozenset[int]) -> None:
        assert self.isr_writer is not None
        isr = tuple(r for r in state.replicas if r in new)
        try:
            version = await self.isr_writer(key[0], key[1], state.leader_epoch, isr, state.version)
        except Exception as exc:  # ZooKeeper unreachable: the next check tries again
            log.warning("%s-%d: ISR change to %s not written: %s", *key, list(isr), exc)
            version = -1
        finally:
            state.writing = False
        if self.leaders.get(key) is not state:
            return  # leadership changed meanwhile
        if version is None:
            log.info(
                "%s-%d: ISR change to %s refused (the partition state moved on); "
                "waiting for the controller",
                *key,
                list(isr),
            )
        elif version >= 0:
            self._isr_written(key, state, new, version)

    def _isr_written(self, key: Key, state: LeaderState, new: frozenset[int], version: int) -> None:
        grew = len(new) > len(state.isr)
        if grew:
            state.expands += 1
            self.isr_expands += 1
        else:
            state.shrinks += 1
            self.isr_shrinks += 1
        log.info(
            "%s-%d: ISR %s -> %s",
            *key,
            sorted(state.isr),
            sorted(new),
        )
        state.isr, state.version = new, version
        self._advance(key, state)
        self._news(key)  # a smaller ISR may fail waiting produces
