"""The plan as a document (``TRENDS/balance/plan.json``) and as text for people.

Owns ``PLAN_SCHEMA``, ``plan_doc`` (what was read, the model's assumptions, each goal's
state before and after, the moves with their reasons, the preferred-leader elections, and
the expected load of every broker before and after) and ``render`` (the same as a few
tables). The document holds no clock reading except ``generated_at``, so two plans from
the same input differ only there (``same_plan`` compares them without it).
Must not: plan or apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .model import Model, Settings
from .monitor import Observed
from .planner import GoalResult, Move

PLAN_SCHEMA = "trio-broker.balance-plan/1"
FIGURES: tuple[str, ...] = (
    "replicas",
    "leaders",
    "bytes_in_per_s",
    "bytes_out_per_s",
    "loop_busy",
    "io_busy",
    "disk_used_ratio",
)
OBSERVED: tuple[str, ...] = (
    "loop_busy_ratio",
    "io_idle_ratio",
    "bytes_in_per_s",
    "bytes_out_per_s",
    "leaders",
    "replicas",
    "disk_used_bytes",
    "disk_total_bytes",
)


def plan_doc(
    *,
    command: str,
    target: list[int],
    generated_at: str,
    observed: Observed,
    state_source: str,
    settings: Settings,
    before: Mapping[int, Mapping[str, Any]],
    model: Model,
    results: Sequence[GoalResult],
    moves: Sequence[Move],
) -> dict[str, Any]:
    unmet = [r for r in results if r.status == "unmet"]
    elections = [
        {
            "topic": mv.topic,
            "partition": mv.partition,
            "leader_before": mv.leader_before,
            "leader_after": mv.leader_after,
        }
        for mv in moves
        if mv.leader_after != mv.leader_before
    ]
    brokers = []
    for b in model.brokers.values():
        brokers.append(
            {
                "broker_id": b.id,
                "rack": b.rack,
                "alive": b.alive,
                "role": _role(model, b.id),
                "cost_per_unit": {"loop": b.loop_cost, "io": b.io_cost},
                "cost_from": dict(b.cost_sources),
                "observed": {k: b.observed.get(k) for k in OBSERVED},
                "before": dict(before.get(b.id, {})),
                "after": b.figures(),
            }
        )
    unobserved = sum(1 for p in model.partitions.values() if not p.observed)
    return {
        "schema": PLAN_SCHEMA,
        "generated_at": generated_at,
        "command": command,
        "brokers_named": target,
        "input": {**observed.summary(), "cluster_state": state_source},
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "model_notes": [
            "expected load is today's observed rates on the new placement, not a forecast: "
            "a broker freed of a bottleneck may then carry more",
            "busy ratios are work (requests/s + bytes/s / bytes_per_unit) times each "
            "broker's own observed cost per unit (or the median of the others')",
            *(
                [f"{unobserved} partition(s) had no rows in the tables: modelled with no load"]
                if unobserved
                else []
            ),
        ],
        "goals": [r.doc() for r in results],
        "unmet_goals": [r.name for r in unmet],
        "unmet_hard_goals": [r.name for r in unmet if r.hard],
        "moves": [mv.doc() for mv in moves],
        "elections": elections,
        "summary": {
            "replica_moves": sum(1 for mv in moves if mv.kind == "replicas"),
            "leadership_moves": sum(1 for mv in moves if mv.kind == "leadership"),
            "elections": len(elections),
            "bytes_to_copy": sum(mv.doc()["bytes_to_copy"] for mv in moves),
        },
        "brokers": brokers,
    }


def _role(model: Model, broker_id: int) -> str:
    scope = model.scope
    if broker_id in scope.forbidden:
        return "to empty" if model.brokers[broker_id].alive else "dead: to empty"
    if scope.only_to is not None and broker_id in scope.only_to:
        return "new"
    return "member" if model.brokers[broker_id].alive else "dead"


def same_plan(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two plan documents say the same, whenever they were made."""
    return {k: v for k, v in a.items() if k != "generated_at"} == {
        k: v for k, v in b.items() if k != "generated_at"
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[_fmt(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def render(doc: Mapping[str, Any]) -> str:
    out = []
    i = doc["input"]
    out.append(
        f"balance {doc['command']}"
        + (f" {','.join(map(str, doc['brokers_named']))}" if doc["brokers_named"] else "")
        + f": {i['partitions']} partition(s), {i['brokers']} broker(s) observed "
        f"({i['source']}, {i['from']} .. {i['to']}); cluster state from {i['cluster_state']}"
    )
    rows = []
    for b in doc["brokers"]:
        rows.append(
            [
                b["broker_id"],
                b["role"],
                *(f"{_fmt(b['before'].get(k))} -> {_fmt(b['after'].get(k))}" for k in FIGURES),
            ]
        )
    out.append(table(["broker", "role", *FIGURES], rows))
    s = doc["summary"]
    out.append(
        f"moves: {s['replica_moves']} replica move(s), {s['leadership_moves']} leadership "
        f"move(s), {s['elections']} election(s), {s['bytes_to_copy']:,} bytes to copy"
    )
    for mv in doc["moves"]:
        out.append(
            f"  {mv['topic']}-{mv['partition']}: {mv['replicas_before']} -> "
            f"{mv['replicas_after']} (leader {mv['leader_before']} -> {mv['leader_after']}): "
            + mv["reasons"][0]
            + (f" (+{len(mv['reasons']) - 1} more)" if len(mv["reasons"]) > 1 else "")
        )
    for g in doc["goals"]:
        kind = "hard" if g["hard"] else "soft"
        line = f"goal {g['name']} ({kind}): {g['status']}"
        if g["reason"]:
            line += f" ({g['reason']})"
        elif g["violations_after"]:
            line += ": " + "; ".join(g["violations_after"][:3])
        out.append(line)
    if doc["unmet_goals"]:
        out.append("the plan cannot meet: " + ", ".join(doc["unmet_goals"]))
    return "\n".join(out)
