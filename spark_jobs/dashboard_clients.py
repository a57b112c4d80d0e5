"""The dashboard's clients panel: the clients pushing KIP-714 telemetry, from rows of the
trends job's ``clients`` and ``produce_path`` tables over the last trend window.

Owns: ``build_clients``: per client id (the top ``TOP_CLIENTS`` by produce latency, then
the consumers by fetch latency), its kind, software, pushes and mean figures over the
window, and for a producer its time split: its queue, the wire, the broker's queue and the
rest of the broker's time. Bytes and the clients' settings are not in it: librdkafka
2.16 pushes neither (``not_pushed`` says so on the page).
Must not: use Spark (rows in, a dict out).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TOP_CLIENTS = 10
NOT_PUSHED = "bytes and client settings: librdkafka 2.16 pushes neither"

Row = Mapping[str, Any]


def _epoch(t: Any) -> int:
    return int(t.timestamp()) if isinstance(t, dt.datetime) else int(t)


def _mean(xs: Iterable[Any]) -> float | None:
    vs = [float(x) for x in xs if x is not None]
    return round(sum(vs) / len(vs), 3) if vs else None


def _recent(rows: Sequence[Row], window_s: int) -> list[Row]:
    if not rows:
        return []
    last = max(_epoch(r["time"]) for r in rows)
    return [r for r in rows if _epoch(r["time"]) > last - window_s]


def build_clients(
    clients: Sequence[Row], produce_path: Sequence[Row], *, window_s: int
) -> dict[str, Any]:
    """The ``clients`` part of ``dashboard.json``."""
    rows, path = _recent(clients, window_s), _recent(produce_path, window_s)
    out = []
    for cid in sorted({str(r["client_id"]) for r in rows}):
        mine = [r for r in rows if r["client_id"] == cid]
        split = [p for p in path if p["client_id"] == cid]
        kinds = sorted({k for r in mine for k in str(r["kind"] or "").split(",") if k})
        out.append(
            {
                "client_id": cid,
                "kind": ",".join(kinds),
                "software": next(
                    (
                        f"{r['software_name']} {r['software_version']}"
                        for r in mine
                        if r["software_name"]
                    ),
                    None,
                ),
                "pushes": sum(int(r["pushes"] or 0) for r in mine),
                "produce_latency_ms": _mean(r["produce_latency_avg_ms"] for r in mine),
                "record_queue_ms": _mean(r["record_queue_time_avg_ms"] for r in mine),
                "fetch_latency_ms": _mean(r["fetch_latency_avg_ms"] for r in mine),
                "commit_latency_ms": _mean(r["commit_latency_avg_ms"] for r in mine),
                "wire_ms": _mean(p["wire_ms"] for p in split),
                "broker_queue_ms": _mean(p["broker_queue_ms"] for p in split),
                "broker_total_ms": _mean(p["broker_total_ms"] for p in split),
            }
        )

    def rank(c: dict[str, Any]) -> tuple[bool, float, float]:
        produce, fetch = c["produce_latency_ms"], c["fetch_latency_ms"]
        return (produce is None, -(produce or 0.0), -(fetch or 0.0))

    out.sort(key=rank)
    return {"window_s": window_s, "clients": out[:TOP_CLIENTS], "not_pushed": NOT_PUSHED}
