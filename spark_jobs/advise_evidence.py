"""The pool advisor's inputs: its thresholds, the trend tables it reads and each pool's
evidence (the buckets since the pool last changed size), and what a recommendation is.

Owns ``Thresholds`` (every number the rules compare against; ``python -m
spark_jobs.advise`` has one flag per field), ``Recommendation``, ``PoolEvidence``,
``Tables`` (the trends job's ``requests`` and ``pools`` tables, read with pyarrow) and the
per-bucket request figures (queue and handler time, over all request types).
Must not: decide anything (``advise_rules`` does), import Spark or the broker.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ADVICE_SCHEMA = "trio-broker.advice/1"
IO = "num.io.threads"
NETWORK = "num.network.threads"
SCALE_OUT = "brokers"  # advice to add a broker: no setting of this one can help

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Thresholds:
    io_idle_low: float = 0.2  # raise io threads below this mean idle ratio ...
    queue_high_ms: float = 5.0  # ... if the mean queue time is at least this
    queue_to_local: float = 2.0  # ... or at least this many times the handler (local) time
    queue_rise_ms_per_min: float = 1.0  # ... or rises at least this fast
    io_idle_high: float = 0.8  # lower only if every bucket is idler than this
    net_idle_low: float = 0.3  # raise network threads below this mean idle ratio
    net_idle_high: float = 0.8
    target_idle: float = 0.5  # size a raise for this idle ratio
    max_step: float = 2.0  # a step at most doubles (or halves) a pool
    min_io: int = 1
    max_io: int = 64
    min_network: int = 1
    max_network: int = 32
    loop_busy_high: float = 0.9  # the event loop this busy: CPU-bound, no pool change helps
    lookback_s: float = 600.0
    min_buckets: int = 3
    cooldown_s: float = 600.0
    client_wait_to_queue: float = 2.0  # client-bound: a producer's requests wait (its queue
    client_wait_min_ms: float = 1.0  # and the wire) this many times the broker's queue time,
    # at least this long, while no pool is busy enough to raise (io_idle_low, net_idle_low)


@dataclass
class Recommendation:
    broker_id: int
    setting: str
    pool: str
    listener: str | None
    action: str  # "raise" or "lower"
    current: int
    recommended: int
    reason: str
    evidence: dict[str, Any]
    # or "held", "applied", "skipped", "failed"; "advice" for what only an operator can do
    status: str = "recommended"
    note: str | None = None


@dataclass
class PoolEvidence:
    """One pool's buckets since it last changed size (the last ``lookback_s`` of them)."""

    pool: str
    size: int
    times: list[int]  # bucket starts, epoch seconds
    bucket_s: int
    idle: list[float]
    busy: list[float]
    queue_depth: list[float]
    queue_ms: list[float | None] = field(default_factory=list)  # io only: mean, all types
    queue_p99_ms: list[float | None] = field(default_factory=list)
    top_request: str | None = None

    @property
    def idle_mean(self) -> float:
        return sum(self.idle) / len(self.idle)

    @property
    def idle_min(self) -> float:
        return min(self.idle)

    def span(self) -> dict[str, str]:
        return {"from": _iso(self.times[0]), "to": _iso(self.times[-1] + self.bucket_s)}

    def queue_mean(self) -> float | None:
        values = [q for q in self.queue_ms if q is not None]
        return sum(values) / len(values) if values else None

    def queue_slope(self) -> float | None:
        """Least squares slope of the queue time, ms per minute (3 points at least)."""
        pts = [
            (t / 60.0, q) for t, q in zip(self.times, self.queue_ms, strict=True) if q is not None
        ]
        return _slope(pts)


def _slope(points: Sequence[tuple[float, float]]) -> float | None:
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def _iso(epoch: float) -> str:
    t = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def _epoch(t: Any) -> int:
    if isinstance(t, dt.datetime):
        return int(t.timestamp())  # pyarrow hands out aware UTC datetimes
    return int(t)


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


# ---------------------------------------------------------------------- reading


def read_table(path: Path) -> list[dict[str, Any]]:
    """Rows of a Parquet table directory (hive partitions, e.g. ``date=``), or none."""
    import pyarrow.parquet as pq

    if not path.exists():
        return []
    return pq.read_table(path, partitioning="hive").to_pylist()  # type: ignore[no-any-return]


@dataclass
class Tables:
    requests: list[dict[str, Any]]
    pools: list[dict[str, Any]]

    @classmethod
    def read(cls, trends_dir: Path) -> Tables:
        return cls(read_table(trends_dir / "requests"), read_table(trends_dir / "pools"))


@dataclass
class RequestFigures:
    """One broker's requests per bucket, over all request types (weighted by requests)."""

    queue_ms: dict[int, float]  # mean queue time
    local_ms: dict[int, float]  # mean local (handler) time
    queue_p99_ms: dict[int, float]  # the worst type's p99
    volume: dict[str, float]  # requests per type


def _request_figures(requests: Iterable[Row], broker_id: int) -> RequestFigures:
    sums: dict[str, dict[int, list[float]]] = {
        "queue": defaultdict(lambda: [0.0, 0.0]),
        "local": defaultdict(lambda: [0.0, 0.0]),
    }
    p99: dict[int, float] = {}
    volume: dict[str, float] = defaultdict(float)
    for r in requests:
        if r["broker_id"] != broker_id:
            continue
        t = _epoch(r["time"])
        n = float(r.get("requests") or 0)
        volume[str(r["request"])] += n
        if n <= 0:
            continue
        for kind, acc in sums.items():
            if r.get(f"{kind}_mean_ms") is not None:
                acc[t][0] += r[f"{kind}_mean_ms"] * n
                acc[t][1] += n
        if r.get("queue_p99_ms") is not None:
            p99[t] = max(p99.get(t, 0.0), r["queue_p99_ms"])

    def means(acc: dict[int, list[float]]) -> dict[int, float]:
        return {t: s / n for t, (s, n) in acc.items() if n > 0}

    return RequestFigures(means(sums["queue"]), means(sums["local"]), p99, dict(volume))


def pool_evidence(
    pools: Iterable[Row], broker_id: int, pool: str, lookback_s: float
) -> PoolEvidence | None:
    rows = sorted(
        (r for r in pools if r["broker_id"] == broker_id and r["pool"] == pool),
        key=lambda r: _epoch(r["time"]),
    )
    if not rows:
        return None
    size = int(rows[-1]["size"])
    stable: list[Row] = []
    for r in reversed(rows):  # back to the last change of size
        if r["size_min"] != size or r["size_max"] != size:
            break
        stable.append(r)
    stable.reverse()
    if not stable:
        return PoolEvidence(pool, size, [], int(rows[-1]["bucket_s"]), [], [], [])
    last = _epoch(stable[-1]["time"])
    bucket_s = int(stable[-1]["bucket_s"])
    chosen = [r for r in stable if _epoch(r["time"]) > last - lookback_s + bucket_s - 1]
    chosen = [r for r in chosen if r.get("idle_ratio") is not None]
    return PoolEvidence(
        pool=pool,
        size=size,
        times=[_epoch(r["time"]) for r in chosen],
        bucket_s=bucket_s,
        idle=[float(r["idle_ratio"]) for r in chosen],
        busy=[float(r.get("busy_avg") or size * (1 - r["idle_ratio"])) for r in chosen],
        queue_depth=[float(r.get("queue_size_avg") or 0.0) for r in chosen],
    )
