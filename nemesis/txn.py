"""The transactional workload and its checks (Jepsen's Kafka "txn" anomalies that a single
transactional producer can show).

Owns: ``TxnWriter``, a confluent-kafka transactional producer that, again and again, begins
a transaction, writes one unique value to each partition of its topic, and commits it, or
aborts every ``abort_every``-th, recording each transaction's values, outcome and the time
its commit returned (the workload's reader is the queue's ``Reader`` with read_committed);
and ``check_txn``, which finds over the history and a final read_committed read:

- **aborted read**: a value of an aborted transaction seen by a read_committed reader;
- **lost**: a committed transaction none of whose values is in the final read;
- **partial**: a committed transaction only some of whose values are in the final read
  (part of a transaction kept without the rest). The concurrent reader is not held to this:
  it reads the partitions independently, so it may see one partition's part of a commit
  before another's, as Kafka allows;
- **duplicate**: a value at two offsets;
- **stuck**: the producer hit a fatal error (the application would have to re-create it),
  or the longest time between two successful commits (``longest_commit_gap_s``) passed the
  bound the caller gives. Time inside the windows the caller excuses does not count
  towards that bound: faults made at once (ZooKeeper cut off while a leader is killed)
  under which Kafka promises no progress until the heal.

A transaction whose commit or abort failed with a retriable error is unknown: either outcome
is allowed. It must not know about faults.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, Producer

from .checker import Findings
from .worker import Worker
from .workload import Read


@dataclass
class Txn:
    number: int
    values: list[int]
    outcome: str = "open"  # committed, aborted, unknown
    ended: float = 0.0
    error: str | None = None


@dataclass
class TxnHistory:
    txns: list[Txn] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    read_errors: list[str] = field(default_factory=list)
    fatal: list[str] = field(default_factory=list)

    def commit_times(self) -> list[float]:
        return [t.ended for t in self.txns if t.outcome == "committed"]


class TxnWriter(Worker):
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        history: TxnHistory,
        abort_every: int = 5,
        pause_s: float = 0.05,
        transactional_id: str = "nemesis-txn",
    ):
        super().__init__("nemesis-txn")
        self.topic, self.partitions, self.history = topic, partitions, history
        self.abort_every, self.pause_s = abort_every, pause_s
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 60000,
                "message.timeout.ms": 45000,
                "topic.metadata.refresh.interval.ms": 1000,
                "log.connection.close": False,
            }
        )

    def _run(self) -> None:
        deadline = time.monotonic() + 90
        while True:  # as an application does: a retriable error is tried again
            try:
                self.producer.init_transactions(60)
                break
            except KafkaException as exc:
                err = exc.args[0]
                if not err.retriable() or time.monotonic() > deadline or self._stop.is_set():
                    self.history.fatal.append(f"init_transactions: {exc}")
                    return
                self._stop.wait(0.5)
        n = 0
        while not self._stop.is_set():
            txn = Txn(n, [n * self.partitions + p for p in range(self.partitions)])
            self.history.txns.append(txn)
            try:
                self.producer.begin_transaction()
                for p, value in enumerate(txn.values):
                    self.producer.produce(self.topic, str(value).encode(), partition=p)
                if n % self.abort_every == self.abort_every - 1:
                    self.producer.abort_transaction(60)
                    txn.outcome = "aborted"
                else:
                    self.producer.commit_transaction(60)
                    txn.outcome = "committed"
            except KafkaException as exc:
                if not self._recover(txn, exc):
                    return
            txn.ended = time.monotonic()
            n += 1
            self._stop.wait(self.pause_s)

    def _recover(self, txn: Txn, exc: KafkaException) -> bool:
        """What the application does with an error: retry the commit if the client says so,
        else abort; a fatal error ends the workload. Whether to go on."""
        err = exc.args[0]
        txn.outcome, txn.error = "unknown", str(err)
        if err.fatal():
            self.history.fatal.append(str(err))
            return False
        try:
            if err.retriable():
                self.producer.commit_transaction(60)
                txn.outcome = "committed"
            else:
                self.producer.abort_transaction(60)
                txn.outcome = "aborted"
        except KafkaException as again:
            e2 = again.args[0]
            if e2.fatal():
                self.history.fatal.append(str(e2))
                return False
            try:  # the commit could not be retried: abort, so the next one can begin
                self.producer.abort_transaction(60)
            except KafkaException as third:
                if third.args[0].fatal():
                    self.history.fatal.append(str(third.args[0]))
                    return False
        return True

    def stop(self) -> None:
        self.halt(180)  # a transaction under way may take its 60 s calls to end

    def close(self) -> None:
        """Stop (if not yet) and destroy the producer."""
        self.stop()
        self.release("producer")


@dataclass
class TxnVerdict(Findings):
    KINDS = ("aborted_read", "lost", "partial", "duplicate", "stuck", "divergent")

    committed: int = 0
    aborted: int = 0
    unknown: int = 0
    aborted_read: list[str] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    duplicate: list[int] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    divergent: list[str] = field(default_factory=list)  # replicas' files, as the queue's
    longest_commit_gap_s: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.committed} transactions committed, {self.aborted} aborted, "
            f"{self.unknown} unknown; anomalies: {self.found()}; longest gap between commits "
            f"{self.longest_commit_gap_s:.1f} s"
        )


def check_txn(
    history: TxnHistory,
    final: list[Read],
    window: tuple[float, float],
    max_gap_s: float,
    excused: list[tuple[float, float]] | None = None,
) -> TxnVerdict:
    """``final``: every partition read with read_committed up to its last stable offset;
    ``excused``: windows whose time does not count towards ``max_gap_s``."""
    v = TxnVerdict()
    by_outcome: dict[str, list[Txn]] = defaultdict(list)
    for t in history.txns:
        by_outcome[t.outcome].append(t)
    v.committed, v.aborted = len(by_outcome["committed"]), len(by_outcome["aborted"])
    v.unknown = len(by_outcome["unknown"]) + len(by_outcome["open"])

    aborted_values = {value: t.number for t in by_outcome["aborted"] for value in t.values}
    seen_final: dict[int, int] = defaultdict(int)
    for _, _, value in final:
        seen_final[value] += 1
    v.duplicate = sorted(value for value, n in seen_final.items() if n > 1)
    for source, reads in (("reader", history.reads), ("final read", final)):
        for p, o, value in reads:
            if value in aborted_values:
                v.aborted_read.append(
                    f"{source} saw {value} (aborted transaction {aborted_values[value]}) at {p}@{o}"
                )
    v.stuck = list(history.fatal)
    start, end = window
    marks = [start, *sorted(c for c in history.commit_times() if start <= c <= end), end]
    v.longest_commit_gap_s = max(b - a for a, b in itertools.pairwise(marks))
    for a, b in itertools.pairwise(marks):
        counted = (b - a) - sum(max(0.0, min(b, y) - max(a, x)) for x, y in excused or [])
        if counted > max_gap_s:
            excuse = f", {b - a - counted:.1f} s of it excused" if counted < b - a else ""
            v.stuck.append(f"no commit for {b - a:.1f} s{excuse} (the bound is {max_gap_s:g} s)")
    return v
