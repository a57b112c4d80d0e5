"""Exactly-once drill (issue 19): a consume-transform-produce app is killed with ``kill -9``
at random points, ``--kills`` times (20), and the broker is restarted every
``--restart-every`` kills (5); a read_committed reader of the output must then see every
input record exactly once.

What it does, on one broker process (``python -m trio_broker`` from this checkout, with
``log.flush.interval.messages=1``: an acknowledged write is on disk):

1. writes ``--records`` (20000) numbered records to topic ``in`` (4 partitions);
2. runs the app, this script with ``--app``: a confluent-kafka consumer of ``in`` (group
   ``ctp``, read_committed, no auto commit) and a transactional producer (one
   ``transactional.id``) that, for each ``--batch`` (200) records it polls, begins a
   transaction, writes ``out-<record>`` to topic ``out`` (4 partitions), works
   ``--work-ms`` (100: the records go out meanwhile), sends the consumer's positions to
   the transaction and commits;
3. kills the app (SIGKILL) a random 0-1 s after it begins its first transaction, starts
   it again, ``--kills`` times,
   restarting the broker (SIGTERM, then the same data on new ports) every
   ``--restart-every`` kills; then lets the last app run until the group's committed
   offsets cover the whole input;
4. reads ``out`` from the start with read_committed and with read_uncommitted.

With ``--cluster``, the same on three brokers and a ZooKeeper (``bench/replication.py``'s
cluster): every topic, ``__consumer_offsets`` and ``__transaction_state`` with three
replicas (``min.insync.replicas=2``), and at every ``--restart-every``-th kill a broker is
killed with ``kill -9`` while the app works (alternately the transaction coordinator's
broker and another one), then started again on its data once the app is killed too.

Checked: read_committed sees each input record's output exactly once (counts: expected,
read, missing, duplicates); read_uncommitted shows what the kills left behind (records of
aborted transactions: more than the input when a kill hit a transaction with records
written). Printed: both counts and the time the drill took.

Run from the repository (``scripts/test`` sets up ``.venv``)::

    .venv/bin/python bench/txn_drill.py                 # 20 kills: about two minutes
    .venv/bin/python bench/txn_drill.py --kills 3 --records 2000
    .venv/bin/python bench/txn_drill.py --cluster    # three brokers, kill -9 of brokers too

Every load stops by itself: the record count, the kills and every wait are bounded.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    REPO,
    BrokerProcess,
    default_data_dir,
    header,
    log,
    table,
    wait_quiet,
    write_json,
)

TITLE = "Exactly-once drill: consume-transform-produce killed with kill -9"
PARTITIONS = 4
GROUP = "ctp"
TXN_ID = "ctp-app"


# ------------------------------------------------------------------ the app


def app(bootstrap: str, total: int, batch_size: int, work_s: float) -> int:
    """The consume-transform-produce loop (``batch_size`` records a transaction, then
    ``work_s`` of "work" before the commit, so kills land inside transactions); exits 0
    once the group has committed every input record."""
    from confluent_kafka import Consumer, KafkaException, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            # static membership (KIP-345): the restarted app takes the killed one's place
            # at once, instead of waiting out its session in a rebalance
            "group.instance.id": "ctp-app-1",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID})
    producer.init_transactions(60)
    consumer.subscribe(["in"])
    done, said = 0, False
    while done < total:
        batch = [m for m in consumer.consume(batch_size, 1.0) if m.error() is None]
        if not batch:
            done = _committed(consumer)
            continue
        if not said:  # the drill kills at a random point from here on
            print("working", flush=True)
            said = True
        producer.begin_transaction()
        for m in batch:
            producer.produce("out", value=b"out-" + m.value(), partition=m.partition())
        producer.poll(work_s)  # the work: meanwhile the records go out, uncommitted
        try:
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata())
            producer.commit_transaction(60)
        except KafkaException as exc:
            if exc.args[0].txn_requires_abort():
                producer.abort_transaction(60)
                _rewind(consumer)
                continue
            raise
        done = _committed(consumer)
    consumer.close()
    return 0


def _committed(consumer: Any) -> int:
    from confluent_kafka import TopicPartition

    wanted = [TopicPartition("in", p) for p in range(PARTITIONS)]
    return sum(max(tp.offset, 0) for tp in consumer.committed(wanted, timeout=30))


def _rewind(consumer: Any) -> None:
    """After an abort: back to the committed offsets (the batch is done again)."""
    for tp in consumer.committed(consumer.assignment(), timeout=30):
        if tp.offset >= 0:
            consumer.seek(tp)


# ----------------------------------------------------------------- the drill


def fill(target: OneBroker | ThreeBrokers, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    target.create_topics([NewTopic(t, PARTITIONS, target.replicas) for t in ("in", "out")])
    bootstrap = target.bootstrap()
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(records):
        p.produce("in", value=b"%07d" % i, partition=i % PARTITIONS)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(60) == 0, "the input was not all written"


def read_out(bootstrap: str, isolation: str) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{isolation}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition("out", p, 0) for p in range(PARTITIONS)])
    out: list[bytes] = []
    ends = 0
    deadline = time.monotonic() + 120
    while ends < PARTITIONS and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            if m.error() is None:
                out.append(m.value())
            elif m.error().code() == KafkaError._PARTITION_EOF:
                ends += 1
    c.close()
    assert ends == PARTITIONS, f"{isolation}: the end of out not reached within 120 s"
    return out


def group_progress(bootstrap: str) -> int:
    """Input records the group has committed (through transactions that committed)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [TopicPartition("in", p) for p in range(PARTITIONS)]
    request = ConsumerGroupTopicPartitions(GROUP, wanted)
    listed = admin.list_consumer_group_offsets([request])[GROUP].result(30)
    return sum(max(tp.offset, 0) for tp in listed.topic_partitions)


def start_app(bootstrap: str, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    app_args = ["--records", str(args.records), "--batch", str(args.batch)]
    app_args += ["--work-ms", str(args.work_ms)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, __file__, "--app", bootstrap, *app_args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if args.app_log is None else open(args.app_log, "ab"),
    )


def wait_working(proc: subprocess.Popen[bytes], timeout: float = 60) -> bool:
    """Until the app says it works (its first transaction begins); False if it ended."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            return False
        if line.startswith(b"working"):
            return True
    raise TimeoutError(f"the app did not begin working within {timeout} s")


class OneBroker:
    """The drill's broker: one process, restarted (SIGTERM) between app runs."""

    replicas = 1

    def __init__(self, args: argparse.Namespace) -> None:
        self.broker = BrokerProcess(["log.flush.interval.messages=1"], base_dir=args.data_dir)

    def start(self) -> None:
        self.broker.start()

    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def create_topics(self, topics: list[Any]) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap()})  # alive until answered
        for f in admin.create_topics(topics).values():
            f.result(30)

    def disrupt(self, turn: int, rng: random.Random) -> bool:
        """Called while the app works, at each restart point: nothing on one broker."""
        return False

    def recover(self, turn: int) -> None:
        self.broker.restart()

    def stop(self) -> None:
        self.broker.stop()


class ThreeBrokers:
    """Three brokers and ZooKeeper; at each restart point one broker is killed with
    ``kill -9`` while the app works (even turns: the transaction coordinator's broker),
    and started again on its data after the app is killed."""

    replicas = 3
    SETTINGS = (
        "log.flush.interval.messages=1",
        "min.insync.replicas=2",
        "offsets.topic.replication.factor=3",
        "transaction.state.log.replication.factor=3",
        "transaction.state.log.min.isr=2",
        "group.initial.rebalance.delay.ms=0",
    )

    def __init__(self, args: argparse.Namespace) -> None:
        import tempfile

        from replication import Cluster

        base = Path(tempfile.mkdtemp(prefix="trio-broker-txn-drill-", dir=args.data_dir))
        self.cluster = Cluster(base, args.session_timeout_ms, list(self.SETTINGS))
        self.victim: int | None = None
        self.logs: Path | None = args.logs

    def start(self) -> None:
        self.cluster.start()

    def bootstrap(self) -> str:
        return self.cluster.bootstrap()

    def create_topics(self, topics: list[Any]) -> None:
        self.cluster.create_topics(topics)

    def disrupt(self, turn: int, rng: random.Random) -> bool:
        state = self.cluster.state("__transaction_state")
        coordinator = state["leader"] if state is not None else -1
        others = [i for i in self.cluster.brokers if i != coordinator]
        victim = coordinator if turn % 2 == 0 and coordinator >= 0 else rng.choice(others)
        proc = self.cluster.brokers[victim].proc
        assert proc is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        self.victim = victim
        kind = "the coordinator's" if victim == coordinator else "another"
        log(f"kill -9 of broker {victim} ({kind}) while the app works")
        time.sleep(rng.uniform(0.5, 3.0))  # the app goes on against two brokers
        return True

    def recover(self, turn: int) -> None:
        from replication import until

        if self.victim is None:  # the app had nothing left to do: no broker was killed
            return
        self.cluster.restart(self.victim)
        self.victim = None
        partitions = [("in", p) for p in range(PARTITIONS)] + [
            ("out", p) for p in range(PARTITIONS)
        ]
        partitions += [("__consumer_offsets", 0), ("__transaction_state", 0)]

        def all_in_sync() -> bool:
            states = [self.cluster.state(t, p) for t, p in partitions]
            return all(s is not None and len(s["isr"]) == 3 for s in states)

        until("every replica back in sync", all_in_sync, 120)

    def stop(self) -> None:
        if self.logs is not None:
            self.cluster.write_logs(self.logs)
        self.cluster.stop()
        subprocess.run(["rm", "-rf", str(self.cluster.base)], check=False)


def drill(target: OneBroker | ThreeBrokers, args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    began = time.monotonic()
    fill(target, args.records)
    restarts = killed = 0
    progress: list[int] = []
    for k in range(1, args.kills + 1):
        restart_point = bool(args.restart_every) and k % args.restart_every == 0
        proc = start_app(target.bootstrap(), args)
        if wait_working(proc):  # (else: nothing was left to do)
            time.sleep(rng.uniform(0.0, 1.0))  # a random point in its work: the drill
            if restart_point:
                killed += target.disrupt(restarts, rng)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if restart_point:
            target.recover(restarts)
            restarts += 1
        progress.append(group_progress(target.bootstrap()))
        log(f"kill {k}/{args.kills}: {progress[-1]} input records done ({restarts} restarts)")
    last = start_app(target.bootstrap(), args)
    code = last.wait(args.finish_timeout)
    assert code == 0, f"the last app ended with {code}"
    committed = read_out(target.bootstrap(), "read_committed")
    uncommitted = read_out(target.bootstrap(), "read_uncommitted")
    expected = {b"out-%07d" % i for i in range(args.records)}
    counts = Counter(committed)
    return {
        "records": args.records,
        "kills": args.kills,
        "broker_restarts": restarts,
        "brokers_killed": killed,
        "done_at_each_kill": progress,
        "seconds": time.monotonic() - began,
        "read_committed": {
            "read": len(committed),
            "missing": len(expected - counts.keys()),
            "duplicates": sum(n - 1 for n in counts.values() if n > 1),
            "unexpected": len(counts.keys() - expected),
        },
        "read_uncommitted": {"read": len(uncommitted)},
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument("--records", type=int, default=20000, help="input records (20000)")
    p.add_argument("--kills", type=int, default=20, help="kill -9 of the app (20)")
    p.add_argument("--restart-every", type=int, default=5, help="broker restart every N kills")
    p.add_argument("--finish-timeout", type=float, default=180, help="most s for the last app")
    p.add_argument("--batch", type=int, default=200, help="records a transaction (200)")
    p.add_argument("--work-ms", type=float, default=100, help="ms of work a transaction (100)")
    p.add_argument("--seed", type=int, default=19, help="the kill points' random seed")
    p.add_argument(
        "--wait-quiet", type=float, default=0, help="most s waiting for a quiet machine (0)"
    )
    p.add_argument(
        "--cluster", action="store_true", help="three brokers, a broker kill -9 at restarts"
    )
    p.add_argument(
        "--session-timeout-ms", type=int, default=6000, help="with --cluster: ZooKeeper's (6000)"
    )
    p.add_argument("--data-dir", default=default_data_dir(), help="where the broker's dir goes")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--app-log", help="append the apps' stderr to this file")
    p.add_argument("--logs", type=Path, help="with --cluster: write the brokers' logs here")
    p.add_argument("--app", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.app:
        return app(args.app, args.records, args.batch, args.work_ms / 1000)
    options = {k: v for k, v in vars(args).items() if k not in ("json", "app")}
    print(header(TITLE, options), flush=True)
    if args.wait_quiet:  # the drill checks, it does not time: a busy machine only slows it
        wait_quiet(args.wait_quiet)
    target = ThreeBrokers(args) if args.cluster else OneBroker(args)
    try:
        target.start()
        result = drill(target, args)
    finally:
        target.stop()
    rc, ru = result["read_committed"], result["read_uncommitted"]
    print()
    print(
        table(
            [
                "records",
                "kills",
                "restarts",
                "brokers killed",
                "read_committed",
                "missing",
                "duplicates",
                "read_uncommitted",
                "s",
            ],
            [
                [
                    result["records"],
                    result["kills"],
                    result["broker_restarts"],
                    result["brokers_killed"],
                    rc["read"],
                    rc["missing"],
                    rc["duplicates"],
                    ru["read"],
                    f"{result['seconds']:.0f}",
                ]
            ],
        )
    )
    write_json(args.json, TITLE, options, result)
    ok = rc["missing"] == rc["duplicates"] == rc["unexpected"] == 0
    print("\nexactly once:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
