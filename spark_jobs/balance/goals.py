"""The goals a plan optimises, in priority order, each a small class (Cruise Control's
``analyzer/goals``): hard goals first, then soft ones.

Owns ``Goal`` (the interface the planner uses: a cost that is 0 when the goal is met, the
violations in words, and candidate moves grouped by the broker or partition they help)
and the goals:

- hard: ``ReplicaPlacementGoal`` (no replica left on a broker being removed, or on a dead
  one under ``fix-offline``), ``RackAwareGoal`` (a partition's replicas on as many racks
  as it can have; only when every broker has a rack), ``ReplicaCapacityGoal`` (at most
  ``max_replicas_per_broker`` replicas a broker), ``DiskCapacityGoal`` (a broker's disk
  used at most ``disk_threshold`` of its total);
- soft, each a band of ``balance_threshold`` around the mean of the eligible brokers:
  ``ReplicaCountGoal``, ``LeaderCountGoal``, ``BytesInGoal``, ``BytesOutGoal``,
  ``LoopBusyGoal`` (the event loop's expected busy share), ``IoPoolGoal`` (the io threads'
  expected busy share). The count bands are whole numbers (floor and ceiling of the band);
  the byte and busy goals hold while the mean is below a floor (``low_bytes_per_s``,
  ``low_busy``): an idle cluster needs no moves.

Must not: apply moves (the planner tries them on the model and undoes them).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from .model import Action, Broker, Model

Group = tuple[str, list[Action]]


class Goal:
    name = ""
    hard = False

    def not_applicable(self, m: Model) -> str | None:
        """Why the goal has nothing to say about this cluster, or None."""
        return None

    def cost(self, m: Model) -> float:
        raise NotImplementedError

    def violations(self, m: Model) -> list[str]:
        raise NotImplementedError

    def groups(self, m: Model) -> Iterator[Group]:
        """Candidate moves, most urgent group first, each with the reason it is tried."""
        raise NotImplementedError


# ------------------------------------------------------------------ candidates


def moves_off(m: Model, b: int, kinds: tuple[str, ...]) -> list[Action]:
    out = []
    dests = [d.id for d in m.eligible() if d.id != b]
    for p in m.partitions.values():
        if b not in p.replicas:
            continue
        if "leader" in kinds and p.leader == b:
            out += [Action("leader", p.topic, p.partition, b, r) for r in p.replicas if r != b]
        if "replica" in kinds:
            out += [
                Action("replica", p.topic, p.partition, b, d) for d in dests if d not in p.replicas
            ]
    return out


def moves_onto(m: Model, b: int, kinds: tuple[str, ...]) -> list[Action]:
    out = []
    for p in m.partitions.values():
        if "leader" in kinds and b in p.replicas and p.leader != b and p.leader >= 0:
            out.append(Action("leader", p.topic, p.partition, p.leader, b))
        if "replica" in kinds and b not in p.replicas:
            out += [Action("replica", p.topic, p.partition, r, b) for r in p.replicas]
    return out


# ------------------------------------------------------------------ hard goals


class ReplicaPlacementGoal(Goal):
    name = "replica placement"
    hard = True

    def not_applicable(self, m: Model) -> str | None:
        return None if m.scope.forbidden else "no broker is to be emptied"

    def cost(self, m: Model) -> float:
        return float(m.forbidden_replicas)

    def violations(self, m: Model) -> list[str]:
        return [
            f"broker {b} still holds {m.brokers[b].replicas} replica(s)"
            for b in sorted(m.scope.forbidden)
            if b in m.brokers and m.brokers[b].replicas > 0
        ]

    def groups(self, m: Model) -> Iterator[Group]:
        for b in sorted(m.scope.forbidden):
            if b in m.brokers and m.brokers[b].replicas > 0:
                state = "is being removed" if m.brokers[b].alive else "is dead"
                reason = f"broker {b} {state}: no replica may stay on it"
                yield reason, moves_off(m, b, ("replica",))


class RackAwareGoal(Goal):
    name = "rack-aware placement"
    hard = True

    def not_applicable(self, m: Model) -> str | None:
        return None if m.rack_aware else "not every live broker has a rack"

    def cost(self, m: Model) -> float:
        return float(m.rack_violations)

    def _short(self, m: Model) -> list[tuple[str, int]]:
        out = []
        for p in m.partitions.values():
            racks = [m.brokers[r].rack for r in p.replicas if r in m.brokers]
            if len(set(racks)) < min(len(p.replicas), m.rack_count):
                out.append(p.key)
        return out

    def violations(self, m: Model) -> list[str]:
        if not m.rack_aware:
            return []
        return [f"{t}-{p}: two replicas share a rack" for t, p in self._short(m)]

    def groups(self, m: Model) -> Iterator[Group]:
        if not m.rack_aware:
            return
        for key in self._short(m):
            p = m.partitions[key]
            seen: set[str | None] = set()
            actions = []
            used = {m.brokers[r].rack for r in p.replicas if r in m.brokers}
            for r in p.replicas:
                rack = m.brokers[r].rack if r in m.brokers else None
                if rack in seen:
                    actions += [
                        Action("replica", p.topic, p.partition, r, d.id)
                        for d in m.eligible()
                        if d.rack not in used
                    ]
                seen.add(rack)
            yield f"{key[0]}-{key[1]}: replicas share a rack", actions


class ReplicaCapacityGoal(Goal):
    name = "replica capacity"
    hard = True

    def _over(self, m: Model) -> list[Broker]:
        cap = m.settings.max_replicas_per_broker
        return [b for b in m.eligible() if b.replicas > cap]

    def cost(self, m: Model) -> float:
        cap = m.settings.max_replicas_per_broker
        return float(sum(b.replicas - cap for b in self._over(m)))

    def violations(self, m: Model) -> list[str]:
        cap = m.settings.max_replicas_per_broker
        return [f"broker {b.id}: {b.replicas} replicas, above {cap}" for b in self._over(m)]

    def groups(self, m: Model) -> Iterator[Group]:
        cap = m.settings.max_replicas_per_broker
        for b in sorted(self._over(m), key=lambda b: (-b.replicas, b.id)):
            yield (
                f"broker {b.id} holds {b.replicas} replicas, above {cap}",
                moves_off(m, b.id, ("replica",)),
            )


class DiskCapacityGoal(Goal):
    name = "disk capacity"
    hard = True

    def not_applicable(self, m: Model) -> str | None:
        if any(b.disk_total for b in m.eligible()):
            return None
        return "no broker's disk size is known"

    def _excess(self, m: Model, b: Broker) -> float:
        if not b.disk_total:
            return 0.0
        return max(0.0, b.disk_used - m.settings.disk_threshold * b.disk_total) / b.disk_total

    def cost(self, m: Model) -> float:
        return sum(self._excess(m, b) for b in m.eligible())

    def violations(self, m: Model) -> list[str]:
        th = m.settings.disk_threshold
        return [
            f"broker {b.id}: disk {b.disk_used / b.disk_total:.0%} used, above {th:.0%}"
            for b in m.eligible()
            if b.disk_total and self._excess(m, b) > 0
        ]

    def groups(self, m: Model) -> Iterator[Group]:
        over = [b for b in m.eligible() if self._excess(m, b) > 0]
        for b in sorted(over, key=lambda b: (-self._excess(m, b), b.id)):
            yield f"broker {b.id}'s disk is too full", moves_off(m, b.id, ("replica",))


# ------------------------------------------------------------------ soft goals


def band(values: list[float], integer: bool, t: float) -> tuple[float, float, float]:
    """(low, high, mean): the band of ``t`` around the mean (whole numbers for counts)."""
    mean = sum(values) / len(values) if values else 0.0
    if integer:
        return float(math.floor(mean * (1 - t))), float(math.ceil(mean * (1 + t))), mean
    return mean * (1 - t), mean * (1 + t), mean


class BalanceGoal(Goal):
    """A figure per broker kept within ``balance_threshold`` of the eligible brokers' mean."""

    kinds: tuple[str, ...] = ("leader", "replica")
    integer = False
    unit = ""

    def value(self, b: Broker) -> float:
        raise NotImplementedError

    def low(self, m: Model) -> float:
        return 0.0

    def band(self, m: Model) -> tuple[float, float, float]:
        vals = [self.value(b) for b in m.eligible()]
        return band(vals, self.integer, m.settings.balance_threshold)

    def _off(self, m: Model) -> list[tuple[float, Broker, bool]]:
        """(distance out of the band, broker, above) for each broker out of it."""
        lo, hi, mean = self.band(m)
        if mean <= self.low(m) or mean <= 0:
            return []
        out = []
        for b in m.eligible():
            v = self.value(b)
            if v > hi + 1e-12:
                out.append((v - hi, b, True))
            elif v < lo - 1e-12:
                out.append((lo - v, b, False))
        return sorted(out, key=lambda x: (-x[0], x[1].id))

    def cost(self, m: Model) -> float:
        _, _, mean = self.band(m)
        return sum(d for d, _, _ in self._off(m)) / mean if mean > 0 else 0.0

    def _fmt(self, v: float) -> str:
        if self.integer:
            return f"{v:.0f}"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"

    def violations(self, m: Model) -> list[str]:
        lo, hi, mean = self.band(m)
        return [
            f"broker {b.id}: {self._fmt(self.value(b))}{self.unit} "
            + (f"above {self._fmt(hi)}" if above else f"below {self._fmt(lo)}")
            + f" (mean {self._fmt(mean)})"
            for _, b, above in self._off(m)
        ]

    def groups(self, m: Model) -> Iterator[Group]:
        lo, hi, mean = self.band(m)
        for _, b, above in self._off(m):
            v = self._fmt(self.value(b)) + self.unit
            if above:
                yield (
                    f"broker {b.id} at {v}, above {self._fmt(hi)} (mean {self._fmt(mean)})",
                    moves_off(m, b.id, self.kinds),
                )
            else:
                yield (
                    f"broker {b.id} at {v}, below {self._fmt(lo)} (mean {self._fmt(mean)})",
                    moves_onto(m, b.id, self.kinds),
                )


class ReplicaCountGoal(BalanceGoal):
    name = "replica count balance"
    kinds = ("replica",)
    integer = True
    unit = " replicas"

    def value(self, b: Broker) -> float:
        return float(b.replicas)


class LeaderCountGoal(BalanceGoal):
    name = "leader count balance"
    kinds = ("leader",)
    integer = True
    unit = " leaders"

    def value(self, b: Broker) -> float:
        return float(b.leaders)


class BytesInGoal(BalanceGoal):
    name = "bytes-in balance"
    unit = " B/s"

    def value(self, b: Broker) -> float:
        return b.bytes_in

    def low(self, m: Model) -> float:
        return m.settings.low_bytes_per_s


class BytesOutGoal(BytesInGoal):
    name = "bytes-out balance"

    def value(self, b: Broker) -> float:
        return b.bytes_out


class LoopBusyGoal(BalanceGoal):
    name = "event-loop busy balance"
    unit = " busy"

    def value(self, b: Broker) -> float:
        return b.loop_busy

    def low(self, m: Model) -> float:
        return m.settings.low_busy


class IoPoolGoal(LoopBusyGoal):
    name = "io pool balance"

    def value(self, b: Broker) -> float:
        return b.io_busy


def default_goals() -> list[Goal]:
    """Every goal, in priority order."""
    return [
        ReplicaPlacementGoal(),
        RackAwareGoal(),
        ReplicaCapacityGoal(),
        DiskCapacityGoal(),
        ReplicaCountGoal(),
        LeaderCountGoal(),
        BytesInGoal(),
        BytesOutGoal(),
        LoopBusyGoal(),
        IoPoolGoal(),
    ]


GOAL_NAMES = [g.name for g in default_goals()]
