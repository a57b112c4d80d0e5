"""The pool advisor's rules: one broker's evidence in, its recommendations and a verdict for
each resizable pool out.

Owns ``judge_broker`` (and ``advise_broker``, its recommendations and assessments only),
the sizing of a step (``_raise_to``, ``_lower_to``) and the rules as ``Rule`` values made
of ``Check`` comparisons (``advise_verdicts``): each decision is ``rule.ok``, and the
verdict's reasons are that rule's ``grounds`` (a change) or ``blockers`` (a hold), so what
the advisor says is what it compared. The rules, in order:

- the io pool has fewer than ``min_buckets`` buckets since it last changed size: nothing
  is judged (every pool holds: not enough data);
- the event loop is busy at least ``loop_busy_high``: CPU-bound, scale-out advice, every
  pool holds;
- raise ``num.io.threads``: io idle (mean) below ``io_idle_low``, and queue time high
  (mean at least ``queue_high_ms``, or at least ``queue_to_local`` times the handler time)
  or rising (``queue_rise_ms_per_min``), below ``max_io``;
- raise a listener's ``num.network.threads``: its idle (mean) below ``net_idle_low``,
  below ``max_network``;
- lower both: io idle (min) at least ``io_idle_high``, every listener's idle (min) at least
  ``net_idle_high``, queue time neither high nor rising, and a smaller size is allowed.
Must not: read files, apply anything, import Spark or the broker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from spark_jobs.advise_evidence import (
    IO,
    NETWORK,
    SCALE_OUT,
    PoolEvidence,
    Recommendation,
    Tables,
    Thresholds,
    _r,
    _request_figures,
    pool_evidence,
)
from spark_jobs.advise_verdicts import (
    HOLD_CPU,
    HOLD_DATA,
    HOLD_SIZE,
    HOLD_THRESHOLDS,
    Check,
    Rule,
    Verdict,
)

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


@dataclass
class Judgement:
    recommendations: list[Recommendation]
    assessed: list[dict[str, Any]]
    verdicts: list[Verdict]


def _enough(ev: PoolEvidence, th: Thresholds) -> Check:
    return Check(
        f"{ev.pool} buckets since the pool last changed size",
        len(ev.times),
        ">=",
        th.min_buckets,
        "min_buckets",
        data=True,
    )


def _assessed(broker_id: int, ev: PoolEvidence, enough: bool) -> dict[str, Any]:
    return {
        "broker_id": broker_id,
        "pool": ev.pool,
        "size": ev.size,
        "buckets": len(ev.times),
        "idle_ratio_mean": _r(ev.idle_mean) if ev.times else None,
        **(ev.span() if ev.times else {}),
        "enough_data": enough,
    }


LIMITS = ("max_io", "max_network", "the current size")


def _hold(
    broker_id: int,
    ev: PoolEvidence,
    setting: str,
    listener: str | None,
    own: Check,
    rules: list[Rule],
) -> Verdict:
    """A pool no rule changes: its own data short; or a rule met but for the pool's size
    limit (its grounds and that limit); or else what blocked each rule."""
    if not own.ok:
        return Verdict.hold(broker_id, ev.pool, setting, listener, ev.size, HOLD_DATA, [own])
    for rule in rules:
        blocked = rule.blockers()
        if blocked and all(c.against in LIMITS for c in blocked):
            checks = [*rule.grounds(), *blocked]
            return Verdict.hold(broker_id, ev.pool, setting, listener, ev.size, HOLD_SIZE, checks)
    blocked = [c for rule in rules for c in rule.blockers()]
    return Verdict.hold(broker_id, ev.pool, setting, listener, ev.size, HOLD_THRESHOLDS, blocked)


def advise_broker(
    tables: Tables, broker_id: int, th: Thresholds
) -> tuple[list[Recommendation], list[dict[str, Any]]]:
    """Recommendations for one broker, and the assessment of each of its pools."""
    j = judge_broker(tables, broker_id, th)
    return j.recommendations, j.assessed


def judge_broker(tables: Tables, broker_id: int, th: Thresholds) -> Judgement:
    """Recommendations, assessments and a verdict for each resizable pool of one broker."""
    recs: list[Recommendation] = []
    assessed: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
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

    def hold_all(because: str, checks: list[Check]) -> Judgement:
        if io is not None:
            verdicts.append(Verdict.hold(broker_id, "io", IO, None, io.size, because, checks))
        for lis, ev in nets.items():
            verdicts.append(
                Verdict.hold(broker_id, ev.pool, NETWORK, lis, ev.size, because, checks)
            )
        return Judgement(recs, assessed, verdicts)

    if io is None:
        missing = Check("io pool buckets", None, ">=", th.min_buckets, "min_buckets", data=True)
        return hold_all(HOLD_DATA, [missing])
    figures = _request_figures(tables.requests, broker_id)
    io.queue_ms = [figures.queue_ms.get(t) for t in io.times]
    io.queue_p99_ms = [figures.queue_p99_ms.get(t) for t in io.times]
    local = [figures.local_ms[t] for t in io.times if t in figures.local_ms]
    local_mean = sum(local) / len(local) if local else None
    volume = figures.volume
    io.top_request = max(volume, key=lambda k: volume[k]) if volume else None

    enough = {ev.pool: _enough(ev, th) for ev in (io, *nets.values())}

    def net_figures() -> dict[str, Any]:
        return {lis: _r(ev.idle_mean) for lis, ev in nets.items() if ev.times}

    for ev in (io, *nets.values()):
        assessed.append(_assessed(broker_id, ev, enough[ev.pool].ok))
    if not enough["io"].ok:
        return hold_all(HOLD_DATA, [enough["io"]])

    loop = pool_evidence(tables.pools, broker_id, "loop", th.lookback_s)
    if loop is not None and _enough(loop, th).ok:
        loop_busy = 1.0 - loop.idle_mean
        assessed.append(_assessed(broker_id, loop, True))
        cpu_bound = Check(
            "event loop busy (mean)", loop_busy, ">=", th.loop_busy_high, "loop_busy_high", "%"
        )
        if cpu_bound.ok:
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
                        "network_idle_ratio_mean": net_figures(),
                    },
                    status="advice",
                    note="applied by an operator, not by --apply",
                )
            )
            return hold_all(HOLD_CPU, [cpu_bound])

    q_mean, q_slope = io.queue_mean(), io.queue_slope()
    q_p99 = max((q for q in io.queue_p99_ms if q is not None), default=None)
    # High: long in absolute terms, or long next to the time a handler takes to serve a
    # request (requests wait longer than they are worked on: RequestQueueTimeMs against
    # LocalTimeMs), which does not depend on how fast this machine's disk is.
    q_high = Check("queue time (mean)", q_mean, ">=", th.queue_high_ms, "queue_high_ms", "ms")
    ratio = q_mean / local_mean if q_mean is not None and local_mean else None
    q_long = Check(
        "queue time / handler time", ratio, ">=", th.queue_to_local, "queue_to_local", "x"
    )
    rising = Check(
        "queue time slope",
        q_slope,
        ">=",
        th.queue_rise_ms_per_min,
        "queue_rise_ms_per_min",
        "ms/min",
    )
    calm = [c.negated(missing_ok=True) for c in (q_high, q_long, rising)]
    io_busy = sum(io.busy) / len(io.busy)
    io_evidence = {
        **io.span(),
        "buckets": len(io.times),
        "io_idle_ratio_mean": _r(io.idle_mean),
        "io_idle_ratio_min": _r(io.idle_min),
        "io_busy_mean": _r(io_busy),
        "queue_time_ms_mean": _r(q_mean),
        "local_time_ms_mean": _r(local_mean),
        "queue_time_ms_p99_max": _r(q_p99),
        "queue_time_slope_ms_per_min": _r(q_slope),
        "request_queue_depth_mean": _r(sum(io.queue_depth) / len(io.queue_depth)),
        "busiest_request": io.top_request,
        "network_idle_ratio_mean": net_figures(),
    }

    # ---- the rules, as data: each decision below is rule.ok
    io_raise = Rule(
        "raise",
        (
            Check("io idle (mean)", io.idle_mean, "<", th.io_idle_low, "io_idle_low", "%"),
            (q_high, q_long, rising),
            Check("io pool size", io.size, "<", th.max_io, "max_io"),
        ),
    )
    net_raise = {
        lis: Rule(
            "raise",
            (
                enough[ev.pool],
                Check(
                    f"{lis} network idle (mean)",
                    ev.idle_mean if ev.times else None,
                    "<",
                    th.net_idle_low,
                    "net_idle_low",
                    "%",
                ),
                Check(f"{lis} network pool size", ev.size, "<", th.max_network, "max_network"),
            ),
        )
        for lis, ev in nets.items()
    }
    all_idle: tuple[Check, ...] = (
        Check("io idle (min)", io.idle_min, ">=", th.io_idle_high, "io_idle_high", "%"),
        Check("network pools with data", len(nets), ">=", 1, "at least one"),
        *(
            c
            for lis, ev in nets.items()
            for c in (
                enough[ev.pool],
                Check(
                    f"{lis} network idle (min)",
                    ev.idle_min if ev.times else None,
                    ">=",
                    th.net_idle_high,
                    "net_idle_high",
                    "%",
                ),
            )
        ),
        *calm,
    )
    io_to = _lower_to(io.size, io_busy, th, th.min_io)
    io_lower = Rule(
        "lower", (*all_idle, Check("lowered io size", io_to, "<", io.size, "the current size"))
    )
    net_lower = {}
    for lis, ev in nets.items():
        to = (
            _lower_to(ev.size, ev.size * (1 - ev.idle_mean), th, th.min_network)
            if ev.times
            else ev.size
        )
        net_lower[lis] = (
            to,
            Rule(
                "lower",
                (*all_idle, Check(f"lowered {lis} size", to, "<", ev.size, "the current size")),
            ),
        )

    io_verdict: Verdict | None = None
    if io_raise.ok:
        waiting = sum(io.queue_depth) / len(io.queue_depth)
        to = _raise_to(io.size, io_busy, waiting, th, th.max_io)
        queue_says = "queue time"
        if q_mean is not None:
            queue_says = f"queue time {q_mean:.1f} ms"
            if local_mean:
                queue_says += f" ({q_mean / local_mean:.1f}x the time to serve one)"
        if rising.ok and q_slope is not None:
            queue_says += f", rising {q_slope:+.1f} ms/min"
        nets_ok = all(ev.idle_mean >= th.net_idle_low for ev in nets.values() if ev.times)
        net_says = (
            "network threads idle enough, not the cause"
            if nets_ok
            else "network threads busy too (see their advice)"
        )
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
        io_verdict = Verdict.change(broker_id, "io", IO, None, io_raise, io.size, to)
    net_verdicts: dict[str, Verdict] = {}
    for lis, ev in nets.items():
        rule = net_raise[lis]
        if not rule.ok:
            continue
        busy = ev.size * (1 - ev.idle_mean)
        to = _raise_to(ev.size, busy, 0.0, th, th.max_network)
        recs.append(
            Recommendation(
                broker_id,
                NETWORK,
                ev.pool,
                lis,
                "raise",
                ev.size,
                to,
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
        net_verdicts[lis] = Verdict.change(broker_id, ev.pool, NETWORK, lis, rule, ev.size, to)
    if io_lower.ok:
        recs.append(
            Recommendation(
                broker_id,
                IO,
                "io",
                None,
                "lower",
                io.size,
                io_to,
                f"io threads at least {io.idle_min:.0%} idle and network processors "
                f"idle too, nothing waiting: fewer threads do",
                io_evidence,
            )
        )
        io_verdict = io_verdict or Verdict.change(
            broker_id, "io", IO, None, io_lower, io.size, io_to
        )
    for lis, ev in nets.items():
        to, rule = net_lower[lis]
        if not rule.ok:
            continue
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
        net_verdicts.setdefault(
            lis, Verdict.change(broker_id, ev.pool, NETWORK, lis, rule, ev.size, to)
        )

    if io_verdict is None:
        io_verdict = _hold(broker_id, io, IO, None, enough["io"], [io_raise, io_lower])
    verdicts.append(io_verdict)
    for lis, ev in nets.items():
        if lis not in net_verdicts:
            rules = [net_raise[lis], net_lower[lis][1]]
            net_verdicts[lis] = _hold(broker_id, ev, NETWORK, lis, enough[ev.pool], rules)
        verdicts.append(net_verdicts[lis])
    return Judgement(recs, assessed, verdicts)
