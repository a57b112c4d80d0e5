"""The consumer-group workload and its checks: what a group that commits its offsets must
never see, whatever the faults.

Owns: ``GroupMember``, one confluent-kafka consumer of a group subscribed to the queue
topic, which records every value it reads and commits its position synchronously every
``commit_every`` seconds, recording each commit's offsets, when it was sent and when it
was acknowledged; ``OffsetWatcher``, which fetches the group's committed offsets of every
partition twice a second from outside the group (a consumer of the same group id that
never joins it), recording what it saw and when; and ``check_group``:

- **offset moved back**: a partition's committed offset seen lower than an earlier
  observation, or lower than an offset whose commit had been acknowledged before the
  observation began, unless a member's commit of exactly that lower offset was still in
  flight when the higher one was known (two members racing over a rebalance may do that,
  and Kafka allows it: the records between are read again, never skipped). A coordinator
  that lost acknowledged commits, or reloaded an older state after a failover, shows here.
  An observation begun while a fault was on (or within ``STALE_GRACE_S`` of its heal) is
  counted apart, as a **stale read**, not an anomaly: a coordinator cut off from ZooKeeper
  and its peers, but not from clients, goes on answering OffsetFetch from the offsets it
  holds until it learns it was deposed, while the members commit to its successor. Kafka
  in ZooKeeper mode does the same; OffsetFetch is not a linearizable read;
- **rewound**: a member given a partition began reading it below an offset whose commit
  had been acknowledged before the partition was given to it (unless a commit of exactly
  the offset it began at was still in flight then). This is what a user notices of a lost
  commit: records read again beyond the last commit. It holds during faults too, since the
  members' own coordinator is the one that took over;
- **unread**: an acknowledged value of the queue that no member of the group read, once
  the group was given time to reach the end of every partition after the writes stopped
  (at-least-once: each must be read by some member at least once);
- **stuck**: the group did not reach the end within that time, or a member hit a fatal
  error.

A commit that failed (a rebalance, a coordinator moving, a timeout) is unknown, never an
anomaly; the offset it carried may or may not be in force. Recovery is measured too: the
longest time no member read anything while the queue acknowledged writes. It must not
know about faults or the queue's own checks.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from .checker import Findings
from .worker import Worker
from .workload import History

GROUP = "nemesis-group"
# After a heal, how long a deposed coordinator may take to learn it: its ZooKeeper session
# found expired on reconnection, the controller's LeaderAndIsr, with the cluster's 6 s
# session timeout.
STALE_GRACE_S = 10.0
NO_OFFSET = -1  # what the watcher records for a partition with no committed offset


@dataclass
class Commit:
    member: int
    offsets: dict[int, int]  # partition -> the next offset to read
    sent: float
    acked: float | None = None
    error: str | None = None


@dataclass
class Seen:
    partition: int
    offset: int
    began: float  # when the fetch was sent
    answered: float  # when its answer came back


@dataclass
class GroupHistory:
    # member, partition, offset, value, when
    reads: list[tuple[int, int, int, int, float]] = field(default_factory=list)
    assigned: list[tuple[int, list[int], float]] = field(default_factory=list)  # member, ps, t
    commits: list[Commit] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # fatal errors: the checker's stuck
    unfinished: str | None = None  # the group did not reach the end: why


def _consumer(bootstrap: str, protocol: str, **extra: object) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": GROUP,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "topic.metadata.refresh.interval.ms": 1000,
        "log.connection.close": False,
        **extra,
    }
    if protocol == "consumer":  # KIP-848: the session timeout is the broker's
        config["group.protocol"] = "consumer"
    else:
        config["session.timeout.ms"] = 10000
    return Consumer(config)


class GroupMember(Worker):
    """One member: reads, and commits its position every ``commit_every`` seconds."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        member: int,
        history: GroupHistory,
        protocol: str = "classic",
        commit_every: float = 0.5,
    ):
        super().__init__(f"nemesis-group-{member}")
        self.member, self.history, self.commit_every = member, history, commit_every
        self.consumer = _consumer(bootstrap, protocol, error_cb=self._error)
        self.consumer.subscribe([topic], on_assign=self._assigned)

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        got = [tp.partition for tp in partitions]
        self.history.assigned.append((self.member, got, time.monotonic()))

    def _error(self, err: KafkaError) -> None:
        if err.fatal():
            self.history.errors.append(f"member {self.member} fatal: {err}")

    def _run(self) -> None:
        next_commit = time.monotonic() + self.commit_every
        read = False
        while not self._stop.is_set():
            for msg in self.consumer.consume(500, timeout=0.2):
                if msg.error() is None and msg.value() is not None:
                    value = int(msg.value())  # type: ignore[arg-type]
                    p, o = msg.partition() or 0, msg.offset() or 0
                    self.history.reads.append((self.member, p, o, value, time.monotonic()))
                    read = True
            if read and time.monotonic() >= next_commit:
                self._commit()
                read, next_commit = False, time.monotonic() + self.commit_every

    def _commit(self) -> None:
        try:
            positions = self.consumer.position(self.consumer.assignment())
        except KafkaException:
            return
        offsets = {tp.partition: tp.offset for tp in positions if tp.offset >= 0}
        if not offsets:
            return
        commit = Commit(self.member, offsets, time.monotonic())
        self.history.commits.append(commit)
        try:
            done = self.consumer.commit(
                offsets=[TopicPartition(positions[0].topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )
        except KafkaException as exc:
            commit.error = str(exc.args[0])
            return
        failed = [tp for tp in done or [] if tp.error is not None]
        if failed:
            commit.error = ", ".join(f"{tp.partition}: {tp.error}" for tp in failed)
        else:
            commit.acked = time.monotonic()

    def close(self) -> None:
        """Stop reading and leave the group; destroy the consumer."""
        self.halt()
        self.release("consumer", close=True)


class OffsetWatcher(Worker):
    """Fetches the group's committed offsets twice a second, from outside the group."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, history: GroupHistory):
        super().__init__("nemesis-offsets")
        self.history = history
        self._tps = [TopicPartition(topic, p) for p in range(partitions)]
        self.consumer = _consumer(bootstrap, "classic")  # never subscribes: not a member

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            began = time.monotonic()
            try:
                got = self.consumer.committed(self._tps, timeout=5)
            except KafkaException:  # the coordinator unreachable: nothing seen
                continue
            answered = time.monotonic()
            for tp in got:
                if tp.error is None:
                    offset = tp.offset if tp.offset >= 0 else NO_OFFSET
                    self.history.seen.append(Seen(tp.partition, offset, began, answered))

    def close(self) -> None:
        self.halt()
        self.release("consumer", close=True)


def read_to_end(history: GroupHistory, queue: History, timeout: float) -> None:
    """Wait (bounded) until the group has read every value the queue acknowledged; if it
    does not, say so in ``history.unfinished``."""
    wanted = {s.value for s in queue.acked()}
    deadline = time.monotonic() + timeout
    while wanted - {value for *_, value, _ in history.reads}:
        if time.monotonic() > deadline:
            history.unfinished = f"the group did not read every value within {timeout:g} s"
            return
        time.sleep(0.2)  # other threads' reads: nothing to wait on but a look


@dataclass
class GroupVerdict(Findings):
    KINDS = ("offset_moved_back", "rewound", "unread", "stuck")

    members: int = 0
    read: int = 0
    commits: int = 0
    commits_failed: int = 0
    observations: int = 0
    stale_reads: int = 0  # observations behind what was known, taken during a fault
    offset_moved_back: list[str] = field(default_factory=list)
    rewound: list[str] = field(default_factory=list)
    unread: list[int] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    longest_read_gap_s: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.members} members read {self.read} records, {self.commits} commits "
            f"acknowledged ({self.commits_failed} failed), {self.observations} offsets seen "
            f"({self.stale_reads} stale during faults); "
            f"anomalies: {self.found()}; longest gap in reads {self.longest_read_gap_s:.1f} s"
        )


def check_group(
    history: GroupHistory,
    queue: History,
    members: int,
    window: tuple[float, float],
    faults: list[tuple[float, float]],
) -> GroupVerdict:
    """``faults``: when each fault began and was healed."""
    v = GroupVerdict(members=members, read=len(history.reads), observations=len(history.seen))
    v.commits = sum(1 for c in history.commits if c.acked is not None)
    v.commits_failed = sum(1 for c in history.commits if c.error is not None)
    for s, found in _moved_back(history):
        if any(began <= s.began <= healed + STALE_GRACE_S for began, healed in faults):
            v.stale_reads += 1
        else:
            v.offset_moved_back.append(found)
    v.rewound = _rewound(history)
    read_values = {value for *_, value, _ in history.reads}
    v.unread = sorted(s.value for s in queue.acked() if s.value not in read_values)
    v.stuck = [*history.errors, *([history.unfinished] if history.unfinished else [])]
    start, end = window
    marks = [start, *sorted(r[-1] for r in history.reads if start <= r[-1] <= end), end]
    v.longest_read_gap_s = max(b - a for a, b in itertools.pairwise(marks))
    return v


def _in_flight(history: GroupHistory, partition: int, offset: int, after: float) -> bool:
    """A commit of exactly ``offset`` not acknowledged by ``after`` (or never: a commit
    whose answer was lost may still be applied)."""
    return any(
        c.offsets.get(partition) == offset and (c.acked is None or c.acked > after)
        for c in history.commits
    )


def _rewound(history: GroupHistory) -> list[str]:
    found = []
    stints = sorted(history.assigned, key=lambda a: a[2])
    read_by: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for member, p, o, _, t in history.reads:
        read_by[member, p].append((o, t))
    for member, partitions, given in stints:
        later = [t for m, _, t in stints if m == member and t > given]
        until = min(later, default=float("inf"))
        for p in partitions:
            first = min((o for o, t in read_by[member, p] if given < t < until), default=None)
            acked = [
                (c.acked, c.offsets[p])
                for c in history.commits
                if c.acked is not None and c.acked < given and p in c.offsets
            ]
            if first is None or not acked:
                continue
            t_high, high = max(acked, key=lambda a: a[1])
            if first < high and not _in_flight(history, p, first, t_high):
                found.append(
                    f"member {member} given partition {p} at {given:.1f} began at offset "
                    f"{first}, below {high} committed at {t_high:.1f}"
                )
    return found


def _moved_back(history: GroupHistory) -> list[tuple[Seen, str]]:
    """Each observation lower than what was known committed before it began, unless a
    commit of exactly that offset was in flight when the higher one was known."""
    found = []
    known: dict[int, list[tuple[float, int, str]]] = defaultdict(list)  # p -> (t, offset, how)
    for c in history.commits:
        for p, o in c.offsets.items():
            if c.acked is not None:
                known[p].append((c.acked, o, f"member {c.member}'s commit acknowledged"))
    for s in history.seen:
        known[s.partition].append((s.answered, s.offset, "seen"))
    for s in sorted(history.seen, key=lambda s: s.began):
        before = [(t, o, how) for t, o, how in known[s.partition] if t < s.began]
        if not before:
            continue
        t_high, high, how = max(before, key=lambda k: k[1])
        if s.offset >= high or _in_flight(history, s.partition, s.offset, t_high):
            continue  # in flight: a race over a rebalance that Kafka allows
        what = f"partition {s.partition}: committed offset {s.offset} seen at {s.began:.1f}"
        found.append((s, f"{what}, after {high} ({how} at {t_high:.1f})"))
    return found
