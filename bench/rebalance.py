"""Rebalance time, 6 -> 7 consumers on 120 partitions: classic groups against KIP-848's
consumer protocol, on the same broker in the same run (issue 34's benchmark).

One broker process (``bench/_common.BrokerProcess``: ``python -m trio_broker`` from this
checkout, log dir on ``/dev/shm``), one topic of ``--partitions`` (120). For each
repetition, each mode in turn, with a group of its own:

- ``classic-range``: ``group.protocol=classic`` with librdkafka's default
  ``partition.assignment.strategy`` (``range,roundrobin``: range is chosen, an *eager*
  protocol: every member gives up all its partitions at each rebalance);
- ``classic-coop``: ``group.protocol=classic``, ``cooperative-sticky`` (incremental: a
  member gives up only what moves, in a second rebalance);
- ``consumer``: ``group.protocol=consumer`` (KIP-848), the broker's ``uniform`` assignor;
- ``consumer-range`` (only when named in ``--modes``): the same with
  ``group.remote.assignor=range`` (the broker's range assignor, not sticky).

A producer writes ``--rate`` (600) messages/s throughout, evenly: every 10 ms six
partitions get one message each, one from each sixth of the partitions in turn (0, 20,
40, ... 100, then 1, 21, ...), so each partition gets one every 200 ms and each member of
six, with range's contiguous blocks or a spread assignment, about one every 10 ms. Six
confluent-kafka consumers, each polling in its own thread, join and settle (20 partitions
each, every one reading); then a seventh subscribes. Measured from
that ``subscribe()`` call, from the consumers' own assign and revoke callbacks:

- **7th has its partitions**: when the seventh holds as many partitions as it holds at
  the end (17 or 18), i.e. its last assignment callback;
- **stable**: when all 120 partitions are held, each by one member, all seven holding
  17 or 18 (the group as the clients see it; the broker's own state is read afterwards
  with DescribeConsumerGroups and reported);
- **longest pause**: the longest time any of the six existing members went without a
  message, from the subscribe until every member has read ``--read`` (100) messages
  after the group was stable; with the longest pause of the six in the window just
  before the subscribe, while each read as many (the steady state, as reference);
- **held nothing**: the longest time one of the six held no partition at all (between an
  eager revocation of everything and the next assignment).

Every member's heartbeat interval is ``--heartbeat-ms`` (1000): ``heartbeat.interval.ms``
for classic members, ``group.consumer.heartbeat.interval.ms`` (given by the broker) for
consumer-protocol ones; session timeouts 10 s both. The classic group's first rebalance
delay (``group.initial.rebalance.delay.ms``) is 0; it does not apply to a group with
members. These are not Kafka's or librdkafka's defaults (3 s classic, 5 s consumer):
with the defaults every figure that waits for a heartbeat grows with the interval.

    .venv/bin/python bench/rebalance.py --repetitions 3 --json out.json

Bounded: every wait has a deadline (``--deadline``, 60 s) and the run ends after the
repetitions.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from _common import (
    BrokerProcess,
    default_data_dir,
    header,
    log,
    median,
    table,
    wait_quiet,
    write_json,
)
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TITLE = "rebalance: 6 -> 7 consumers, classic against consumer protocol"
TOPIC = "bench-rebalance"
MODES = {
    "classic-range": {"group.protocol": "classic"},
    "classic-coop": {
        "group.protocol": "classic",
        "partition.assignment.strategy": "cooperative-sticky",
    },
    "consumer": {"group.protocol": "consumer"},
    "consumer-range": {"group.protocol": "consumer", "group.remote.assignor": "range"},
}
DEFAULT_MODES = "classic-range,classic-coop,consumer"
COLUMNS = [
    ("mode", "mode"),
    ("repetition", "rep"),
    ("seventh_assigned_s", "7th assigned s"),
    ("stable_s", "stable s"),
    ("longest_pause_s", "longest pause s"),
    ("steady_pause_s", "steady pause s"),
    ("longest_empty_s", "held nothing s"),
    ("seventh_holds", "7th holds"),
    ("two_owners", "two owners"),
    ("broker_state", "broker state"),
]
TIMES = ("seventh_assigned_s", "stable_s", "longest_pause_s", "steady_pause_s", "longest_empty_s")
TICK = 0.01  # the producer's step, seconds


class Group:
    """Who holds what, from the callbacks; every change notifies ``changed``."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.changed = threading.Condition()
        self.owner: dict[int, str] = {}
        self.violations = 0
        self.stable_at: float | None = None
        self.members: list[str] = []
        self.empty_since: dict[str, float] = {}  # a member holding nothing, since when
        self.empty: dict[str, list[tuple[float, float]]] = {}  # (from, to) per member

    def held(self, name: str) -> int:
        return sum(1 for who in self.owner.values() if who == name)

    def balanced(self) -> bool:
        counts = [self.held(m) for m in self.members]
        return len(self.owner) == self.partitions and max(counts) - min(counts) <= 1

    def assigned(self, name: str, parts: list[TopicPartition]) -> None:
        with self.changed:
            for tp in parts:
                if self.owner.get(tp.partition, name) != name:
                    self.violations += 1
                self.owner[tp.partition] = name
            self._changed()

    def revoked(self, name: str, parts: list[TopicPartition]) -> None:
        with self.changed:
            for tp in parts:
                if self.owner.get(tp.partition) == name:
                    del self.owner[tp.partition]
            self._changed()

    def _changed(self) -> None:
        now = time.monotonic()
        for m in self.members:
            if self.held(m) == 0:
                self.empty_since.setdefault(m, now)
            elif m in self.empty_since:
                self.empty.setdefault(m, []).append((self.empty_since.pop(m), now))
        if self.stable_at is None and len(self.members) == 7 and self.balanced():
            self.stable_at = time.monotonic()
        self.changed.notify_all()

    def longest_empty(self, names: list[str], start: float) -> float:
        """The longest time one of ``names`` held no partition, from ``start`` on."""
        spans = [(a, b) for m in names for a, b in self.empty.get(m, []) if b >= start]
        return max((b - max(a, start) for a, b in spans), default=0.0)

    def wait(self, what: str, done: Callable[[], bool], deadline: float) -> None:
        with self.changed:
            if not self.changed.wait_for(done, deadline):
                raise TimeoutError(f"not within {deadline} s: {what}")


class Reader(threading.Thread):
    def __init__(
        self, bootstrap: str, group_id: str, mode: str, name: str, group: Group, heartbeat_ms: int
    ) -> None:
        super().__init__(name=name, daemon=True)
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "auto.offset.reset": "latest",
            **MODES[mode],
        }
        if conf["group.protocol"] == "classic":
            conf |= {"heartbeat.interval.ms": heartbeat_ms, "session.timeout.ms": 10000}
        self.consumer = Consumer(conf)
        self.group = group
        self.arrivals: list[float] = []
        self.assigned_at: list[float] = []
        self.revoked_at: list[float] = []
        self.stop = threading.Event()
        self.subscribed_at = 0.0
        self.errors: list[str] = []

    def run(self) -> None:
        def on_assign(_: Any, parts: list[TopicPartition]) -> None:
            if parts:
                self.assigned_at.append(time.monotonic())
            self.group.assigned(self.name, parts)

        def on_revoke(_: Any, parts: list[TopicPartition]) -> None:
            if parts:
                self.revoked_at.append(time.monotonic())
            self.group.revoked(self.name, parts)

        self.subscribed_at = time.monotonic()
        self.consumer.subscribe(
            [TOPIC], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke
        )
        try:
            while not self.stop.is_set():
                msg = self.consumer.poll(0.1)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.errors.append(str(msg.error()))
                    continue
                with self.group.changed:
                    self.arrivals.append(time.monotonic())
                    self.group.changed.notify_all()
        finally:
            self.consumer.close()

    def read_since(self, t: float) -> int:
        return len(self.arrivals) - bisect.bisect_left(self.arrivals, t)  # in time order

    def longest_gap(self, start: float, end: float) -> float:
        a, b = self.gap_span(start, end)
        return b - a

    def gap_span(self, start: float, end: float) -> tuple[float, float]:
        """When the longest time without a message between ``start`` and ``end`` began
        and ended."""
        before = [a for a in self.arrivals if a < start]
        points = [before[-1] if before else start]
        points += [a for a in self.arrivals if start <= a <= end] + [end]
        return max(itertools.pairwise(points), key=lambda ab: ab[1] - ab[0])


def produce_until(bootstrap: str, partitions: int, rate: float, stop: threading.Event) -> None:
    """``rate`` messages/s, spread evenly: every ``TICK`` s a few partitions get one message
    each, one from each sixth of the partitions in turn."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    per_tick = rate * TICK
    sixth = partitions // 6
    order = [b * sixth + k for k in range(sixth) for b in range(6)]
    order += [p for p in range(partitions) if p not in order]
    sent = 0.0
    i = 0
    while not stop.wait(TICK):
        sent += per_tick
        while i < sent:
            producer.produce(TOPIC, b"%d" % i, partition=order[i % partitions])
            i += 1
        producer.poll(0)
    producer.flush(15)


def broker_state(bootstrap: str, group_id: str, deadline: float) -> str:
    """The group's state as the broker describes it, once Stable or at the deadline."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    end = time.monotonic() + deadline
    while True:
        d = admin.describe_consumer_groups([group_id])[group_id].result(timeout=15)
        if d.state == ConsumerGroupState.STABLE or time.monotonic() > end:
            return str(d.state.name)
        time.sleep(0.2)  # polled: the admin client has no notification of group state


def run_once(args: argparse.Namespace, bootstrap: str, mode: str, rep: int) -> dict[str, Any]:
    group = Group(args.partitions)
    group_id = f"bench-{mode}-{rep}"
    six = [
        Reader(bootstrap, group_id, mode, f"c{i}", group, args.heartbeat_ms) for i in range(1, 7)
    ]
    group.members = [r.name for r in six]
    readers = list(six)
    try:
        for r in six:
            r.start()
        share = args.partitions // 6
        group.wait(
            "six settle",
            lambda: (
                all(group.held(r.name) == share for r in six)
                and all(r.read_since(0) > 0 for r in six)
            ),
            args.deadline,
        )
        steady = time.monotonic()
        group.wait(
            "six read", lambda: all(r.read_since(steady) >= args.read for r in six), args.deadline
        )
        seventh = Reader(bootstrap, group_id, mode, "c7", group, args.heartbeat_ms)
        with group.changed:
            group.members.append("c7")
        readers.append(seventh)
        seventh.start()
        group.wait("stable with seven", lambda: group.stable_at is not None, args.deadline)
        stable_at = group.stable_at
        assert stable_at is not None
        group.wait(
            "all read after",
            lambda: all(r.read_since(stable_at) >= args.read for r in readers),
            args.deadline,
        )
        end = time.monotonic()
        t0 = seventh.subscribed_at
        state = broker_state(bootstrap, group_id, args.deadline)
        paused = max(six, key=lambda r: r.longest_gap(t0, end))
        span = paused.gap_span(t0, end)
        row = {
            "mode": mode,
            "repetition": rep,
            "seventh_assigned_s": max(seventh.assigned_at) - t0,
            "stable_s": stable_at - t0,
            "longest_pause_s": max(r.longest_gap(t0, end) for r in six),
            "steady_pause_s": max(r.longest_gap(steady, t0) for r in six),
            "longest_empty_s": group.longest_empty([r.name for r in six], t0),
            "seventh_holds": group.held("c7"),
            "two_owners": group.violations,
            "broker_state": state,
            "errors": [e for r in readers for e in r.errors],
            # the longest pause: whose, when (s after the subscribe), and that member's
            # revocations and assignments (s after the subscribe)
            "pause": {
                "member": paused.name,
                "from_s": round(span[0] - t0, 3),
                "to_s": round(span[1] - t0, 3),
                "revoked_s": [round(t - t0, 3) for t in paused.revoked_at if t >= t0],
                "assigned_s": [round(t - t0, 3) for t in paused.assigned_at if t >= t0],
            },
        }
    finally:
        for r in readers:
            r.stop.set()
        for r in readers:
            r.join(30)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument(
        "--modes", default=DEFAULT_MODES, help=f"comma-separated, of {', '.join(MODES)}"
    )
    parser.add_argument("--partitions", type=int, default=120)
    parser.add_argument("--rate", type=float, default=600.0, help="messages/s in all")
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    parser.add_argument(
        "--read", type=int, default=100, help="messages each member reads before and after"
    )
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds, every wait")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        help="seconds to wait, before each repetition, for the machine to be under 10%% busy",
    )
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--json")
    args = parser.parse_args()
    modes = args.modes.split(",")
    options = {k: v for k, v in vars(args).items() if k != "json"}
    print(header(TITLE, options))
    broker = BrokerProcess(
        [
            "group.initial.rebalance.delay.ms=0",
            "group.consumer.min.session.timeout.ms=10000",
            "group.consumer.session.timeout.ms=10000",
            "group.consumer.min.heartbeat.interval.ms=100",
            f"group.consumer.heartbeat.interval.ms={args.heartbeat_ms}",
        ],
        base_dir=args.data_dir,
    ).start()
    stop = threading.Event()
    rows: list[dict[str, Any]] = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, args.partitions, 1)]).values():
            f.result(timeout=30)
        producer = threading.Thread(
            target=produce_until,
            args=(broker.bootstrap, args.partitions, args.rate, stop),
            daemon=True,
        )
        producer.start()
        for rep in range(1, args.repetitions + 1):
            busy = wait_quiet(args.wait_quiet) if args.wait_quiet > 0 else None
            for mode in modes:
                log(f"repetition {rep}: {mode}")
                row = run_once(args, broker.bootstrap, mode, rep) | {"machine_busy": busy}
                log(str(row))
                rows.append(row)
    finally:
        stop.set()
        broker.stop()
    print(table([h for _, h in COLUMNS], [[r[k] for k, _ in COLUMNS] for r in rows]))
    print()
    summary = []
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        summary.append([mode, len(mine)] + [median(r[k] for r in mine) for k in TIMES])
    print(table(["mode", "runs"] + [f"{h} (median)" for k, h in COLUMNS if k in TIMES], summary))
    write_json(args.json, "rebalance", options, {"rows": rows})
    if any(r["errors"] for r in rows):
        sys.exit("consumer errors: " + "; ".join(e for r in rows for e in r["errors"]))


if __name__ == "__main__":
    main()
