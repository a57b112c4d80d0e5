"""The tuning advisor: trend tables in, pool size recommendations out (and applied, if asked).

    python -m spark_jobs.advise --in TRENDS [--apply --admin URL [--token T]]

Owns: the advisor's state, its cooldown, what it writes and prints, and ``--apply``; the
rules themselves are ``advise_rules`` (over ``advise_evidence``), their reasons
``advise_verdicts``. It reads the
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

Every resizable pool gets a verdict, ``raise``, ``lower`` or ``hold``, with the comparisons
that decided it (the measured figure and the threshold: ``verdicts`` in the JSON, one line
per pool in the text); a hold says whether the thresholds, the cooldown, a CPU-bound event
loop or too little data kept the pool as it is. Each recommendation (a change, or advice
for an operator) names the setting, the current and recommended value, the evidence
(figures and the time range they cover) and a one-line reason. Written to
``TRENDS/recommendations.json`` (the dashboard shows it); ``--apply`` resizes the pools
through the admin API (``PUT /v1/pools/io``, ``PUT /v1/pools/network/<listener>``), only if
the live size is still the one the advice started from, and appends what it did to
``TRENDS/advisor/actions.jsonl``. For changes applied earlier it reports their effect:
queue time and idle ratio before and after. The clients' side (``advise_clients``, from
the ``produce_path`` table when clients push KIP-714 telemetry): a ``client-bound``
finding when the producers' own time dominates while the pools idle (advice naming
``linger.ms``, ``batch.size``, ...: never applied), the clients' latency as evidence of an
io raise (``evidence.clients``, and a clause of its reason), and a line saying so when no
client pushed anything.
Must not: import Spark or the broker.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python spark_jobs/advise.py: find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_jobs.advise_clients import client_evidence, client_findings, client_reason
from spark_jobs.advise_evidence import (
    ADVICE_SCHEMA,
    IO,
    NETWORK,
    SCALE_OUT,
    PoolEvidence,
    Recommendation,
    Row,
    Tables,
    Thresholds,
    _epoch,
    _iso,
    _r,
    _request_figures,
    pool_evidence,
    read_table,
)
from spark_jobs.advise_rules import Judgement, advise_broker, judge_broker
from spark_jobs.advise_verdicts import HOLD_COOLDOWN, Check, Verdict
from spark_jobs.durable import AppendLog, write_json_atomic
from spark_jobs.fetch import token_from_env

__all__ = [
    "ADVICE_SCHEMA",
    "IO",
    "NETWORK",
    "SCALE_OUT",
    "AdvisorState",
    "Judgement",
    "PoolEvidence",
    "Recommendation",
    "Tables",
    "Thresholds",
    "Verdict",
    "advise_broker",
    "judge_broker",
    "pool_evidence",
    "read_table",
    "run",
]

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


def cooldown_check(
    state: AdvisorState,
    broker_id: int,
    setting: str,
    listener: str | None,
    now: dt.datetime,
    cooldown_s: float,
) -> Check | None:
    """Time since the last change the advisor applied to this setting against the cooldown
    (None: it never changed it); ``ok`` means it holds."""
    last = state.last_change(broker_id, setting, listener)
    if last is None:
        return None
    at = dt.datetime.fromisoformat(last["at"].replace("Z", "+00:00"))
    return Check(
        f"time since the change {last['from']} -> {last['to']} at {last['at']}",
        (now - at).total_seconds(),
        "<",
        cooldown_s,
        "cooldown_s",
        "s",
    )


def hold_for_cooldown(
    recs: list[Recommendation],
    state: AdvisorState,
    now: dt.datetime,
    cooldown_s: float,
    verdicts: Sequence[Verdict] = (),
) -> list[Recommendation]:
    """Recommendations within a cooldown become ``held``, and so do their verdicts."""
    out = []
    by_pool = {(v.broker_id, v.setting, v.listener): v for v in verdicts}
    for rec in recs:
        check = cooldown_check(state, rec.broker_id, rec.setting, rec.listener, now, cooldown_s)
        if check is not None and check.ok:
            assert check.value is not None
            until = now.timestamp() + cooldown_s - check.value
            rec = replace(rec, status="held", note=f"cooldown: {check.text()}: until {_iso(until)}")
            v = by_pool.get((rec.broker_id, rec.setting, rec.listener))
            if v is not None and v.verdict != "hold":
                v.held(HOLD_COOLDOWN, check)
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
    verdicts: list[Verdict] = []
    for broker_id in sorted({int(r["broker_id"]) for r in tables.pools}):
        j = judge_broker(tables, broker_id, th)
        recs += j.recommendations
        assessed += j.assessed
        verdicts += j.verdicts
    recs = hold_for_cooldown(recs, state, now, th.cooldown_s, verdicts)
    path_rows = read_table(trends_dir / "produce_path")
    raised = any(r.action == "raise" for r in recs)
    clients = client_findings(path_rows, assessed, raised, th)
    if path_rows:
        for r in recs:
            if r.setting == IO and r.action == "raise":
                r.evidence["clients"] = client_evidence(path_rows, th)
                said = client_reason(r.evidence["clients"])
                if said is not None:
                    r.reason += f"; {said}"
    if do_apply:
        recs = apply(recs, admins, token, state, trends_dir / "advisor" / "actions.jsonl", now)
    doc = {
        "schema": ADVICE_SCHEMA,
        "generated_at": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "thresholds": asdict(th),
        "verdicts": [{**asdict(v), "text": v.text()} for v in verdicts],
        "recommendations": [asdict(r) for r in recs],
        "pools": assessed,
        "effects": effects(tables, state),
        "clients": clients,
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
    for v in doc["verdicts"]:  # every pool: raise, lower or hold, and why
        print(f"[{v['verdict']}] {v['text']}")
    for r in doc["recommendations"]:
        where = f" ({r['listener']})" if r["listener"] else ""
        ev = r["evidence"]
        print(
            f"[{r['status']}] broker {r['broker_id']} {r['setting']}{where}: "
            f"{r['current']} -> {r['recommended']}: {r['reason']} "
            f"[{ev.get('from')} .. {ev.get('to')}]" + (f" ({r['note']})" if r["note"] else "")
        )
    c = doc["clients"]
    if c["status"] == "no-telemetry":
        print(f"advise: {c['text']}")
    for f in c["findings"]:
        print(f"[{f['finding']}] {f['text']}")
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
