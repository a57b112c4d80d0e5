"""The effect of the last plan applied, from the ``brokers`` table, as the pool advisor
reports the effect of its last change: each broker's figures over the buckets that ended
before the execution began and over those that began after it ended.

Owns ``last_execution`` (the newest line of ``TRENDS/balance/actions.jsonl`` that has a
start and an end) and ``table_effect``. The executor measures an effect of its own right
after the moves (a few seconds, live); this one is what the trend tables say over the
whole window, once the trends job has run again.
Must not: read the tables itself (it is handed the monitor's rows).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FIGURES: tuple[str, ...] = ("loop_busy_ratio", "io_idle_ratio", "bytes_in_per_s", "bytes_out_per_s")
FIGURES += ("leaders", "replicas")


def _epoch(iso: str) -> float:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def last_execution(actions: Path) -> dict[str, Any] | None:
    try:
        lines = actions.read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn line (AppendLog seals it off): the one before will do
        if isinstance(record, dict) and record.get("started_at") and record.get("finished_at"):
            return record
    return None


def _means(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"buckets": len(rows)}
    for k in FIGURES:
        vals = [float(r[k]) for r in rows if r.get(k) is not None]
        out[k] = round(sum(vals) / len(vals), 4) if vals else None
    return out


def table_effect(
    history: Sequence[Mapping[str, Any]], execution: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Per broker, its figures before and after ``execution`` (None without buckets on
    both sides)."""
    started, finished = _epoch(execution["started_at"]), _epoch(execution["finished_at"])
    times = sorted({float(r["bucket"]) for r in history})
    steps = [b - a for a, b in itertools.pairwise(times) if b > a]
    bucket_s = min(steps) if steps else 0.0
    before = [r for r in history if float(r["bucket"]) + bucket_s <= started]
    after = [r for r in history if float(r["bucket"]) >= finished]
    if not before or not after:
        return None
    brokers = sorted({int(r["broker_id"]) for r in history})
    return {
        "execution_started_at": execution["started_at"],
        "execution_finished_at": execution["finished_at"],
        "status": execution.get("status"),
        "brokers": {
            b: {
                "before": _means([r for r in before if int(r["broker_id"]) == b]),
                "after": _means([r for r in after if int(r["broker_id"]) == b]),
            }
            for b in brokers
        },
    }


def render_effect(effect: Mapping[str, Any]) -> str:
    out = [
        f"effect of the plan applied {effect['execution_started_at']} .. "
        f"{effect['execution_finished_at']} ({effect['status']}), from the brokers table:"
    ]
    for b, sides in effect["brokers"].items():
        x, y = sides["before"], sides["after"]
        out.append(
            f"  broker {b}: "
            + ", ".join(f"{k} {x.get(k)} -> {y.get(k)}" for k in FIGURES)
            + f" ({x['buckets']} -> {y['buckets']} buckets)"
        )
    return "\n".join(out)
