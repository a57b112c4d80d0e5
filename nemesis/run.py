"""One nemesis run, start to verdict, and the report table of many.

Owns: ``run`` (start the cluster, create the topic, write and read, apply each nemesis of
the schedule for ``fault_s`` then heal and wait ``gap_s``, heal everything, wait for the
cluster to settle, stop writing, read every partition back, stop the brokers, read every
replica's files, check) and ``table`` (nemesis x workload x runs x records x anomalies x
recovery time). Every wait is bounded; a run ends by itself. It must not know how a
fault is made beyond the ``faults`` functions.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from . import faults
from .admin_ops import (
    PREFIX,
    AdminHistory,
    AdminVerdict,
    AdminWorker,
    check_admin,
    metadata_of,
    retention_of,
)
from .checker import Verdict, check, compare_copies
from .cluster import ZK, Cluster, until
from .group import (
    GROUP,
    GroupHistory,
    GroupMember,
    GroupVerdict,
    OffsetWatcher,
    check_group,
    read_to_end,
)
from .replicas import replica_logs
from .txn import TxnHistory, TxnVerdict, TxnWriter, check_txn
from .workload import History, Reader, Writer, read_all

T = TypeVar("T")
TOPIC = "queue"
TXN_TOPIC = "txn"
TXN_ID = "nemesis-txn"  # the transactional workload's transactional.id
# The longest a transactional producer that commits continuously may go without a commit
# under a partition: the session timeout (6 s) plus an election and the client's retries.
MAX_COMMIT_GAP_S = 15.0

NEMESES: dict[str, Callable[[Cluster], faults.Fault]] = {
    "isolate-leader": lambda c: faults.isolate_leader(c, TOPIC),
    "isolate-zookeeper": faults.isolate_zookeeper,
    "isolate-coordinator": lambda c: faults.isolate_coordinator(c, TXN_ID),
    "isolate-group-coordinator": lambda c: faults.isolate_coordinator(
        c, GROUP, "__consumer_offsets"
    ),
    "kill-group-coordinator": lambda c: faults.kill(
        c, faults.coordinator_of(c, GROUP, "__consumer_offsets")
    ),
    "bridge": lambda c: faults.bridge(c, TOPIC),
    "one-way": lambda c: faults.leader_unheard(c, TOPIC),
    "packet-loss": lambda c: faults.packet_loss(c, 20),
    "pause-leader": lambda c: faults.pause(c, faults.leader_of(c, TOPIC)),
    "pause-zookeeper": lambda c: faults.pause(c, ZK),
    "kill-leader": lambda c: faults.kill(c, faults.leader_of(c, TOPIC)),
    "fill-disk-leader": lambda c: faults.fill_disk(c, faults.leader_of(c, TOPIC)),
    "clock-jump-leader": lambda c: faults.clock_jump(c, faults.leader_of(c, TOPIC)),
    # past producer.id.expiration.ms (a day): does the leader expire the producers' ids?
    "clock-jump-day-leader": lambda c: faults.clock_jump(c, faults.leader_of(c, TOPIC), "+25h"),
}


@dataclass
class Event:
    name: str
    what: str
    started: float
    healed: float


@dataclass
class Result:
    schedule: list[str]
    verdict: Verdict
    events: list[Event] = field(default_factory=list)
    seconds: float = 0.0
    txn: TxnVerdict | None = None  # with the transactional workload
    group: GroupVerdict | None = None  # with the consumer-group workload
    admin: AdminVerdict | None = None  # with the admin workload
    # namespaces and links not removed, Kafka clients still alive: none, after a run
    leftovers: list[str] = field(default_factory=list)


def _settled(cluster: Cluster, partitions: int, replicas: int, topics: list[str]) -> bool:
    for topic, p in ((t, p) for t in topics for p in range(partitions)):
        state = cluster.state(topic, p)
        if state is None or state["leader"] < 0 or len(state["isr"]) < replicas:
            return False
    return True


class Clients:
    """The run's producers and consumers, destroyed before the network is removed: a
    librdkafka client left alive keeps reconnecting to the brokers' addresses, and once
    the namespaces are gone those packets would follow the machine's default route out."""

    def __init__(self) -> None:
        self._all: list[Any] = []

    def add(self, client: T) -> T:
        self._all.append(client)
        return client

    def close(self) -> None:
        for client in self._all:
            client.close()
        self._all.clear()
        gc.collect()


def _kafka_clients() -> list[Any]:
    gc.collect()
    kinds = (Producer, Consumer, AdminClient)
    return [o for o in gc.get_objects() if isinstance(o, kinds)]


def _create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        for f in admin.create_topics([NewTopic(t, partitions, 3) for t in topics]).values():
            f.result(30)
    finally:
        del admin  # destroyed now, also on an error: no client may outlive the network


def _unsettled(cluster: Cluster, partitions: int, replicas: int, topics: list[str]) -> list[str]:
    found = []
    for topic, p in ((t, p) for t in topics for p in range(partitions)):
        state = cluster.state(topic, p)
        if state is None or state["leader"] < 0 or len(state["isr"]) < replicas:
            found.append(f"{topic}-{p} not whole 90 s after the heal: {state}")
    return found


def _check_admin(cluster: Cluster, history: AdminHistory, healed: float) -> AdminVerdict:
    """Wait (bounded) for the brokers' metadata to agree and the deletions to finish, then
    check what the admin workload was told against ZooKeeper and every broker."""

    def look() -> tuple[set[str], dict[int, set[str] | None]]:
        in_zk = {t for t in cluster.zk.get_children("/brokers/topics") if t.startswith(PREFIX)}
        views = {
            cluster.broker_id(b): metadata_of(cluster.address(b), cluster.broker_id(b))
            for b in cluster.broker_names
        }
        return in_zk, views

    deleted = {o.topic for o in history.of("delete", "ok")}
    in_zk, views = look()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        len({frozenset(v or ()) for v in views.values()}) > 1
        or None in views.values()
        or deleted & in_zk
    ):
        time.sleep(1)  # other processes' state: nothing to wait on but a look
        in_zk, views = look()
    retention = retention_of(cluster.bootstrap, sorted(in_zk - deleted))
    return check_admin(history, in_zk, views, retention, healed)


def _acked_since(history: History, t: float, partitions: int) -> bool:
    """Every partition has acknowledged a write sent after ``t``: writes work again."""
    fresh = {s.partition for s in history.sends if s.sent >= t and s.acked is not None}
    return len(fresh) == partitions


def run(
    base: Path,
    schedule: list[str],
    *,
    fault_s: float = 12,
    gap_s: float = 6,
    partitions: int = 3,
    rate: float = 100,
    settings: dict[str, str] | None = None,
    launcher: str = "trio_broker",
    transactions: bool = False,
    groups: int = 0,
    group_protocol: str = "classic",
    admin_ops: bool = False,
    log: Callable[[str], None] = print,
) -> Result:
    """With ``transactions``, the transactional workload runs beside the queue workload,
    on a topic of its own; with ``groups``, a group of that many members (``group_protocol``
    classic or consumer, KIP-848) reads the queue's topic and commits its offsets; with
    ``admin_ops``, topics are created, changed and deleted throughout."""
    t0 = time.monotonic()
    # a disk that can fill is a small tmpfs: only for the schedules that fill one
    parts = [part for name in schedule for part in name.split("+")]
    disk_mb = 256 if any(part.startswith("fill-disk") for part in parts) else 0
    clocks = any(part.startswith("clock-") for part in parts)
    if clocks:  # the producer-id expiration is checked with retention: every second, so
        # that it runs while a clock is jumped (Kafka's default: every 5 minutes)
        settings = {"log.retention.check.interval.ms": "1000", **(settings or {})}
    cluster = Cluster(
        base, settings=settings, launcher=launcher, disk_mb=disk_mb, clocks=clocks
    ).start()
    history, txn_history, group_history = History(), TxnHistory(), GroupHistory()
    admin_history = AdminHistory()
    topics = [TOPIC, *([TXN_TOPIC] if transactions else [])]
    events: list[Event] = []
    clients = Clients()
    before = {id(o) for o in _kafka_clients()}
    try:
        _create_topics(cluster.bootstrap, topics, partitions)
        until(
            "every partition led with three replicas in sync",
            lambda: _settled(cluster, partitions, 3, topics),
            60,
        )
        writer = clients.add(Writer(cluster.bootstrap, TOPIC, history, rate).start())
        reader = clients.add(
            Reader(cluster.bootstrap, TOPIC, partitions, history.reads, history.read_errors)
        ).start()
        if transactions:
            txn_writer = clients.add(
                TxnWriter(cluster.bootstrap, TXN_TOPIC, partitions, txn_history).start()
            )
            txn_reader = clients.add(
                Reader(
                    cluster.bootstrap,
                    TXN_TOPIC,
                    partitions,
                    txn_history.reads,
                    txn_history.read_errors,
                    isolation="read_committed",
                )
            ).start()
        for member in range(groups):
            clients.add(
                GroupMember(cluster.bootstrap, TOPIC, member, group_history, group_protocol)
            ).start()
        if groups:
            clients.add(OffsetWatcher(cluster.bootstrap, TOPIC, partitions, group_history)).start()
        if admin_ops:
            admin_worker = clients.add(AdminWorker(cluster.bootstrap, admin_history)).start()
        started = time.monotonic()
        until(
            "the first writes acknowledged", lambda: _acked_since(history, started, partitions), 60
        )
        if groups:  # the group's coordinator exists once the group has committed
            until(
                "the group's first commit",
                lambda: any(c.acked for c in group_history.commits) or group_history.errors,
                90,
            )
        if transactions:  # faults begin once both workloads work
            until(
                "the first transaction committed",
                lambda: txn_history.commit_times() or txn_history.fatal,
                90,
            )
        for name in schedule:
            # "a+b": the nemeses at once, made in that order; the network healed first
            # (a broker killed under a partition starts again on a whole network), then
            # the others in the reverse order
            at_once = [NEMESES[part](cluster) for part in name.split("+")]
            began = time.monotonic()
            what = "; ".join(fault.what for fault in at_once)
            log(f"  {name}: {what}")
            time.sleep(fault_s)  # the fault lasts this long: the schedule is the clock
            for fault in sorted(reversed(at_once), key=lambda f: not f.network):
                fault.heal()
            healed = time.monotonic()
            events.append(Event(name, what, began, healed))
            time.sleep(gap_s)  # the cluster whole again for this long before the next
        if cluster.net is not None:
            cluster.net.heal()
        for node in cluster.nodes.values():
            if node.paused:
                node.resume()
        healed_all = time.monotonic()
        try:
            until(
                "every partition back to three in-sync replicas",
                lambda: _settled(cluster, partitions, 3, topics),
                90,
            )
        except TimeoutError:  # reported, with the states, and the run goes on to its checks
            history.unsettled = _unsettled(cluster, partitions, 3, topics)
        try:
            until(
                "writes acknowledged again on every partition",
                # a fatal producer error ends the wait: it will not write again
                lambda: _acked_since(history, healed_all, partitions) or history.client_errors,
                60,
            )
        except TimeoutError as exc:  # the checker reports it, with whatever else went wrong
            history.stuck = str(exc)
        if admin_ops:  # and topics are created again (the checker says so if not)
            with contextlib.suppress(TimeoutError):
                until(
                    "a topic created after the heal",
                    lambda: any(o.sent >= healed_all for o in admin_history.of("create", "ok")),
                    60,
                )
        stopped = time.monotonic()
        writer.stop()
        reader.stop()
        final = read_all(cluster.bootstrap, TOPIC, partitions)
        if groups:
            read_to_end(group_history, history, 60)
            windows = [(e.started, e.healed) for e in events]
            group_verdict = check_group(group_history, history, groups, (started, stopped), windows)
        if transactions:
            txn_writer.stop()
            txn_reader.stop()
            txn_final = read_all(
                cluster.bootstrap, TXN_TOPIC, partitions, 90, isolation="read_committed"
            )
            # ZooKeeper cut off or paused while another fault strikes a broker: no election
            # can be made until the heal, so no progress is promised in the meantime
            composed = [
                (e.started, e.healed) for e in events if "+" in e.name and "zookeeper" in e.name
            ]
            txn_verdict = check_txn(
                txn_history, txn_final, (started, stopped), MAX_COMMIT_GAP_S, composed
            )
        if admin_ops:
            admin_worker.close()
            admin_verdict = _check_admin(cluster, admin_history, healed_all)
        states = {p: cluster.state(TOPIC, p) for p in range(partitions)}
        min_insync = int(cluster.settings["min.insync.replicas"])
        for name in cluster.broker_names:
            cluster.nodes[name].stop()
        copies = replica_logs(
            {cluster.broker_id(b): cluster.log_dir(b) for b in cluster.broker_names},
            TOPIC,
            partitions,
        )
        verdict = check(history, final, copies, states, min_insync, (started, stopped))
        if transactions:
            txn_copies = replica_logs(
                {cluster.broker_id(b): cluster.log_dir(b) for b in cluster.broker_names},
                TXN_TOPIC,
                partitions,
            )
            for p, copies_of_p in sorted(txn_copies.items()):
                txn_verdict.divergent += compare_copies(p, copies_of_p)
    finally:
        clients.close()  # each drops its librdkafka handle
        live = [f"a live {type(o).__name__}" for o in _kafka_clients() if id(o) not in before]
        cluster.close()
    left = [*(cluster.net.leftovers() if cluster.net is not None else []), *live]
    return Result(
        schedule,
        verdict,
        events,
        time.monotonic() - t0,
        txn_verdict if transactions else None,
        group_verdict if groups else None,
        admin_verdict if admin_ops else None,
        left,
    )


def table(rows: dict[str, list[Result]], workload: str = "queue") -> str:
    """One line per nemesis and workload: runs, records (acknowledged writes; committed
    transactions), anomalies by name, recovery p50 and max (the longest time without an
    acknowledgement; without a commit)."""
    out = [
        "| nemesis | workload | runs | acknowledged | unknown | anomalies | recovery p50 | max |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, results in rows.items():
        out.append(_row(name, workload, [r.verdict for r in results]))
        txns = [r.txn for r in results if r.txn is not None]
        if txns:
            out.append(_row(name, "txn", txns))
        group = [r.group for r in results if r.group is not None]
        if group:
            out.append(_row(name, "group", group))
        admin = [r.admin for r in results if r.admin is not None]
        if admin:
            found = sum((Counter(v.anomalies) for v in admin), Counter[str]())
            anomalies = ", ".join(f"{n} {k}" for k, n in found.items() if n) or "0"
            done = sum(v.acknowledged for v in admin)
            unknown = sum(v.unknown for v in admin)
            row = f"| {name} | admin | {len(admin)} | {done:,} | {unknown:,} | {anomalies}"
            out.append(f"{row} | - | - |")
    return "\n".join(out)


def _row(
    name: str, workload: str, verdicts: list[Verdict] | list[TxnVerdict] | list[GroupVerdict]
) -> str:
    found: dict[str, int] = {}
    for v in verdicts:
        for k, n in v.anomalies.items():
            found[k] = found.get(k, 0) + n
    anomalies = ", ".join(f"{n} {k}" for k, n in found.items() if n) or "0"
    if workload == "group":  # commits acknowledged and failed; the longest gap in reads
        gaps = [v.longest_read_gap_s for v in verdicts if isinstance(v, GroupVerdict)]
        done = sum(v.commits for v in verdicts if isinstance(v, GroupVerdict))
        unknown = sum(v.commits_failed for v in verdicts if isinstance(v, GroupVerdict))
    elif workload == "txn":
        gaps = [v.longest_commit_gap_s for v in verdicts if isinstance(v, TxnVerdict)]
        done = sum(v.committed for v in verdicts if isinstance(v, TxnVerdict))
        unknown = sum(v.unknown for v in verdicts if isinstance(v, TxnVerdict))
    else:
        gaps = [v.longest_gap_s for v in verdicts if isinstance(v, Verdict)]
        done = sum(v.acked for v in verdicts if isinstance(v, Verdict))
        unknown = sum(v.unknown for v in verdicts if isinstance(v, Verdict))
    return (
        f"| {name} | {workload} | {len(verdicts)} | {done:,} | {unknown:,} | {anomalies} | "
        f"{statistics.median(gaps):.1f} s | {max(gaps):.1f} s |"
    )
