"""The tuning advisor: trend tables in, pool size recommendations out (and applied, if asked).

    python -m spark_jobs.advise --in TRENDS [--apply --admin URL [--token T]]

Owns: the rules, their damping, the advisor's state and what it writes. It reads the
``requests`` and ``pools`` tables of the trends job (with pyarrow: no Spark needed) and
follows the reasoning behind Kafka's two pools:

- the event loop is saturated (busy at least ``--loop-busy-high``, 0.9, over the buckets):
  the broker is CPU-bound (one CPU): no pool change, advice to add a broker (status
  ``advice``: never applied);
- requests wait (queue time high: over ``--queue-high-ms`` or several times the time to
  serve one, ``--queue-to-local``; or rising) while the io threads are rarely idle
  (storage work queues for a thread): raise ``num.io.threads`` (and say so when the
  network threads are idle enough not to be the cause);
- a listener's network processors are rarely idle: raise its ``num.network.threads``;
- both pools mostly idle and nothing waiting: lower both.

Damping, so that advice never flaps: the evidence is only the buckets since the pool last
changed size (at least ``--min-buckets`` of them, at most ``--lookback-seconds``); raising
uses the mean idle ratio, lowering needs every bucket above a much higher threshold
(hysteresis: 0.2 to raise, 0.8 to lower, by default); a step at most doubles or halves a
pool, within floor and ceiling (and always within 1..256); and after a change it applied,
the advisor holds that setting for ``--cooldown-seconds`` (recorded in
``TRENDS/advisor/state.json``).

Each recommendation names the setting, the current and recommended value, the evidence
(figures and the time range they cover) and a one-line reason. Written to
``TRENDS/recommendations.json`` (the dashboard shows it); ``--apply`` resizes the pools
through the admin API (``PUT /v1/pools/io``, ``PUT /v1/pools/network/<listener>``), only if
the live size is still the one the advice started from, and appends what it did to
``TRENDS/advisor/actions.jsonl``. For changes applied earlier it reports their effect:
queue time and idle ratio before and after.
Must not: import Spark or the broker.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python spark_jobs/advise.py: find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_jobs.durable import AppendLog, write_json_atomic
from spark_jobs.fetch import token_from_env

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


# ----------------------------------------------------------------------- rules


# Every size the advisor proposes is within what the admin API accepts.
SIZE_FLOOR, SIZE_CEILING = 1, 256


def _bounded(size: int, floor: int, ceiling: int) -> int:
    return max(SIZE_FLOOR, floor, min(size, ceiling, SIZE_CEILING))


def _raise_to(size: int, busy: float, waiting: float, th: Thresholds, ceiling: int) -> int:
    want = math.ceil(max(busy / (1 - th.target_idle), busy + waiting))
    return _bounded(max(size + 1, min(want, math.floor(size * th.max_step))), 1, ceiling)


def _lower_to(size: int, busy: float, th: Thresholds, floor: int) -> int:
    """A smaller size, or ``size`` itself when the floor (never below 1) allows none."""
    want = math.ceil(busy / (1 - th.target_idle))
    to = min(size - 1, max(want, math.ceil(size / th.max_step)))
    return min(size, _bounded(to, floor, SIZE_CEILING))


def advise_broker(
    tables: Tables, broker_id: int, th: Thresholds
) -> tuple[list[Recommendation], list[dict[str, Any]]]:
    """Recommendations for one broker, and the assessment of each of its pools."""
    recs: list[Recommendation] = []
    assessed: list[dict[str, Any]] = []
    io = pool_evidence(tables.pools, broker_id, "io", th.lookback_s)
    listeners = sorted(
        {
            str(r["listener"])
            for r in tables.pools
            if r["broker_id"] == broker_id and r.get("listener")
        }
    )
    nets = {
        lis: ev
        for lis in listeners
        if (ev := pool_evidence(tables.pools, broker_id, f"network:{lis}", th.lookback_s))
    }
    if io is None:
        return recs, assessed
    figures = _request_figures(tables.requests, broker_id)
    io.queue_ms = [figures.queue_ms.get(t) for t in io.times]
    io.queue_p99_ms = [figures.queue_p99_ms.get(t) for t in io.times]
    local = [figures.local_ms[t] for t in io.times if t in figures.local_ms]
    local_mean = sum(local) / len(local) if local else None
    volume = figures.volume
    io.top_request = max(volume, key=lambda k: volume[k]) if volume else None

    def enough(ev: PoolEvidence) -> bool:
        return len(ev.times) >= th.min_buckets

    def net_figures() -> dict[str, Any]:
        return {lis: _r(ev.idle_mean) for lis, ev in nets.items() if ev.times}

    for ev in (io, *nets.values()):
        assessed.append(
            {
                "broker_id": broker_id,
                "pool": ev.pool,
                "size": ev.size,
                "buckets": len(ev.times),
                "idle_ratio_mean": _r(ev.idle_mean) if ev.times else None,
                **(ev.span() if ev.times else {}),
                "enough_data": enough(ev),
            }
        )
    if not enough(io):
        return recs, assessed

    loop = pool_evidence(tables.pools, broker_id, "loop", th.lookback_s)
    if loop is not None and enough(loop):
        loop_busy = 1.0 - loop.idle_mean
        assessed.append(
            {
                "broker_id": broker_id,
                "pool": "loop",
                "size": 1,
                "buckets": len(loop.times),
                "idle_ratio_mean": _r(loop.idle_mean),
                **loop.span(),
                "enough_data": True,
            }
        )
        if loop_busy >= th.loop_busy_high:
            volume = figures.volume
            top = sorted(volume, key=lambda k: -volume[k])[:3]
            recs.append(
                Recommendation(
                    broker_id,
                    SCALE_OUT,
                    "loop",
                    None,
                    "scale-out",
                    1,
                    2,
                    f"CPU-bound: the event loop was {loop_busy:.0%} busy; it is one CPU, so "
                    "no pool size helps. Add a broker and move the leadership of about half "
                    "of this broker's partitions to it (the busiest topics first: "
                    "kafka-reassign-partitions / kafka-leader-election), or lower the work "
                    "per request (larger batches: linger.ms, batch.size)",
                    {
                        **loop.span(),
                        "buckets": len(loop.times),
                        "event_loop_busy_ratio_mean": _r(loop_busy),
                        "io_idle_ratio_mean": _r(io.idle_mean),
                        "busiest_requests": top,
                        "network_idle_ratio_mean": {
                            lis: _r(ev.idle_mean) for lis, ev in nets.items() if ev.times
                        },
                    },
                    status="advice",
                    note="applied by an operator, not by --apply",
                )
            )
            return recs, assessed

    q_mean, q_slope = io.queue_mean(), io.queue_slope()
    q_p99 = max((q for q in io.queue_p99_ms if q is not None), default=None)
    # High: long in absolute terms, or long next to the time a handler takes to serve a
    # request (requests wait longer than they are worked on: RequestQueueTimeMs against
    # LocalTimeMs), which does not depend on how fast this machine's disk is.
    high = q_mean is not None and (
        q_mean >= th.queue_high_ms
        or (local_mean is not None and local_mean > 0 and q_mean >= th.queue_to_local * local_mean)
    )
    rising = q_slope is not None and q_slope >= th.queue_rise_ms_per_min
    io_evidence = {
        **io.span(),
        "buckets": len(io.times),
        "io_idle_ratio_mean": _r(io.idle_mean),
        "io_idle_ratio_min": _r(io.idle_min),
        "io_busy_mean": _r(sum(io.busy) / len(io.busy)),
        "queue_time_ms_mean": _r(q_mean),
        "local_time_ms_mean": _r(local_mean),
        "queue_time_ms_p99_max": _r(q_p99),
        "queue_time_slope_ms_per_min": _r(q_slope),
        "request_queue_depth_mean": _r(sum(io.queue_depth) / len(io.queue_depth)),
        "busiest_request": io.top_request,
        "network_idle_ratio_mean": net_figures(),
    }
    nets_ok = all(ev.idle_mean >= th.net_idle_low for ev in nets.values() if ev.times)
    if io.idle_mean < th.io_idle_low and (high or rising):
        busy = sum(io.busy) / len(io.busy)
        waiting = sum(io.queue_depth) / len(io.queue_depth)
        to = _raise_to(io.size, busy, waiting, th, th.max_io)
        queue_says = "queue time"
        if q_mean is not None:
            queue_says = f"queue time {q_mean:.1f} ms"
            if local_mean:
                queue_says += f" ({q_mean / local_mean:.1f}x the time to serve one)"
        if rising and q_slope is not None:
            queue_says += f", rising {q_slope:+.1f} ms/min"
        net_says = (
            "network threads idle enough, not the cause"
            if nets_ok
            else "network threads busy too (see their advice)"
        )
        if io.size < th.max_io:
            recs.append(
                Recommendation(
                    broker_id,
                    IO,
                    "io",
                    None,
                    "raise",
                    io.size,
                    to,
                    f"storage work waits for an io thread: io threads {io.idle_mean:.0%} "
                    f"idle, {queue_says}; {net_says}",
                    io_evidence,
                )
            )
    for lis, ev in nets.items():
        if not enough(ev) or ev.idle_mean >= th.net_idle_low or ev.size >= th.max_network:
            continue
        busy = ev.size * (1 - ev.idle_mean)
        recs.append(
            Recommendation(
                broker_id,
                NETWORK,
                ev.pool,
                lis,
                "raise",
                ev.size,
                _raise_to(ev.size, busy, 0.0, th, th.max_network),
                f"{lis} network processors only {ev.idle_mean:.0%} idle: they are the bottleneck",
                {
                    **ev.span(),
                    "buckets": len(ev.times),
                    "network_idle_ratio_mean": _r(ev.idle_mean),
                    "network_idle_ratio_min": _r(ev.idle_min),
                    "io_idle_ratio_mean": _r(io.idle_mean),
                },
            )
        )
    all_idle = (
        io.idle_min >= th.io_idle_high
        and nets
        and all(enough(ev) and ev.idle_min >= th.net_idle_high for ev in nets.values())
        and not high
        and not rising
    )
    if all_idle:
        busy = sum(io.busy) / len(io.busy)
        to = _lower_to(io.size, busy, th, th.min_io)
        if to < io.size:
            recs.append(
                Recommendation(
                    broker_id,
                    IO,
                    "io",
                    None,
                    "lower",
                    io.size,
                    to,
                    f"io threads at least {io.idle_min:.0%} idle and network processors "
                    f"idle too, nothing waiting: fewer threads do",
                    io_evidence,
                )
            )
        for lis, ev in nets.items():
            to = _lower_to(ev.size, ev.size * (1 - ev.idle_mean), th, th.min_network)
            if to < ev.size:
                recs.append(
                    Recommendation(
                        broker_id,
                        NETWORK,
                        ev.pool,
                        lis,
                        "lower",
                        ev.size,
                        to,
                        f"{lis} network processors at least {ev.idle_min:.0%} idle and the "
                        f"io threads too: fewer threads do",
                        {
                            **ev.span(),
                            "buckets": len(ev.times),
                            "network_idle_ratio_min": _r(ev.idle_min),
                            "io_idle_ratio_min": _r(io.idle_min),
                        },
                    )
                )
    return recs, assessed


# ------------------------------------------------------------- state, cooldown


def _key(broker_id: int, setting: str, listener: str | None) -> str:
    return f"{broker_id}/{setting}" + (f"/{listener}" if listener else "")


@dataclass
class AdvisorState:
    """What the advisor applied before (``TRENDS/advisor/state.json``)."""

    path: Path
    changes: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> AdvisorState:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return cls(path)
        return cls(path, list(data.get("changes", [])))

    def save(self) -> None:
        write_json_atomic(self.path, {"changes": self.changes})

    def last_change(
        self, broker_id: int, setting: str, listener: str | None
    ) -> dict[str, Any] | None:
        key = _key(broker_id, setting, listener)
        found = [c for c in self.changes if c["key"] == key]
        return found[-1] if found else None


def hold_for_cooldown(
    recs: list[Recommendation], state: AdvisorState, now: dt.datetime, cooldown_s: float
) -> list[Recommendation]:
    out = []
    for rec in recs:
        last = state.last_change(rec.broker_id, rec.setting, rec.listener)
        if last is not None:
            until = dt.datetime.fromisoformat(last["at"].replace("Z", "+00:00")) + dt.timedelta(
                seconds=cooldown_s
            )
            if now < until:
                rec = replace(
                    rec,
                    status="held",
                    note=f"cooldown after the change {last['from']} -> {last['to']} at "
                    f"{last['at']}: until {_iso(until.timestamp())}",
                )
        out.append(rec)
    return out


def _side(
    rows: Sequence[Row], means: Mapping[int, float], size: int, at: float, after: bool
) -> dict[str, Any]:
    """Idle ratio and queue time over the buckets at ``size`` before or after ``at``."""
    chosen = [
        r
        for r in rows
        if r["size_min"] == size == r["size_max"]
        and (_epoch(r["time"]) >= at) == after
        and r.get("idle_ratio") is not None
    ]
    qs = [means[_epoch(r["time"])] for r in chosen if _epoch(r["time"]) in means]
    idle = [float(r["idle_ratio"]) for r in chosen]
    return {
        "buckets": len(chosen),
        "idle_ratio_mean": _r(sum(idle) / len(idle)) if idle else None,
        "queue_time_ms_mean": _r(sum(qs) / len(qs)) if qs else None,
    }


def effects(tables: Tables, state: AdvisorState) -> list[dict[str, Any]]:
    """For the last change of each setting: queue time and idle ratio before and after."""
    latest: dict[str, dict[str, Any]] = {}
    for c in state.changes:
        latest[c["key"]] = c
    out = []
    for c in latest.values():
        broker_id = c["broker_id"]
        at = dt.datetime.fromisoformat(c["at"].replace("Z", "+00:00")).timestamp()
        rows = [r for r in tables.pools if r["broker_id"] == broker_id and r["pool"] == c["pool"]]
        means = _request_figures(tables.requests, broker_id).queue_ms
        out.append(
            {
                "broker_id": broker_id,
                "setting": c["setting"],
                "listener": c.get("listener"),
                "from": c["from"],
                "to": c["to"],
                "at": c["at"],
                "before": _side(rows, means, int(c["from"]), at, after=False),
                "after": _side(rows, means, int(c["to"]), at, after=True),
            }
        )
    return out


# ----------------------------------------------------------------------- apply


class AdminClient:
    def __init__(self, url: str, token: str | None, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, timeout=self.timeout) as response:
            return json.loads(response.read())


def _error_body(exc: urllib.error.HTTPError) -> str:
    """The admin API's JSON error message (or the body as text)."""
    try:
        body = exc.read().decode("utf-8", "replace")
    except OSError:
        return str(exc.reason)
    try:
        doc = json.loads(body)
    except ValueError:
        return body.strip() or str(exc.reason)
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(doc.get("message"), str):
            return str(doc["message"])
    return body.strip()


def live_size(pools: Mapping[str, Any], rec: Recommendation) -> int:
    if rec.setting == IO:
        return int(pools["io"]["size"])
    return int(pools["network"][rec.listener]["size"])


def apply(
    recs: list[Recommendation],
    admins: Sequence[str],
    token: str | None,
    state: AdvisorState,
    actions: Path,
    now: dt.datetime,
) -> list[Recommendation]:
    """Resize the pools of the brokers behind ``admins`` as recommended."""
    clients: dict[int, AdminClient] = {}
    for url in admins:
        client = AdminClient(url, token)
        clients[int(client.call("GET", "/v1/broker")["broker_id"])] = client
    out = []
    log = AppendLog(actions)
    try:
        for rec in recs:
            found = clients.get(rec.broker_id)
            if rec.status != "recommended" or found is None:
                out.append(rec)
                continue
            client = found
            try:
                live = live_size(client.call("GET", "/v1/pools"), rec)
                if live != rec.current:
                    out.append(
                        replace(
                            rec,
                            status="skipped",
                            note=f"the pool is {live} now, not {rec.current} as in the data",
                        )
                    )
                    continue
                path = "/v1/pools/io" if rec.setting == IO else f"/v1/pools/network/{rec.listener}"
                after = live_size(client.call("PUT", path, {"size": rec.recommended}), rec)
            except urllib.error.HTTPError as exc:  # the server said why: keep its words
                note = f"{client.url}: HTTP {exc.code}: {_error_body(exc)}"
                out.append(replace(rec, status="failed", note=note))
                continue
            except (OSError, urllib.error.URLError, KeyError, ValueError) as exc:
                out.append(replace(rec, status="failed", note=f"{client.url}: {exc}"))
                continue
            at = now.isoformat(timespec="seconds").replace("+00:00", "Z")
            change = {
                "key": _key(rec.broker_id, rec.setting, rec.listener),
                "broker_id": rec.broker_id,
                "setting": rec.setting,
                "pool": rec.pool,
                "listener": rec.listener,
                "from": rec.current,
                "to": after,
                "at": at,
                "admin": client.url,
                "reason": rec.reason,
            }
            log.write_json(change)
            state.changes.append(change)
            state.save()
            out.append(replace(rec, status="applied", note=f"{client.url}: {path} size={after}"))
    finally:
        log.close()
    return out


# ------------------------------------------------------------------------ main


def run(
    trends_dir: Path,
    th: Thresholds,
    *,
    now: dt.datetime | None = None,
    admins: Sequence[str] = (),
    token: str | None = None,
    do_apply: bool = False,
) -> dict[str, Any]:
    now = now or dt.datetime.now(dt.UTC)
    tables = Tables.read(trends_dir)
    state = AdvisorState.load(trends_dir / "advisor" / "state.json")
    recs: list[Recommendation] = []
    assessed: list[dict[str, Any]] = []
    for broker_id in sorted({int(r["broker_id"]) for r in tables.pools}):
        r, a = advise_broker(tables, broker_id, th)
        recs += r
        assessed += a
    recs = hold_for_cooldown(recs, state, now, th.cooldown_s)
    if do_apply:
        recs = apply(recs, admins, token, state, trends_dir / "advisor" / "actions.jsonl", now)
    doc = {
        "schema": ADVICE_SCHEMA,
        "generated_at": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "thresholds": asdict(th),
        "recommendations": [asdict(r) for r in recs],
        "pools": assessed,
        "effects": effects(tables, state),
    }
    write_json_atomic(trends_dir / "recommendations.json", doc)
    return doc


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="advise", description="Pool size advice from the trend tables (and apply it)."
    )
    p.add_argument("--in", dest="input", type=Path, required=True, help="the trends job's --out")
    p.add_argument("--apply", action="store_true", help="resize the pools as recommended")
    p.add_argument("--admin", action="append", default=[], help="admin API URL (for --apply)")
    p.add_argument("--token", help="admin bearer token (default: $TRIO_BROKER_ADMIN_TOKEN)")
    p.add_argument("--json", action="store_true", help="print the whole advice as JSON")
    d = Thresholds()
    for name, value in asdict(d).items():
        flag = "--" + (name[:-2] + "_seconds" if name.endswith("_s") else name).replace("_", "-")
        p.add_argument(flag, dest=name, type=type(value), default=value, help=f"default {value}")
    args = p.parse_args(argv)
    if args.apply and not args.admin:
        p.error("--apply needs --admin URL")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    th = Thresholds(**{k: getattr(args, k) for k in asdict(Thresholds())})
    try:
        doc = run(
            args.input,
            th,
            admins=args.admin,
            token=args.token or token_from_env(),
            do_apply=args.apply,
        )
    except urllib.error.HTTPError as exc:  # the admin API refused: say what it said
        print(f"advise: {exc.url}: HTTP {exc.code}: {_error_body(exc)}", file=sys.stderr)
        return 2
    except (OSError, urllib.error.URLError) as exc:
        print(f"advise: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(doc, indent=1))
        return _exit_status(doc)
    for a in doc["pools"]:
        idle = "-" if a["idle_ratio_mean"] is None else f"{a['idle_ratio_mean']:.0%}"
        print(
            f"broker {a['broker_id']} {a['pool']}: size {a['size']}, idle {idle} "
            f"over {a['buckets']} bucket(s)"
        )
    if not doc["recommendations"]:
        short = [a for a in doc["pools"] if not a["enough_data"]]
        if short:
            need = doc["thresholds"]["min_buckets"]
            for a in short:
                print(
                    f"advise: Not enough data for broker {a['broker_id']} {a['pool']} "
                    f"(need {need} buckets, have {a['buckets']})"
                )
        else:
            print("advise: no change recommended")
    for r in doc["recommendations"]:
        where = f" ({r['listener']})" if r["listener"] else ""
        ev = r["evidence"]
        print(
            f"[{r['status']}] broker {r['broker_id']} {r['setting']}{where}: "
            f"{r['current']} -> {r['recommended']}: {r['reason']} "
            f"[{ev.get('from')} .. {ev.get('to')}]" + (f" ({r['note']})" if r["note"] else "")
        )
    for e in doc["effects"]:
        b, a = e["before"], e["after"]
        print(
            f"effect of {e['setting']} {e['from']} -> {e['to']} at {e['at']}: queue time "
            f"{b['queue_time_ms_mean']} -> {a['queue_time_ms_mean']} ms, idle "
            f"{b['idle_ratio_mean']} -> {a['idle_ratio_mean']}"
        )
    return _exit_status(doc)


def _exit_status(doc: Mapping[str, Any]) -> int:
    """1 if any change could not be applied, else 0."""
    failed = [r for r in doc["recommendations"] if r["status"] == "failed"]
    for r in failed:
        print(f"advise: failed: {r['setting']}: {r['note']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
