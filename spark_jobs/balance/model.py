"""The load model: what each partition replica costs the broker that holds it, and what
each broker carries, kept up to date as the planner tries moves.

Owns ``Model`` (brokers, partitions, the moves allowed, and the running totals per broker),
``Action`` (a leadership move or a replica move, and its undo) and ``build`` (a model
from the monitor's observation and the cluster's current state).

The model, in short (docs/operations.md, "Balancing a cluster", says the same):

- A partition's **leader** bears its produce and fetch traffic, the fetches of its
  followers and the replication bytes out; each **follower** bears the replication bytes
  in. Bytes in on a broker are the produce bytes of what it leads plus the replication
  bytes of what it follows; bytes out, the fetch and replication bytes of what it leads.
- **Work** is one measure for loop and io time: requests per second plus bytes per second
  over ``bytes_per_unit``. A leader's work: its produce and fetch requests, one follower
  fetch per produce request for each follower (acks=all with one batch in flight), and
  its bytes in, out and replicated out; a follower's: one fetch per produce request and
  its replication bytes in.
- A broker's **capacity** comes from itself: the busy share of its event loop (one CPU)
  and of its io threads (1 - io idle ratio) over the work it carried in the window give
  its cost per unit of work, so the same work costs a broker with a slow disk more io
  time than one with a fast disk. A broker that carried too little work to say (under
  ``min_work_share`` of the mean) or none at all (a new broker) is given the median of the
  others' costs. Expected busy ratios are work times cost: a demand at today's rates,
  which may exceed 1 (more than the broker can do).
- **Disk**: each replica takes its log size; what a broker's disk holds beyond the
  partitions modelled stays where it is.

Must not: read tables or talk to brokers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .monitor import Observed

Key = tuple[str, int]


@dataclass(frozen=True)
class Settings:
    bytes_per_unit: float = 65536.0
    min_work_share: float = 0.1
    disk_threshold: float = 0.8  # the disk capacity goal: used / total at most this
    max_replicas_per_broker: int = 10000
    balance_threshold: float = 0.1  # the soft goals' band: mean * (1 -/+ this)
    low_busy: float = 0.05  # loop and io balance: nothing to do while the mean is below this
    low_bytes_per_s: float = 10000.0  # bytes in and out: the same, in bytes per second


@dataclass(frozen=True)
class LeaderLoad:
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    messages_in: float = 0.0
    produce_rps: float = 0.0
    fetch_rps: float = 0.0
    replication_out: float = 0.0


@dataclass
class Partition:
    topic: str
    partition: int
    replicas: list[int]
    leader: int
    isr: frozenset[int] | None  # None: not known (every replica taken as in sync)
    size: int
    lead: LeaderLoad
    follower_in: float  # replication bytes in per follower
    lead_work: float = 0.0
    follow_work: float = 0.0
    observed: bool = True

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)

    def in_sync(self, broker: int) -> bool:
        return self.isr is None or broker in self.isr


@dataclass
class Broker:
    id: int
    rack: str | None
    alive: bool
    loop_cost: float = 0.0  # busy share per unit of work per second
    io_cost: float = 0.0
    # per resource ("loop", "io"): "own", "median of the others" or "none observed"
    cost_sources: dict[str, str] = field(default_factory=dict)
    disk_total: int | None = None
    disk_other: int = 0
    observed: dict[str, Any] = field(default_factory=dict)
    # running totals
    replicas: int = 0
    leaders: int = 0
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    work: float = 0.0
    disk: int = 0

    @property
    def loop_busy(self) -> float:
        return self.work * self.loop_cost

    @property
    def io_busy(self) -> float:
        return self.work * self.io_cost

    @property
    def disk_used(self) -> int:
        return self.disk + self.disk_other

    def figures(self) -> dict[str, Any]:
        return {
            "replicas": self.replicas,
            "leaders": self.leaders,
            "bytes_in_per_s": round(self.bytes_in, 1),
            "bytes_out_per_s": round(self.bytes_out, 1),
            "work_units_per_s": round(self.work, 2),
            "loop_busy": round(self.loop_busy, 3),
            "io_busy": round(self.io_busy, 3),
            "disk_used_bytes": self.disk_used,
            "disk_used_ratio": None
            if not self.disk_total
            else round(self.disk_used / self.disk_total, 4),
        }


@dataclass(frozen=True)
class Action:
    kind: str  # "leader" (leadership to another in-sync replica) or "replica" (a move)
    topic: str
    partition: int
    source: int
    destination: int

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)

    def order(self) -> tuple[Any, ...]:
        return (self.kind != "leader", self.topic, self.partition, self.source, self.destination)

    def describe(self) -> str:
        what = "leadership" if self.kind == "leader" else "replica"
        return f"{self.topic}-{self.partition}: {what} {self.source} -> {self.destination}"


@dataclass(frozen=True)
class Undo:
    key: Key
    replicas: tuple[int, ...]
    leader: int


@dataclass
class Scope:
    """Which moves a command allows."""

    forbidden: frozenset[int] = frozenset()  # must end with no replica (removed, or dead)
    only_to: frozenset[int] | None = None  # add-broker: replica moves only onto these
    only_from: frozenset[int] | None = None  # remove / fix-offline: only off these
    frozen: frozenset[Key] = frozenset()  # partitions being moved already: left alone


class Model:
    def __init__(
        self,
        brokers: Iterable[Broker],
        partitions: Iterable[Partition],
        settings: Settings,
        scope: Scope | None = None,
    ) -> None:
        self.brokers = {b.id: b for b in sorted(brokers, key=lambda b: b.id)}
        self.partitions = {p.key: p for p in sorted(partitions, key=lambda p: p.key)}
        self.settings = settings
        self.scope = scope or Scope()
        self.forbidden_replicas = 0
        self.rack_violations = 0
        racks = [b.rack for b in self.eligible()]
        self.rack_aware = bool(racks) and all(r is not None for r in racks)
        self.rack_count = len(set(racks)) if self.rack_aware else 0
        for p in self.partitions.values():
            rf = max(1, len(p.replicas))
            units = self.settings.bytes_per_unit
            p.lead_work = (
                p.lead.produce_rps * rf
                + p.lead.fetch_rps
                + (p.lead.bytes_in + p.lead.bytes_out + p.lead.replication_out) / units
            )
            p.follow_work = p.lead.produce_rps + p.follower_in / units
            self._account(p, +1)

    # --------------------------------------------------------------- the brokers

    def eligible(self) -> list[Broker]:
        """Brokers that may hold replicas: alive and not to be emptied."""
        return [b for b in self.brokers.values() if b.alive and b.id not in self.scope.forbidden]

    def broker(self, broker_id: int) -> Broker:
        return self.brokers[broker_id]

    # ------------------------------------------------------------ running totals

    def _rack_violation(self, p: Partition) -> int:
        if not self.rack_aware:
            return 0
        racks = {self.brokers[r].rack if r in self.brokers else None for r in p.replicas}
        return max(0, min(len(p.replicas), self.rack_count) - len(racks))

    def _account(self, p: Partition, sign: int) -> None:
        for r in p.replicas:
            b = self.brokers.get(r)
            if b is None:
                continue
            b.replicas += sign
            b.disk += sign * p.size
            if r == p.leader:
                b.leaders += sign
                b.bytes_in += sign * p.lead.bytes_in
                b.bytes_out += sign * (p.lead.bytes_out + p.lead.replication_out)
                b.work += sign * p.lead_work
            else:
                b.bytes_in += sign * p.follower_in
                b.work += sign * p.follow_work
            if r in self.scope.forbidden:
                self.forbidden_replicas += sign
        self.rack_violations += sign * self._rack_violation(p)

    # ------------------------------------------------------------------ actions

    def legal(self, a: Action) -> bool:
        p = self.partitions.get(a.key)
        if p is None or p.key in self.scope.frozen:
            return False
        dst = self.brokers.get(a.destination)
        if dst is None or not dst.alive or a.destination in self.scope.forbidden:
            return False
        # A replica on a dead broker: Kafka moves no such partition (every broker of a
        # target must be live) unless that replica is the one moved away.
        dead = [r for r in p.replicas if r not in self.brokers or not self.brokers[r].alive]
        if dead and not (a.kind == "replica" and a.source in dead):
            return False
        if a.kind == "leader":
            return (
                p.leader == a.source
                and a.destination in p.replicas
                and a.destination != a.source
                and p.in_sync(a.destination)
            )
        if a.source not in p.replicas or a.destination in p.replicas:
            return False
        if self.scope.only_to is not None and a.destination not in self.scope.only_to:
            return False
        if self.scope.only_from is not None and a.source not in self.scope.only_from:
            return False
        # A partition with a replica on a broker that must be emptied moves that one first.
        stuck = [r for r in p.replicas if r in self.scope.forbidden]
        return not stuck or a.source in stuck

    def apply(self, a: Action) -> Undo:
        p = self.partitions[a.key]
        undo = Undo(p.key, tuple(p.replicas), p.leader)
        self._account(p, -1)
        if a.kind == "leader":
            p.replicas = [a.destination, *(r for r in p.replicas if r != a.destination)]
            p.leader = a.destination
        else:
            was_leader = p.leader == a.source
            p.replicas = [a.destination if r == a.source else r for r in p.replicas]
            if was_leader:
                # Kafka: once the move is done, a leader outside the new replicas gives way
                # to the first of them.
                p.leader = p.replicas[0]
        self._account(p, +1)
        return undo

    def undo(self, u: Undo) -> None:
        p = self.partitions[u.key]
        self._account(p, -1)
        p.replicas = list(u.replicas)
        p.leader = u.leader
        self._account(p, +1)

    def assignment(self) -> dict[Key, tuple[tuple[int, ...], int]]:
        return {k: (tuple(p.replicas), p.leader) for k, p in self.partitions.items()}

    def figures(self) -> dict[int, dict[str, Any]]:
        return {b.id: b.figures() for b in self.brokers.values()}


# ------------------------------------------------------------------------ build


@dataclass(frozen=True)
class PartitionState:
    replicas: tuple[int, ...]
    leader: int
    isr: frozenset[int] | None = None


@dataclass(frozen=True)
class ClusterState:
    """The cluster as it is: live brokers (and racks) and each partition's replicas,
    leader and ISR; from the admin API, or from the tables' newest buckets."""

    brokers: Mapping[int, str | None]  # live broker id -> rack
    partitions: Mapping[Key, PartitionState]
    known_brokers: frozenset[int] = frozenset()  # ever seen (the tables), live or not
    reassigning: frozenset[Key] = frozenset()
    source: str = "trends tables"
    live: bool = False  # read from the running cluster (else from the tables)

    def dead(self) -> list[int]:
        """Brokers that hold replicas, or were seen in the tables, and are not live."""
        holding = {r for p in self.partitions.values() for r in p.replicas}
        return sorted((holding | set(self.known_brokers)) - set(self.brokers))


def _num(x: Any) -> float:
    return 0.0 if x is None else float(x)


def _median(values: list[float]) -> float:
    vals = sorted(values)
    n = len(vals)
    return 0.0 if n == 0 else (vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2)


def build(observed: Observed, state: ClusterState, settings: Settings, scope: Scope) -> Model:
    loads = {p.key: p for p in observed.partitions}
    partitions = []
    for key, s in sorted(state.partitions.items()):
        o = loads.get(key)
        rates = o.leader_rates if o else {}
        lead = LeaderLoad(
            bytes_in=_num(rates.get("bytes_in_per_s")),
            bytes_out=_num(rates.get("bytes_out_per_s")),
            messages_in=_num(rates.get("messages_in_per_s")),
            produce_rps=_num(rates.get("produce_requests_per_s")),
            fetch_rps=_num(rates.get("fetch_requests_per_s")),
            replication_out=_num(rates.get("replication_bytes_out_per_s"))
            if rates.get("replication_bytes_out_per_s") is not None
            else _num(rates.get("bytes_in_per_s")) * max(0, len(s.replicas) - 1),
        )
        follower_in = (
            o.follower_replication_in_per_s
            if o is not None and o.follower_replication_in_per_s is not None
            else lead.bytes_in
        )
        partitions.append(
            Partition(
                topic=key[0],
                partition=key[1],
                replicas=list(s.replicas),
                leader=s.leader,
                isr=s.isr,
                size=int(o.log_size_bytes or 0) if o else 0,
                lead=lead,
                follower_in=follower_in,
                observed=o is not None,
            )
        )
    seen = {b.broker_id: b for b in observed.brokers}
    ids = set(state.brokers) | set(state.known_brokers) | set(seen)
    ids |= {r for s in state.partitions.values() for r in s.replicas}
    brokers = []
    for i in sorted(ids):
        seen_b = seen.get(i)
        figures = dict(seen_b.figures) if seen_b else {}
        rack = state.brokers.get(i) if i in state.brokers else figures.get("rack")
        total = figures.get("disk_total_bytes")
        brokers.append(
            Broker(
                id=i,
                rack=rack,
                alive=i in state.brokers,
                disk_total=int(total) if total else None,
                observed=figures,
            )
        )
    model = Model(brokers, partitions, settings, scope)
    _capacities(model)
    return model


def _capacities(model: Model) -> None:
    """Each broker's loop and io cost per unit of work, from its own observations."""
    brokers = list(model.brokers.values())
    for b in brokers:
        used = b.observed.get("disk_used_bytes")
        b.disk_other = max(0, int(used) - b.disk) if used is not None else 0
    worked = [b.work for b in brokers if b.observed]
    mean_work = sum(worked) / len(worked) if worked else 0.0
    for resource in ("loop", "io"):
        own: dict[int, float] = {}
        for b in brokers:
            busy = b.observed.get("loop_busy_ratio")
            if resource == "io":
                idle = b.observed.get("io_idle_ratio")
                busy = None if idle is None else 1.0 - float(idle)
            if busy is None or mean_work <= 0 or b.work < model.settings.min_work_share * mean_work:
                continue
            own[b.id] = float(busy) / b.work
        fallback = _median(list(own.values()))
        for b in brokers:
            cost = own.get(b.id, fallback)
            setattr(b, f"{resource}_cost", cost)
            b.cost_sources[resource] = (
                "own" if b.id in own else ("median of the others" if own else "none observed")
            )
