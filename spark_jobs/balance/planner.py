"""The planner: goals in priority order over the load model, one greedy move at a time,
as Cruise Control's goal optimizer does.

Owns ``optimize`` (the moves, and each goal's state before and after) and ``Plan`` (the
moves merged per partition: its replicas before and after, its leader before and after,
the reasons in the order they arose; and the preferred-leader elections).

For each goal in turn, while its cost is above 0: take its groups of candidate moves
(most urgent broker or partition first); in the first group where some move lowers the
goal's cost without raising the cost of any goal optimised before it or of any hard goal,
apply the best one, and start again; stop when no group has such a move, or after
``max_steps`` moves for this goal. The best move lowers this goal's cost most; among equals,
a leadership move before a replica move, then the one that leaves the later goals'
costs lowest (in their order), then by topic, partition and broker ids. So a plan depends
only on its input: the same tables and cluster state give the same plan.
Must not: talk to brokers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .goals import Goal
from .model import Action, Key, Model

EPS = 1e-9


@dataclass
class Step:
    goal: str
    action: Action
    reason: str


@dataclass
class GoalResult:
    name: str
    hard: bool
    not_applicable: str | None = None
    cost_before: float = 0.0
    cost_after: float = 0.0
    violations_before: list[str] = field(default_factory=list)
    violations_after: list[str] = field(default_factory=list)
    steps: int = 0

    @property
    def status(self) -> str:
        if self.not_applicable:
            return "not applicable"
        return "met" if self.cost_after <= EPS else "unmet"

    def doc(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "hard": self.hard,
            "status": self.status,
            "reason": self.not_applicable,
            "moves": self.steps,
            "cost_before": round(self.cost_before, 6),
            "cost_after": round(self.cost_after, 6),
            "violations_before": self.violations_before[:20],
            "violations_after": self.violations_after[:20],
        }


def _best(
    m: Model, goal: Goal, later: Sequence[Goal], guard: Sequence[Goal], actions: list[Action]
) -> Action | None:
    c0 = goal.cost(m)
    base = [g.cost(m) for g in guard]
    found: list[tuple[float, Action]] = []
    for a in actions:
        if not m.legal(a):
            continue
        undo = m.apply(a)
        try:
            c1 = goal.cost(m)
            if c1 < c0 - EPS and all(
                g.cost(m) <= b + EPS for g, b in zip(guard, base, strict=True)
            ):
                found.append((round(c1, 9), a))
        finally:
            m.undo(undo)
    if not found:
        return None
    least = min(c for c, _ in found)
    tied = sorted({a for c, a in found if c <= least + EPS}, key=Action.order)
    if len(tied) == 1:
        return tied[0]

    def rank(a: Action) -> tuple[Any, ...]:
        undo = m.apply(a)
        try:
            after = tuple(round(g.cost(m), 9) for g in later)
        finally:
            m.undo(undo)
        return (a.kind != "leader", after, a.order())

    return min(tied, key=rank)


def optimize(
    m: Model, goals: Sequence[Goal], max_steps: int = 1000
) -> tuple[list[Step], list[GoalResult]]:
    results = []
    for g in goals:
        na = g.not_applicable(m)
        r = GoalResult(g.name, g.hard, na)
        if na is None:
            r.cost_before, r.violations_before = g.cost(m), g.violations(m)
        results.append(r)
    steps: list[Step] = []
    for i, goal in enumerate(goals):
        if results[i].not_applicable:
            continue
        later = goals[i + 1 :]
        guard = [*goals[:i], *(g for g in later if g.hard)]
        while results[i].steps < max_steps and goal.cost(m) > EPS:
            chosen = None
            for reason, actions in goal.groups(m):
                chosen = _best(m, goal, later, guard, actions)
                if chosen is not None:
                    m.apply(chosen)
                    steps.append(Step(goal.name, chosen, reason))
                    results[i].steps += 1
                    break
            if chosen is None:
                break
    for g, r in zip(goals, results, strict=True):
        if r.not_applicable is None:
            r.cost_after, r.violations_after = g.cost(m), g.violations(m)
    return steps, results


@dataclass
class Move:
    topic: str
    partition: int
    replicas_before: tuple[int, ...]
    replicas_after: tuple[int, ...]
    leader_before: int
    leader_after: int
    size_bytes: int
    reasons: list[str]

    @property
    def kind(self) -> str:
        same = set(self.replicas_before) == set(self.replicas_after)
        return "leadership" if same else "replicas"

    def doc(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "kind": self.kind,
            "replicas_before": list(self.replicas_before),
            "replicas_after": list(self.replicas_after),
            "adding": sorted(set(self.replicas_after) - set(self.replicas_before)),
            "removing": sorted(set(self.replicas_before) - set(self.replicas_after)),
            "leader_before": self.leader_before,
            "leader_after": self.leader_after,
            "bytes_to_copy": self.size_bytes
            * len(set(self.replicas_after) - set(self.replicas_before)),
            "reasons": self.reasons,
        }


def merge(
    before: dict[Key, tuple[tuple[int, ...], int]], m: Model, steps: Sequence[Step]
) -> list[Move]:
    """The steps as one move per partition whose replicas (or their order) changed."""
    reasons: dict[Key, list[str]] = {}
    for s in steps:
        reasons.setdefault(s.action.key, []).append(f"{s.goal}: {s.reason}: {s.action.describe()}")
    moves = []
    for key in sorted(reasons):
        p = m.partitions[key]
        replicas, leader = before[key]
        if tuple(p.replicas) == replicas and p.leader == leader:
            continue  # moved there and back
        after = tuple(p.replicas)
        moves.append(Move(*key, replicas, after, leader, p.leader, p.size, reasons[key]))
    return moves
