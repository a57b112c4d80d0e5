"""The advisor's clients' side: is a produce request's time lost in the clients or in the
broker? From the trends job's ``produce_path`` table (the clients' KIP-714 telemetry joined
with the broker's Produce times).

Owns: ``client_findings`` (the ``clients`` part of the advice: per producing client id, over
its last ``lookback_s`` of buckets, the mean record queue time, request latency, wire time
and broker Produce times; its requests' wait on the client's side, ``client_wait_ms`` =
record queue time + wire time (librdkafka's queue time is its output buffer's; the wire
holds the wait for the broker to read a request pipelined behind another on the
connection); and, when that wait is at least ``client_wait_to_queue`` times the broker's
queue time and ``client_wait_min_ms`` while no pool is busy enough to raise (each idle
at least ``io_idle_low`` or ``net_idle_low``, and no raise recommended), a
``client-bound`` finding naming the producer settings that help) and ``client_evidence``
and ``client_reason`` (the clients' figures added to an io raise as evidence, and a clause
of its reason citing them: their produce latency and own wait against the broker's queue).
A client-bound finding is advice for the clients' operators: it changes no pool and is
never applied.
Where no client pushed telemetry it says so, and the broker's advice stands as it is.
Must not: import Spark or the broker, or change a recommendation's action or size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spark_jobs.advise_evidence import Thresholds, _epoch, _iso, _r

CLIENT_SETTINGS = (
    "linger.ms",
    "batch.size",
    "max.in.flight.requests.per.connection",
    "partitions per producer",
)
NO_TELEMETRY = (
    "no client pushed telemetry (KIP-714: a CLIENT_METRICS subscription that matches them, "
    "and the scraper's *.clients.ndjson): the advice below is from the broker's side only"
)


def _mean(xs: Sequence[float | None]) -> float | None:
    vs = [x for x in xs if x is not None]
    return sum(vs) / len(vs) if vs else None


def _window(rows: Sequence[Mapping[str, Any]], lookback_s: float) -> list[Mapping[str, Any]]:
    if not rows:
        return []
    last = max(_epoch(r["time"]) for r in rows)
    return [r for r in rows if _epoch(r["time"]) > last - lookback_s]


def client_figures(path_rows: Sequence[Mapping[str, Any]], th: Thresholds) -> list[dict[str, Any]]:
    """Per producing client id: its end-to-end figures over the last ``lookback_s``."""
    out = []
    rows = _window(path_rows, th.lookback_s)
    for cid in sorted({str(r["client_id"]) for r in rows}):
        mine = sorted((r for r in rows if r["client_id"] == cid), key=lambda r: _epoch(r["time"]))
        queue = _mean([r["client_queue_ms"] for r in mine])
        request = _mean([r["client_request_ms"] for r in mine])
        joined = [r for r in mine if r["broker_total_ms"] is not None]
        broker = _mean([r["broker_total_ms"] for r in joined])
        end_to_end = (queue or 0.0) + (request or 0.0)
        share = None
        if broker is not None and end_to_end > 0:
            share = max(0.0, end_to_end - broker) / end_to_end
        wire = _mean([r["wire_ms"] for r in joined])
        wait = None if wire is None else (queue or 0.0) + max(0.0, wire)
        b = mine[-1]["bucket_s"]
        out.append(
            {
                "client_id": cid,
                "from": _iso(_epoch(mine[0]["time"])),
                "to": _iso(_epoch(mine[-1]["time"]) + int(b)),
                "buckets": len(mine),
                "client_queue_ms": _r(queue),
                "client_request_ms": _r(request),
                "wire_ms": _r(wire),
                "client_wait_ms": _r(wait),
                "broker_queue_ms": _r(_mean([r["broker_queue_ms"] for r in joined])),
                "broker_local_ms": _r(_mean([r["broker_local_ms"] for r in joined])),
                "broker_total_ms": _r(broker),
                "client_share": _r(share),
            }
        )
    return out


def client_findings(
    path_rows: Sequence[Mapping[str, Any]],
    pools: Sequence[Mapping[str, Any]],
    raised: bool,
    th: Thresholds,
) -> dict[str, Any]:
    """The ``clients`` part of the advice. ``pools`` are the advisor's pool assessments
    (``idle_ratio_mean`` per broker and pool); ``raised``: it recommends more threads."""
    figures = client_figures(path_rows, th)
    if not figures:
        return {"status": "no-telemetry", "text": NO_TELEMETRY, "clients": [], "findings": []}
    idle = {
        str(p["pool"]): float(p["idle_ratio_mean"])
        for p in pools
        if p["pool"] != "loop" and p.get("idle_ratio_mean") is not None
    }
    low = {k: th.io_idle_low if k == "io" else th.net_idle_low for k in idle}
    pools_idle = bool(idle) and not raised and all(v >= low[k] for k, v in idle.items())
    findings = []
    for f in figures:
        wait, queue = f["client_wait_ms"], f["broker_queue_ms"]
        if f["buckets"] < th.min_buckets or wait is None or queue is None or not pools_idle:
            continue
        if wait < th.client_wait_min_ms or wait < th.client_wait_to_queue * queue:
            continue
        findings.append(
            {
                "finding": "client-bound",
                "client_id": f["client_id"],
                "settings": list(CLIENT_SETTINGS),
                "text": (
                    f"client-bound: {f['client_id']}'s produce requests waited {wait} ms on "
                    f"the client's side (its queue {f['client_queue_ms']} ms, the wire "
                    f"{f['wire_ms']} ms) against {queue} ms in the broker's queue (of "
                    f"{f['broker_total_ms']} ms there), whose pools were not busy (io idle "
                    f"{idle.get('io', 0):.0%}): more broker threads would not help. "
                    "Tune the producers: linger.ms and batch.size (fewer, larger requests), "
                    "max.in.flight.requests.per.connection, or more partitions per producer"
                ),
                "evidence": {**f, "pools_idle_ratio_mean": {k: _r(v) for k, v in idle.items()}},
                "status": "advice",
                "note": "for the clients' operators: no pool is changed",
            }
        )
    status = "client-bound" if findings else "broker-side"
    return {"status": status, "clients": figures, "findings": findings}


EVIDENCE_KEYS = (
    "buckets",
    "client_request_ms",
    "client_queue_ms",
    "wire_ms",
    "client_wait_ms",
    "broker_queue_ms",
    "broker_local_ms",
    "broker_total_ms",
)


def client_evidence(path_rows: Sequence[Mapping[str, Any]], th: Thresholds) -> dict[str, Any]:
    """The producing clients' latency, for an io raise's evidence: per client id its produce
    request latency, its own queue, the wire and its wait (queue + wire), against the
    brokers' Produce queue, local and total time of the same buckets."""
    return {f["client_id"]: {k: f[k] for k in EVIDENCE_KEYS} for f in client_figures(path_rows, th)}


def client_reason(evidence: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One clause for an io raise's reason: what the producing clients saw, against the
    broker's queue (means over the client ids that have both figures); None without them."""
    both = [
        e
        for e in evidence.values()
        if e["client_request_ms"] is not None and e["broker_queue_ms"] is not None
    ]
    if not both:
        return None
    request = _mean([e["client_request_ms"] for e in both]) or 0.0
    queue = _mean([e["broker_queue_ms"] for e in both]) or 0.0
    wait = _mean([e["client_wait_ms"] for e in both])
    own = "" if wait is None else f", {wait:.1f} ms on their own side (queue and wire)"
    n = len(both)
    return (
        f"the clients' telemetry ({n} producer{'' if n == 1 else 's'}): {request:.1f} ms per "
        f"produce request, against {queue:.1f} ms in the broker's queue{own}"
    )
