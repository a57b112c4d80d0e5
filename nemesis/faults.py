"""The nemeses: faults that start and heal, each a small function over a ``Cluster``.

Owns: ``Fault`` (a name, what it did, and ``heal``) and the nemeses a schedule composes:

- ``isolate(names)``: the nodes named lose every link to the other nodes, not to the
  clients (the driver);
- ``isolate_leader``: the leader of a partition, so (Jepsen's "leader alone");
- ``isolate_zookeeper``: ZooKeeper alone, from every broker;
- ``isolate_coordinator``: the coordinator of a transactional id (or of a group id) alone;
- ``partition(a, b)``: the sets ``a`` and ``b`` lose their links to each other, both ways;
- ``bridge``: one broker sees both halves, the halves do not see each other;
- ``one_way(sender, receivers)``: packets from ``sender`` to ``receivers`` are dropped,
  the other direction works; ``leader_unheard``: the leader's, to every other node;
- ``packet_loss(percent)``: every link between nodes drops that share of packets;
- ``pause(name)``: SIGSTOP, healed by SIGCONT (a GC pause, a stalled VM);
- ``kill(name)``: ``kill -9``, healed by starting the node again on its data;
- ``clock_jump(name, offset)``: the broker's wall clock jumps (libfaketime), and back;
- ``fill_disk(name)``: the broker's log dir (a tmpfs) filled to the last byte, healed by
  freeing it and restarting the broker.

A network fault is nftables rules in the nodes' namespaces; its heal flushes them all, so
faults of the network compose by starting several and healing once. It must not know about
workloads or the checker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .cluster import ZK, Cluster
from .net import DRIVER, Network


@dataclass
class Fault:
    name: str
    what: str
    heal: Callable[[], None]
    network: bool = False  # nftables rules: healed before the processes, when composed


def _net(cluster: Cluster) -> Network:
    assert cluster.net is not None
    return cluster.net


def partition(
    cluster: Cluster, a: Iterable[str], b: Iterable[str], name: str = "partition"
) -> Fault:
    net = _net(cluster)
    a, b = list(a), list(b)
    for x in a:
        for y in b:
            net.drop(x, y)
            net.drop(y, x)
    return Fault(name, f"{sorted(a)} | {sorted(b)}", net.heal, network=True)


def isolate(cluster: Cluster, names: Iterable[str], name: str = "isolate") -> Fault:
    alone = list(names)
    others = [n for n in cluster.nodes if n not in alone and n != DRIVER]
    return partition(cluster, alone, others, name)


def leader_of(cluster: Cluster, topic: str, partition_id: int = 0) -> str:
    state = cluster.state(topic, partition_id)
    if state is None or state["leader"] < 0:
        raise RuntimeError(f"{topic}-{partition_id} has no leader to isolate: {state}")
    return cluster.broker_name(state["leader"])


def isolate_leader(cluster: Cluster, topic: str) -> Fault:
    leader = leader_of(cluster, topic)
    fault = isolate(cluster, [leader], "isolate-leader")
    fault.what = f"{leader} (leader of {topic}-0) alone, clients still reach it"
    return fault


def coordinator_of(cluster: Cluster, key: str, topic: str = "__transaction_state") -> str:
    """The broker leading the partition of ``topic`` that coordinates ``key`` (a
    transactional id in ``__transaction_state``, a group id in ``__consumer_offsets``):
    Kafka's rule (Java's ``String.hashCode`` of the key, made non-negative as ``Utils.abs``
    does, modulo the partition count), restated here so that the harness asks the cluster
    nothing but ZooKeeper's partition states."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    count = len(cluster.zk.get_children(f"/brokers/topics/{topic}/partitions"))
    return leader_of(cluster, topic, (0 if h == -(1 << 31) else abs(h)) % count)


def isolate_coordinator(cluster: Cluster, key: str, topic: str = "__transaction_state") -> Fault:
    coordinator = coordinator_of(cluster, key, topic)
    fault = isolate(cluster, [coordinator], "isolate-coordinator")
    fault.what = f"{coordinator} (coordinator of {key!r}) alone"
    return fault


def isolate_zookeeper(cluster: Cluster) -> Fault:
    return isolate(cluster, [ZK], "isolate-zookeeper")


def bridge(cluster: Cluster, topic: str) -> Fault:
    """The leader of ``topic``-0 and ZooKeeper on one side, another broker on the other,
    the third broker sees both."""
    leader = leader_of(cluster, topic)
    others = [b for b in cluster.broker_names if b != leader]
    middle, far = others[0], others[1:]
    fault = partition(cluster, [ZK, leader], far, "bridge")
    fault.what = f"{[ZK, leader]} | {far}, {middle} sees both"
    return fault


def one_way(cluster: Cluster, sender: str, receivers: Iterable[str]) -> Fault:
    """Packets from ``sender`` to each of ``receivers`` are dropped; the other way works."""
    net = _net(cluster)
    to = list(receivers)
    for receiver in to:
        net.drop(receiver, sender)
    return Fault("one-way", f"{sender} -> {sorted(to)} dropped", net.heal, network=True)


def leader_unheard(cluster: Cluster, topic: str) -> Fault:
    """The leader of ``topic``-0 hears everyone, but ZooKeeper and the other brokers
    receive nothing from it."""
    leader = leader_of(cluster, topic)
    others = [n for n in cluster.nodes if n not in (leader, DRIVER)]
    return one_way(cluster, leader, others)


def packet_loss(cluster: Cluster, percent: int) -> Fault:
    net = _net(cluster)
    nodes = [n for n in cluster.nodes if n != DRIVER]
    for x in nodes:
        for y in nodes:
            if x != y:
                net.lose(x, y, percent)
    return Fault("packet-loss", f"{percent}% between all nodes", net.heal, network=True)


def pause(cluster: Cluster, name: str) -> Fault:
    node = cluster.nodes[name]
    node.pause()
    return Fault("pause", f"{name} stopped (SIGSTOP)", node.resume)


def fill_disk(cluster: Cluster, name: str) -> Fault:
    """Fill broker ``name``'s log dir (a tmpfs: ``Cluster(disk_mb=...)``) to the last byte.
    The heal is Kafka's: free the space, then restart the broker, since a log dir that
    failed stays offline until then."""
    if not cluster.disk_mb:
        raise RuntimeError("fill-disk needs a cluster whose log dirs are tmpfs (disk_mb)")
    filler = cluster.log_dir(name) / "filler"
    with filler.open("wb") as f:
        chunk = b"\0" * (1 << 20)
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:  # ENOSPC: full
            pass

    def heal() -> None:
        filler.unlink(missing_ok=True)
        node = cluster.nodes[name]
        node.stop()
        node.start()

    return Fault("fill-disk", f"{name}'s log dir full", heal)


def clock_jump(cluster: Cluster, name: str, offset: str = "+2h") -> Fault:
    """Broker ``name``'s wall clock jumps by ``offset`` (libfaketime's syntax), and back at
    the heal: a backward jump of the same size."""
    if not cluster.clocks:
        raise RuntimeError("a clock jump needs a cluster started with clocks=True")
    cluster.clock_file(name).write_text(f"{offset}\n")

    def heal() -> None:
        cluster.clock_file(name).write_text("+0\n")

    return Fault("clock-jump", f"{name}'s wall clock {offset}", heal)


def kill(cluster: Cluster, name: str) -> Fault:
    node = cluster.nodes[name]
    node.kill()
    return Fault("kill", f"{name} killed (kill -9)", node.start)
