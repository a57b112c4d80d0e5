"""The dashboard's clients panel: the clients pushing KIP-714 telemetry, from rows of the
trends job's ``clients`` and ``produce_path`` tables over the last trend window.

Owns: ``build_clients``: per client id, its kind, software, pushes and figures over the
window, and two rankings of the top ``TOP_CLIENTS``:

- ``clients``, by produce latency (producers first, then the consumers by fetch latency),
  with a producer's time split: its queue, the wire, the broker's queue and the rest of
  the broker's time;
- ``by_bytes``, by the bytes the broker received from and sent to the client's
  connections (``broker_bytes_in`` + ``broker_bytes_out``, summed over the window: the
  broker's count, not a metric the client pushed), with the client's own byte counts
  beside them where it pushes them (the Java client's ``outgoing.byte.total`` and
  ``incoming.byte.total``; librdkafka 2.16 pushes none).

Each entry also has ``reported``: what the client reports of itself that bears on its
settings, and nothing more: its push interval (the subscription's, which the broker told
it), and where pushed (the Java producer) its mean and largest batch size (bounded by its
``batch.size``), mean in-flight requests (bounded by ``max.in.flight.requests.per.
connection`` per connection) and ``buffer.total.bytes`` (its ``buffer.memory``). No
KIP-714 client pushes its configuration, so the settings themselves are not shown:
``not_reported`` says so on the page.
Must not: use Spark (rows in, a dict out), or fill a figure the rows do not hold.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TOP_CLIENTS = 10
NOT_REPORTED = (
    "No KIP-714 client pushes its configuration: linger.ms, batch.size, acks, "
    "compression.type and max.in.flight.requests.per.connection as set cannot be shown. "
    "Shown is what clients report: their software, the push interval their subscription "
    "gave them and, where pushed (Kafka's Java producer), batch.size.avg and .max (a "
    "batch fills up to batch.size, unless one record is larger), requests.in.flight (at "
    "most max.in.flight.requests.per.connection on each connection) and "
    "buffer.total.bytes (its buffer.memory); librdkafka 2.16 pushes none of these, nor "
    "any byte count"
)
BYTES_NOTE = (
    "Broker bytes in and out: the broker's own count of what it received from and sent "
    "to the client's connections (same client id, software and address), between scrapes "
    "in a row; in a cluster, only the broker the client pushes its telemetry to counts "
    "it. Not a metric the client pushed"
)

Row = Mapping[str, Any]


def _epoch(t: Any) -> int:
    return int(t.timestamp()) if isinstance(t, dt.datetime) else int(t)


def _values(xs: Iterable[Any]) -> list[float]:
    return [float(x) for x in xs if x is not None]


def _mean(xs: Iterable[Any]) -> float | None:
    vs = _values(xs)
    return round(sum(vs) / len(vs), 3) if vs else None


def _sum(xs: Iterable[Any]) -> int | None:
    vs = _values(xs)
    return int(sum(vs)) if vs else None


def _max(xs: Iterable[Any]) -> float | None:
    vs = _values(xs)
    return max(vs) if vs else None


def _recent(rows: Sequence[Row], window_s: int) -> list[Row]:
    if not rows:
        return []
    last = max(_epoch(r["time"]) for r in rows)
    return [r for r in rows if _epoch(r["time"]) > last - window_s]


def _reported(mine: Sequence[Row]) -> dict[str, Any]:
    latest = max(mine, key=lambda r: _epoch(r["time"]))
    intervals = [r for r in mine if r.get("push_interval_ms") is not None]
    last_interval = max(intervals, key=lambda r: _epoch(r["time"])) if intervals else latest
    return {
        "push_interval_ms": last_interval.get("push_interval_ms"),
        "batch_size_avg": _mean(r.get("batch_size_avg") for r in mine),
        "batch_size_max": _max(r.get("batch_size_max") for r in mine),
        "in_flight_avg": _mean(r.get("in_flight_avg") for r in mine),
        "buffer_total_bytes": _max(r.get("buffer_total_bytes") for r in mine),
    }


def _entry(cid: str, mine: Sequence[Row], split: Sequence[Row]) -> dict[str, Any]:
    kinds = sorted({k for r in mine for k in str(r["kind"] or "").split(",") if k})
    return {
        "client_id": cid,
        "kind": ",".join(kinds),
        "software": next(
            (f"{r['software_name']} {r['software_version']}" for r in mine if r["software_name"]),
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
        "broker_bytes_in": _sum(r.get("broker_bytes_in") for r in mine),
        "broker_bytes_out": _sum(r.get("broker_bytes_out") for r in mine),
        "client_outgoing_bytes": _sum(r.get("client_outgoing_bytes") for r in mine),
        "client_incoming_bytes": _sum(r.get("client_incoming_bytes") for r in mine),
        "client_outgoing_byte_rate": _mean(r.get("client_outgoing_byte_rate") for r in mine),
        "client_incoming_byte_rate": _mean(r.get("client_incoming_byte_rate") for r in mine),
        "reported": _reported(mine),
    }


def build_clients(
    clients: Sequence[Row], produce_path: Sequence[Row], *, window_s: int
) -> dict[str, Any]:
    """The ``clients`` part of ``dashboard.json``."""
    rows, path = _recent(clients, window_s), _recent(produce_path, window_s)
    out = []
    for cid in sorted({str(r["client_id"]) for r in rows}):
        mine = [r for r in rows if r["client_id"] == cid]
        out.append(_entry(cid, mine, [p for p in path if p["client_id"] == cid]))

    def by_latency(c: dict[str, Any]) -> tuple[bool, float, float]:
        produce, fetch = c["produce_latency_ms"], c["fetch_latency_ms"]
        return (produce is None, -(produce or 0.0), -(fetch or 0.0))

    def total_bytes(c: dict[str, Any]) -> int:
        return (c["broker_bytes_in"] or 0) + (c["broker_bytes_out"] or 0)

    # a client known by its bytes alone (no push in the window) has no latency to rank
    pushed = [c for c in out if c["pushes"]]
    counted = [c for c in out if c["broker_bytes_in"] is not None]
    return {
        "window_s": window_s,
        "clients": sorted(pushed, key=by_latency)[:TOP_CLIENTS],
        "by_bytes": sorted(counted, key=lambda c: (-total_bytes(c), c["client_id"]))[:TOP_CLIENTS],
        "not_reported": NOT_REPORTED,
        "bytes_note": BYTES_NOTE,
    }
