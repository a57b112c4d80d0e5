"""``python -m spark_jobs.balance``: the command line of the balance job.

    python -m spark_jobs.balance --in TRENDS [--admin URL ...] [--apply] COMMAND
    COMMAND: balance | add-broker N[,N...] | remove-broker N[,N...] | fix-offline | detect

Owns the options, which commands mean which scope (``scope_for``), the cluster state when
no admin API is given (``state_from_tables``: a broker whose newest bucket is older than
``--down-after-seconds`` is taken as dead), and the run: observe (Spark, or
``--engine python``), model, plan, write ``TRENDS/balance/plan.json``, print (with the
effect of the last plan applied, from the tables: ``effect``), and with ``--apply``
execute it (``executor``), its progress written into ``plan.json`` as it goes. ``detect``
looks for anomalies (``anomaly``) and plans only when it finds one; ``--self-heal``
applies that plan.
Exit status: 0 done; 1 a plan was not applied (an unmet hard goal, the cluster degraded,
a move failed); 2 the input or the cluster could not be read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from ..durable import AppendLog, write_json_atomic
from ..fetch import token_from_env
from .effect import last_execution, render_effect, table_effect
from .goals import default_goals
from .live import ClusterView, LiveError, cluster_state, read_view
from .model import ClusterState, PartitionState, Scope, Settings, build
from .monitor import Observed, observe_files
from .planner import merge, optimize
from .report import plan_doc, render
from .tables import TableError

COMMANDS = ("balance", "add-broker", "remove-broker", "fix-offline", "detect")


class CommandError(Exception):
    pass


def state_from_tables(observed: Observed, down_after_s: float) -> ClusterState:
    last = observed.window_to or 0.0
    return ClusterState(
        brokers={
            b.broker_id: b.get("rack")
            for b in observed.brokers
            if b.last_bucket >= last - down_after_s
        },
        partitions={p.key: PartitionState(p.replicas, p.leader) for p in observed.partitions},
        known_brokers=frozenset(b.broker_id for b in observed.brokers),
        source="the trends tables (newest buckets)",
    )


def scope_for(command: str, target: list[int], state: ClusterState) -> Scope:
    frozen = state.reassigning
    ids = set(state.brokers) | set(state.known_brokers)
    ids |= {r for p in state.partitions.values() for r in p.replicas}
    if command == "add-broker":
        missing = [b for b in target if b not in state.brokers]
        if missing:
            raise CommandError(f"add-broker: broker(s) {missing} not live in the cluster")
        return Scope(only_to=frozenset(target), frozen=frozen)
    if command == "remove-broker":
        unknown = [b for b in target if b not in ids]
        if unknown:
            raise CommandError(f"remove-broker: no broker {unknown} in the cluster")
        return Scope(forbidden=frozenset(target), only_from=frozenset(target), frozen=frozen)
    if command == "fix-offline":
        dead = frozenset(state.dead())
        return Scope(forbidden=dead, only_from=dead, frozen=frozen)
    return Scope(frozen=frozen)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def observe(args: argparse.Namespace) -> Observed:
    history = args.history_seconds
    if args.engine == "python":
        return observe_files(Path(args.input), args.window_seconds, history)
    from ..session import parse_confs, spark_session
    from .monitor import observe_spark

    spark = spark_session("trio-broker-balance", args.master, parse_confs(args.conf))
    try:
        return observe_spark(spark, str(args.input), args.window_seconds, history)
    finally:
        spark.stop()


def make_plan(
    command: str,
    target: list[int],
    observed: Observed,
    state: ClusterState,
    settings: Settings,
    max_steps: int = 1000,
) -> dict[str, Any]:
    """The plan document for ``command`` (and its broker ids) from an observation and the
    cluster's state."""
    model = build(observed, state, settings, scope_for(command, target, state))
    before, assignment = model.figures(), model.assignment()
    steps, results = optimize(model, default_goals(), max_steps)
    return plan_doc(
        command=command,
        target=target,
        generated_at=now_iso(),
        observed=observed,
        state_source=state.source,
        settings=settings,
        before=before,
        model=model,
        results=results,
        moves=merge(assignment, model, steps),
    )


def run(args: argparse.Namespace) -> int:
    settings = Settings(**{f.name: getattr(args, f.name) for f in fields(Settings)})
    out = Path(args.input) / "balance"
    observed = observe(args)
    view: ClusterView | None = None
    token = args.token or token_from_env()
    if args.admin:
        view = read_view(args.admin, token)
        from .executor import ongoing_moves

        state = cluster_state(view, ongoing_moves(view.bootstrap))
    else:
        state = state_from_tables(observed, args.down_after_seconds)
    command, target = args.command, args.brokers
    anomalies: list[dict[str, Any]] | None = None
    if command == "detect":
        from .anomaly import Thresholds, detect

        th = Thresholds(args.down_after_seconds, args.violated_buckets, args.disk_alarm)
        anomalies, command = detect(observed, state, settings, th)
        write_json_atomic(out / "anomalies.json", {"at": now_iso(), "anomalies": anomalies})
        for a in anomalies:
            print(f"anomaly: {a['kind']}: {a['detail']}")
        if not anomalies:
            print("balance: no anomaly")
            return 0
        target = []
    doc = make_plan(command, target, observed, state, settings, args.max_steps)
    if anomalies is not None:
        doc["anomalies"] = anomalies
    executed = last_execution(out / "actions.jsonl")
    doc["last_effect"] = table_effect(observed.history, executed) if executed else None
    write_json_atomic(out / "plan.json", doc)
    print(render(doc))
    if doc["last_effect"]:
        print(render_effect(doc["last_effect"]))
    do_apply = args.apply or (args.command == "detect" and args.self_heal)
    if not do_apply:
        return 0
    if view is None:
        raise CommandError("--apply needs --admin URL")
    from .executor import ExecOptions, execute, render_execution

    options = ExecOptions(
        throttle=args.throttle or None,
        max_concurrent=args.max_concurrent_moves,
        move_timeout_s=args.move_timeout_seconds,
        degraded_grace_s=args.degraded_grace_seconds,
        effect_s=args.effect_seconds,
    )

    def progress(so_far: dict[str, Any]) -> None:  # the dashboard shows it from plan.json
        write_json_atomic(out / "plan.json", {**doc, "execution": so_far})

    record = execute(doc, view, args.admin, token, options, progress)
    doc["execution"] = record
    write_json_atomic(out / "plan.json", doc)
    log = AppendLog(out / "actions.jsonl")
    try:
        log.write_json({"plan_generated_at": doc["generated_at"], **record})
    finally:
        log.close()
    print(render_execution(record))
    return 0 if record["status"] == "done" else 1


def _brokers(text: str) -> list[int]:
    try:
        ids = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids, as 3 or 3,4: {text!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("expected at least one broker id")
    return ids


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from ..session import add_spark_args

    p = argparse.ArgumentParser(
        prog="balance",
        description="A balance plan for the cluster from the trend tables (and apply it).",
    )
    p.add_argument("--in", dest="input", required=True, help="the trends job's --out")
    p.add_argument(
        "--admin", action="append", default=[], help="any broker's admin API URL (repeatable)"
    )
    p.add_argument("--token", help="admin bearer token (default: $TRIO_BROKER_ADMIN_TOKEN)")
    p.add_argument("--engine", choices=("spark", "python"), default="spark")
    p.add_argument("--window-seconds", type=float, default=600.0, help="default 600")
    p.add_argument("--down-after-seconds", type=float, default=300.0, help="default 300")
    p.add_argument("--apply", action="store_true", help="execute the plan")
    p.add_argument("--throttle", type=int, default=10_000_000, help="bytes/s; 0: none")
    p.add_argument("--max-concurrent-moves", type=int, default=4)
    p.add_argument("--move-timeout-seconds", type=float, default=600.0)
    p.add_argument("--degraded-grace-seconds", type=float, default=10.0)
    p.add_argument("--effect-seconds", type=float, default=10.0, help="0: no measurement")
    p.add_argument("--self-heal", action="store_true", help="detect: apply the plan")
    p.add_argument("--violated-buckets", type=int, default=5)
    p.add_argument("--disk-alarm", type=float, default=0.85)
    p.add_argument(
        "--history-seconds",
        type=float,
        default=3600.0,
        help="brokers-table buckets kept for detect and for the last plan's effect",
    )
    p.add_argument("--max-steps", type=int, default=1000, help="moves per goal at most")
    for name, value in asdict(Settings()).items():
        flag = "--" + name.replace("_", "-")
        p.add_argument(flag, dest=name, type=type(value), default=value, help=f"default {value}")
    add_spark_args(p)
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("brokers", nargs="?", type=_brokers, default=[])
    args = p.parse_args(argv)
    needs = args.command in ("add-broker", "remove-broker")
    if needs and not args.brokers:
        p.error(f"{args.command} needs broker ids (e.g. {args.command} 3)")
    if not needs and args.brokers:
        p.error(f"{args.command} takes no broker ids")
    if args.self_heal and args.command != "detect":
        p.error("--self-heal goes with detect")
    if (args.apply or args.self_heal) and not args.admin:
        p.error("--apply and --self-heal need --admin URL")
    if args.max_concurrent_moves < 1:
        p.error("--max-concurrent-moves must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except (CommandError, LiveError, TableError) as exc:
        print(f"balance: {exc}", file=sys.stderr)
        return 2
