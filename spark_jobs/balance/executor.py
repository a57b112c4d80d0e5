"""The executor: a plan applied through Kafka's own APIs, watched, and its effect measured
(Cruise Control's ``executor``).

Owns ``execute`` and what it records. In order:

1. It refuses a plan with an unmet hard goal, and skips a move whose partition no longer
   has the replicas the plan started from, or is being moved already.
2. It measures each broker's load for ``effect_s`` seconds (``sample``'s broker rows).
3. Replication throttles (KIP-73), for the replica moves: ``leader.replication.throttled.
   rate`` and ``follower.replication.throttled.rate`` on every broker involved, and on
   each topic ``leader.replication.throttled.replicas`` += the current replicas,
   ``follower.replication.throttled.replicas`` += the new ones (IncrementalAlterConfigs;
   the values found before are kept to be put back).
4. AlterPartitionReassignments, at most ``max_concurrent`` partitions at a time (a change
   of order only completes at once); a move is done when ListPartitionReassignments no
   longer lists it and the cluster shows its new replicas.
5. Meanwhile it watches the cluster (``GET /v1/cluster``): a broker lost, a partition
   offline, or a partition under-replicated that was not before and is not moving, for
   longer than ``degraded_grace_s``, stops it: no new move starts, the ones under way
   finish (or time out after ``move_timeout_s``).
6. ElectLeaders (preferred) for the partitions whose leader the plan changes.
7. The throttles go back to what they were.
8. It measures the load again after the brokers' metrics window has passed, and reports
   each broker before and after.

While it runs it hands ``progress`` (if given) the record so far, status ``running``, each
time a move starts (``moving``) or ends: the balance job writes it into ``plan.json``, so
the dashboard shows the execution's progress.
Must not: plan; retry a refused move.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .kafka_ops import BROKER, TOPIC, KafkaOps
from .live import ClusterView, LiveError, read_view
from .model import Key

RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LEADER_LIST = "leader.replication.throttled.replicas"
FOLLOWER_LIST = "follower.replication.throttled.replicas"
EFFECT: tuple[str, ...] = ("loop_busy_ratio", "io_idle_ratio", "bytes_in_per_s", "bytes_out_per_s")
EFFECT += ("messages_in_per_s", "request_queue_p99_ms", "leaders", "replicas")


@dataclass(frozen=True)
class ExecOptions:
    throttle: int | None = 10_000_000
    max_concurrent: int = 4
    move_timeout_s: float = 600.0
    degraded_grace_s: float = 10.0
    effect_s: float = 10.0
    poll_s: float = 0.5
    election_timeout_s: float = 30.0


def ongoing_moves(bootstrap: str) -> frozenset[Key]:
    with KafkaOps(bootstrap) as kafka:
        return frozenset(kafka.ongoing())


def _key(m: Mapping[str, Any]) -> Key:
    return (str(m["topic"]), int(m["partition"]))


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Health:
    """What the cluster looked like when the execution began, and whether it is worse."""

    def __init__(self, view: ClusterView) -> None:
        self.brokers = set(view.brokers)
        self.offline = set(view.offline())
        self.under = set(view.under_replicated())
        self.since: float | None = None

    def problems(self, view: ClusterView, moving: set[Key]) -> list[str]:
        out = []
        lost = sorted(self.brokers - set(view.brokers))
        if lost:
            out.append(f"broker(s) {lost} left the cluster")
        offline = sorted(set(view.offline()) - self.offline)
        if offline:
            out.append(f"{len(offline)} partition(s) offline: {offline[:5]}")
        under = sorted(set(view.under_replicated(frozenset(moving))) - self.under)
        if under:
            out.append(f"{len(under)} partition(s) under-replicated: {under[:5]}")
        return out


def measure(view: ClusterView, token: str | None, seconds: float) -> dict[int, dict[str, Any]]:
    """Each broker's load over ``seconds`` (the sampler's broker rows, one bucket)."""
    from .sample import read, rows_between

    with KafkaOps(view.bootstrap) as kafka:
        a = read(view, kafka, token)
        time.sleep(seconds)  # a measurement over this many seconds: nothing to wait for
        b = read(view, kafka, token)
    brokers, _ = rows_between(a, b)
    return {
        int(r["broker_id"]): {
            k: (round(r[k], 4) if isinstance(r[k], float) else r[k]) for k in EFFECT
        }
        for r in brokers
    }


def _settle_s(view: ClusterView, token: str | None) -> float:
    """The longest metrics window of the brokers: after it, their ratios are all new."""
    from .live import AdminApi

    found = []
    for b in view.brokers.values():
        if b.admin:
            try:
                found.append(float(AdminApi(b.admin, token).get("/v1/metrics")["window_s"]))
            except (LiveError, KeyError, TypeError, ValueError):
                continue
    return min(120.0, max(found, default=0.0))


class Throttles:
    """The throttles set for the moves, and the values they replaced."""

    def __init__(self, kafka: KafkaOps, rate: int) -> None:
        self.kafka, self.rate = kafka, rate
        self.saved: dict[tuple[str, str], dict[str, str | None]] = {}
        self.errors: list[str] = []

    def set(self, moves: Sequence[Mapping[str, Any]], live: set[int]) -> dict[str, Any]:
        """Throttle ``moves``: the rates on the live brokers they involve (a dead one, as
        under fix-offline, takes no setting), the replica lists on their topics."""
        brokers: set[int] = set()
        lists: dict[str, dict[str, set[str]]] = {}
        for m in moves:
            before, after = m["replicas_before"], m["replicas_after"]
            brokers |= set(before) | set(after)
            t = lists.setdefault(m["topic"], {LEADER_LIST: set(), FOLLOWER_LIST: set()})
            t[LEADER_LIST] |= {f"{m['partition']}:{b}" for b in before}
            t[FOLLOWER_LIST] |= {f"{m['partition']}:{b}" for b in after if b not in before}
        brokers &= live
        for b in sorted(brokers):
            self._change(BROKER, str(b), {k: str(self.rate) for k in RATES})
        for topic, keys in sorted(lists.items()):
            self._change(TOPIC, topic, {k: ",".join(sorted(v)) for k, v in keys.items() if v})
        return {
            "rate": self.rate,
            "brokers": sorted(brokers),
            "topics": {t: {k: sorted(v) for k, v in keys.items()} for t, keys in lists.items()},
        }

    def _change(self, kind: str, name: str, values: Mapping[str, str]) -> None:
        try:
            saved = self.kafka.configs(kind, name, list(values))
        except Exception as exc:  # a broker that went away: say so, throttle the rest
            self.errors.append(f"{kind.lower()} {name}: {exc}")
            return
        self.saved[(kind, name)] = saved
        ops: dict[str, tuple[str, str | None]] = {}
        for k, v in values.items():
            old = saved.get(k)
            if kind == TOPIC and old and old.strip() == "*":
                continue  # every replica is throttled already
            ops[k] = ("SET", v if kind == BROKER or not old else f"{old},{v}")
        outcome = self.kafka.alter(kind, name, ops) if ops else "ok"
        if outcome != "ok":
            self.errors.append(f"{kind.lower()} {name}: {outcome}")

    def restore(self) -> list[str]:
        """Every value back as it was; what could not be put back."""
        failed = []
        for (kind, name), values in sorted(self.saved.items()):
            ops: dict[str, tuple[str, str | None]] = {
                k: ("DELETE", None) if v is None else ("SET", v) for k, v in values.items()
            }
            try:
                outcome = self.kafka.alter(kind, name, ops)
            except Exception as exc:  # the broker went away: say so, go on with the rest
                outcome = str(exc)
            if outcome != "ok":
                failed.append(f"{kind.lower()} {name}: {outcome}")
        return failed


def _stale(m: Mapping[str, Any], view: ClusterView, ongoing: frozenset[Key]) -> str | None:
    k = _key(m)
    p = view.partitions.get(k)
    if p is None:
        return "the partition no longer exists"
    if k in ongoing:
        return "the partition is being moved already"
    if [int(r) for r in p["replicas"]] != list(m["replicas_before"]):
        return f"its replicas are {p['replicas']} now, not {m['replicas_before']} as planned"
    return None


def execute(
    doc: Mapping[str, Any],
    view: ClusterView,
    admins: Sequence[str],
    token: str | None,
    options: ExecOptions,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"started_at": _now(), "options": options.__dict__.copy()}
    results: dict[Key, dict[str, Any]] = {}

    def report() -> None:
        if progress is not None:
            moves = [{"topic": k[0], "partition": k[1], **v} for k, v in sorted(results.items())]
            progress({**record, "status": "running", "moves": moves})

    if doc["unmet_hard_goals"]:
        record.update(
            status="refused",
            reason="the plan leaves hard goal(s) unmet: " + ", ".join(doc["unmet_hard_goals"]),
            finished_at=_now(),
        )
        return record
    moves = list(doc["moves"])
    if not moves:
        record.update(status="done", reason="nothing to move", finished_at=_now(), moves=[])
        return record
    with KafkaOps(view.bootstrap) as kafka:
        ongoing = frozenset(kafka.ongoing())
        todo = []
        for m in moves:
            why = _stale(m, view, ongoing)
            if why:
                results[_key(m)] = {"status": "skipped", "note": why}
            else:
                todo.append(m)
        report()
        if options.effect_s > 0:
            record["before"] = measure(view, token, options.effect_s)
        throttles = Throttles(kafka, options.throttle or 0)
        copying = [m for m in todo if m["kind"] == "replicas"]
        if options.throttle and copying:
            record["throttle"] = throttles.set(copying, set(view.brokers))
            record["throttle"]["errors"] = throttles.errors
        try:
            status, events, most = _run_moves(
                kafka, todo, results, admins, token, options, Health(view), report
            )
            record["max_in_flight"] = most
        finally:
            record["throttle_restore_failed"] = throttles.restore()
        record["moves"] = [
            {"topic": k[0], "partition": k[1], **v} for k, v in sorted(results.items())
        ]
        record["events"] = events
        done = {k for k, v in results.items() if v["status"] == "done"}
        wanted = [_key(e) for e in doc["elections"] if _key(e) in done]
        record["elections"] = _elect(kafka, wanted, doc, admins, token, options)
    failed = [k for k, v in results.items() if v["status"] in ("failed", "timed out")]
    bad_elections = [e for e in record["elections"] if e["outcome"] not in ("ok", "not needed")]
    if status == "done" and (failed or bad_elections):
        status = "failed"
    record["status"] = status
    if options.effect_s > 0:
        view_after = read_view(admins, token)
        time.sleep(_settle_s(view_after, token))  # the brokers' windows cover only "after"
        record["after"] = measure(view_after, token, options.effect_s)
    record["finished_at"] = _now()
    return record


def _run_moves(
    kafka: KafkaOps,
    todo: list[Mapping[str, Any]],
    results: dict[Key, dict[str, Any]],
    admins: Sequence[str],
    token: str | None,
    options: ExecOptions,
    health: Health,
    report: Callable[[], None],
) -> tuple[str, list[str], int]:
    queue = list(todo)
    inflight: dict[Key, tuple[Mapping[str, Any], float]] = {}
    events: list[str] = []
    stopped = False
    most = 0
    while queue or inflight:
        while not stopped and queue and len(inflight) < options.max_concurrent:
            m = queue.pop(0)
            k = _key(m)
            outcome = kafka.reassign({k: list(m["replicas_after"])}).get(k, "no answer")
            if outcome != "ok":
                results[k] = {"status": "failed", "note": f"AlterPartitionReassignments: {outcome}"}
                report()
                continue
            inflight[k] = (m, time.monotonic())
            results[k] = {"status": "moving"}
            report()
            most = max(most, len(inflight))
        if stopped and not inflight:
            break
        time.sleep(options.poll_s)  # another process's state: polled, bounded below
        try:
            view = read_view(admins, token)
            ongoing = kafka.ongoing()
        except Exception as exc:  # a broker may be going away: note it, poll again
            events.append(f"{_now()} could not read the cluster: {exc}")
            view, ongoing = None, None
        now = time.monotonic()
        ended = len(inflight)
        for k, (m, began) in list(inflight.items()):
            p = view.partitions.get(k) if view else None
            moved = p is not None and [int(r) for r in p["replicas"]] == m["replicas_after"]
            if ongoing is not None and k not in ongoing and moved:
                results[k] = {"status": "done", "seconds": round(now - began, 2)}
                del inflight[k]
                continue
            if now - began > options.move_timeout_s:
                results[k] = {"status": "timed out", "note": "still moving; left under way"}
                del inflight[k]
        if len(inflight) != ended:
            report()
        if view is None:
            continue
        problems = health.problems(view, set(inflight))
        if problems:
            health.since = health.since or now
            if not stopped and now - health.since >= options.degraded_grace_s:
                stopped = True
                events.append(f"{_now()} stopped: the cluster degraded: " + "; ".join(problems))
        elif health.since is not None:
            health.since = None
    for m in queue:
        results[_key(m)] = {"status": "not started", "note": "the execution stopped"}
    events.append(f"at most {most} move(s) were under way at once")
    return ("stopped" if stopped else "done"), events, most


def _elect(
    kafka: KafkaOps,
    keys: list[Key],
    doc: Mapping[str, Any],
    admins: Sequence[str],
    token: str | None,
    options: ExecOptions,
) -> list[dict[str, Any]]:
    if not keys:
        return []
    wanted = {_key(e): int(e["leader_after"]) for e in doc["elections"]}
    answers = kafka.elect_preferred(keys)
    out = []
    deadline = time.monotonic() + options.election_timeout_s
    view = read_view(admins, token)
    while time.monotonic() < deadline and any(
        int(view.partitions.get(k, {}).get("leader", -1)) != wanted[k] for k in keys
    ):
        time.sleep(options.poll_s)  # the controller's round: polled, bounded by the deadline
        view = read_view(admins, token)
    for k in keys:
        answer = answers.get(k, "no answer")
        leader = int(view.partitions.get(k, {}).get("leader", -1))
        if answer in ("ok", "not needed") and leader == wanted[k]:
            outcome = answer
        else:
            outcome = f"{answer}; leader is {leader}, planned {wanted[k]}"
        out.append({"topic": k[0], "partition": k[1], "leader": leader, "outcome": outcome})
    return out


def render_execution(record: Mapping[str, Any]) -> str:
    reason = f" ({record['reason']})" if "reason" in record else ""
    out = [f"execution: {record['status']}{reason}"]
    moves = record.get("moves", [])
    counts: dict[str, int] = {}
    for m in moves:
        counts[m["status"]] = counts.get(m["status"], 0) + 1
    if moves:
        out.append("moves: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for m in moves:
        if m["status"] != "done":
            out.append(f"  {m['topic']}-{m['partition']}: {m['status']}: {m.get('note')}")
    elections = record.get("elections", [])
    if elections:
        ok = sum(1 for e in elections if e["outcome"] in ("ok", "not needed"))
        out.append(f"elections: {ok} of {len(elections)} led as planned")
    if "throttle" in record:
        t = record["throttle"]
        out.append(f"throttle: {t['rate']:,} B/s on brokers {t['brokers']} (removed after)")
    for e in record.get("events", []):
        out.append(f"  {e}")
    if record.get("before") and record.get("after"):
        out.append("measured effect (each broker, before -> after):")
        for b in sorted(set(record["before"]) | set(record["after"]), key=int):
            a, z = record["before"].get(b, {}), record["after"].get(b, {})
            out.append(
                f"  broker {b}: "
                + ", ".join(f"{k} {_f(a.get(k))} -> {_f(z.get(k))}" for k in EFFECT)
            )
    return "\n".join(out)


def _f(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)
