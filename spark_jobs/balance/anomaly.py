"""Anomaly detection (off unless the ``detect`` command runs): when the cluster needs a
plan without an operator asking for one, as Cruise Control's anomaly detector decides.

Owns ``Thresholds`` and ``detect``, which finds:

- **a broker down**: a broker that holds replicas (or is in the tables) but is not live,
  for at least ``down_after_s`` since the newest bucket it appears in (counted from the
  wall clock when the cluster state is live, from the tables' newest bucket otherwise;
  a broker absent from the tables' history is taken as down for longer);
- **a goal violated for a while**: a soft goal whose band some broker was out of in each
  of the newest ``violated_buckets`` buckets of the ``brokers`` table (the figures a
  bucket row has: replicas, leaders, bytes in and out with replication, loop busy, io
  busy);
- **a disk too full**: a broker whose disk, in its newest bucket, is more than
  ``disk_alarm`` used.

and the command whose plan answers them: ``fix-offline`` when a broker is down, else
``balance``.
Must not: plan or apply (the command line does, and applies only with ``--self-heal``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .goals import band
from .model import ClusterState, Settings
from .monitor import Observed

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Thresholds:
    down_after_s: float = 300.0
    violated_buckets: int = 5
    disk_alarm: float = 0.85


def _sum(*names: str) -> Callable[[Row], float | None]:
    def value(r: Row) -> float | None:
        vals = [r.get(n) for n in names]
        return None if vals[0] is None else sum(float(v or 0) for v in vals)

    return value


def _io_busy(r: Row) -> float | None:
    return None if r.get("io_idle_ratio") is None else 1.0 - float(r["io_idle_ratio"])


# goal name -> (its figure in a brokers row, whole numbers?, the floor's setting)
HISTORY_GOALS: dict[str, tuple[Callable[[Row], float | None], bool, str | None]] = {
    "replica count balance": (_sum("replicas"), True, None),
    "leader count balance": (_sum("leaders"), True, None),
    "bytes-in balance": (_sum("bytes_in_per_s", "replication_bytes_in_per_s"), False, "bytes"),
    "bytes-out balance": (_sum("bytes_out_per_s", "replication_bytes_out_per_s"), False, "bytes"),
    "event-loop busy balance": (_sum("loop_busy_ratio"), False, "busy"),
    "io pool balance": (_io_busy, False, "busy"),
}


def _fmt(v: float, integer: bool) -> str:
    return f"{v:.0f}" if integer else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")


def _violated(
    rows: list[Row], fn: Callable[[Row], float | None], integer: bool, t: float, low: float
) -> list[str]:
    values = {int(r["broker_id"]): fn(r) for r in rows}
    known = {b: v for b, v in values.items() if v is not None}
    lo, hi, mean = band(list(known.values()), integer, t)
    if not known or mean <= low or mean <= 0:
        return []
    return [
        f"broker {b} at {_fmt(v, integer)} ({'above' if v > hi else 'below'} "
        f"{_fmt(hi if v > hi else lo, integer)})"
        for b, v in sorted(known.items())
        if v > hi + 1e-12 or v < lo - 1e-12
    ]


def detect(
    observed: Observed,
    state: ClusterState,
    settings: Settings,
    th: Thresholds,
    now: float | None = None,
) -> tuple[list[dict[str, Any]], str]:
    anomalies: list[dict[str, Any]] = []
    reference = (now or time.time()) if state.live else (observed.window_to or 0.0)
    seen: dict[int, float] = {}
    for r in observed.history:
        seen[int(r["broker_id"])] = max(seen.get(int(r["broker_id"]), 0.0), float(r["bucket"]))
    for ob in observed.brokers:
        seen[ob.broker_id] = max(seen.get(ob.broker_id, 0.0), ob.last_bucket)
    for b in state.dead():
        down_for = None if b not in seen else reference - seen[b]
        if down_for is None or down_for >= th.down_after_s:
            since = "not in the tables' history" if down_for is None else f"{down_for:.0f} s"
            anomalies.append(
                {
                    "kind": "broker down",
                    "broker_id": b,
                    "down_for_s": None if down_for is None else round(down_for, 1),
                    "detail": f"broker {b} is not live ({since}; threshold "
                    f"{th.down_after_s:.0f} s)",
                }
            )
    by_bucket: dict[float, list[Row]] = defaultdict(list)
    for r in observed.history:
        by_bucket[float(r["bucket"])].append(r)
    newest = sorted(by_bucket)[-th.violated_buckets :] if th.violated_buckets > 0 else []
    if len(newest) >= th.violated_buckets > 0:
        for name, (fn, integer, floor) in HISTORY_GOALS.items():
            low = {None: 0.0, "bytes": settings.low_bytes_per_s, "busy": settings.low_busy}[floor]
            each = [
                _violated(by_bucket[t], fn, integer, settings.balance_threshold, low)
                for t in newest
            ]
            if all(each):
                anomalies.append(
                    {
                        "kind": "goal violated",
                        "goal": name,
                        "buckets": len(newest),
                        "detail": f"{name} violated in each of the last {len(newest)} "
                        f"bucket(s); in the newest: " + "; ".join(each[-1][:3]),
                    }
                )
    for ob in observed.brokers:
        used, total = ob.get("disk_used_bytes"), ob.get("disk_total_bytes")
        if used is not None and total and float(used) / float(total) > th.disk_alarm:
            anomalies.append(
                {
                    "kind": "disk too full",
                    "broker_id": ob.broker_id,
                    "detail": f"broker {ob.broker_id}'s disk is {float(used) / float(total):.0%} "
                    f"used (alarm above {th.disk_alarm:.0%})",
                }
            )
    down = any(a["kind"] == "broker down" for a in anomalies)
    return anomalies, ("fix-offline" if down else "balance")
