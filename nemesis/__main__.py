"""``python -m nemesis``: runs of each nemesis over the queue, transactional and
consumer-group workloads, and their table.

Each run starts a fresh cluster (ZooKeeper and three brokers in namespaces), applies one
nemesis again and again for ``--duration`` seconds (``--fault`` seconds on, ``--gap`` off),
or with ``--mix`` the chosen nemeses in a random order, heals, settles and checks. The
table goes to stdout (and ``--out``); a run with an anomaly prints its details and makes
the exit status 1. So does a run that ends in an error (a check that cannot finish, such
as a final read that stops short: the cluster did not serve after the heal); it is listed
under the table, the other runs go on, and ``--keep-logs DIR`` keeps the logs of both.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import sys
import tempfile
from pathlib import Path

from .net import available
from .run import NEMESES, Result, run, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nemesis", description=__doc__)
    parser.add_argument(
        "--nemesis",
        default=",".join(NEMESES),
        help="comma-separated names; a+b applies nemeses a and b at once",
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60, help="seconds of faults a run")
    parser.add_argument("--fault", type=float, default=12, help="seconds a fault lasts")
    parser.add_argument("--gap", type=float, default=6, help="seconds between faults")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument(
        "--mix",
        action="store_true",
        help="each run applies the chosen nemeses in a random order (--seed) instead of one",
    )
    parser.add_argument("--seed", type=int, default=0, help="the order of --mix runs")
    parser.add_argument(
        "--no-transactions",
        action="store_true",
        help="the queue workload only (by default the transactional one runs beside it)",
    )
    parser.add_argument(
        "--groups",
        type=int,
        default=3,
        help="members of the consumer group reading the queue and committing (0: none)",
    )
    parser.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="the group's protocol: classic, or consumer (KIP-848)",
    )
    parser.add_argument(
        "--admin-ops",
        action="store_true",
        help="also create, change and delete topics throughout (the admin workload)",
    )
    parser.add_argument(
        "--unclean", action="store_true", help="unclean.leader.election.enable=true: loss expected"
    )
    parser.add_argument(
        "--keep-logs",
        type=Path,
        help="copy the ZooKeeper and broker logs of a run with an anomaly or an error here",
    )
    args = parser.parse_args(argv)
    if (why := available()) is not None:
        print(why, file=sys.stderr)
        return 2
    names = [n.strip() for n in args.nemesis.split(",") if n.strip()]
    unknown = [part for n in names for part in n.split("+") if part not in NEMESES]
    if unknown:
        parser.error(f"unknown nemesis {unknown}; known: {', '.join(NEMESES)}")
    settings = {"unclean.leader.election.enable": "true"} if args.unclean else None
    rounds = max(1, math.ceil(args.duration / (args.fault + args.gap)))
    rows: dict[str, list[Result]] = {}
    errors: list[str] = []
    bad = 0
    rng = random.Random(args.seed)
    plans = [("mixed", names)] if args.mix else [(name, [name]) for name in names]
    for name, pool in plans:
        for i in range(args.runs):
            schedule = [rng.choice(pool) for _ in range(rounds)] if args.mix else pool * rounds
            with tempfile.TemporaryDirectory(prefix="nemesis-") as tmp:
                print(f"{name} run {i + 1}/{args.runs}", file=sys.stderr)
                try:
                    result = run(
                        Path(tmp),
                        schedule,
                        fault_s=args.fault,
                        gap_s=args.gap,
                        settings=settings,
                        transactions=not args.no_transactions,
                        groups=args.groups,
                        group_protocol=args.group_protocol,
                        admin_ops=args.admin_ops,
                        log=lambda line: print(line, file=sys.stderr),
                    )
                except Exception as exc:  # a run that cannot finish its checks is a finding
                    bad += 1
                    errors.append(f"{name} run {i + 1}: {type(exc).__name__}: {exc}")
                    print(f"  {errors[-1]}", file=sys.stderr)
                    keep_logs(Path(tmp), args.keep_logs, f"{name}-run{i + 1}")
                    continue
                verdicts = (result.verdict, result.txn, result.group, result.admin)
                if any(v is not None and not v.ok for v in verdicts):
                    keep_logs(Path(tmp), args.keep_logs, f"{name}-run{i + 1}")
            print(f"  {result.verdict.summary()} ({result.seconds:.0f} s)", file=sys.stderr)
            for extra in (result.txn, result.group, result.admin):
                if extra is not None:
                    print(f"  {extra.summary()}", file=sys.stderr)
            for verdict in verdicts:
                if verdict is not None and not verdict.ok:
                    bad += 1
                    print(f"  {verdict.details()}", file=sys.stderr)
            rows.setdefault(name, []).append(result)
    report = table(rows)
    if errors:  # not in the table's counts: such a run has no history to check
        report += "\n\nRuns that ended in an error:\n" + "\n".join(f"- {e}" for e in errors)
    print(report)
    if args.out is not None:
        args.out.write_text(report + "\n")
    return 1 if bad else 0


def keep_logs(base: Path, into: Path | None, name: str) -> None:
    """Copy the run's ZooKeeper and broker logs (not their data) to ``into/name``."""
    if into is None:
        return
    target = into / name
    target.mkdir(parents=True, exist_ok=True)
    for found in [base / "zookeeper.log", *sorted(base.glob("*/broker.log"))]:
        if found.is_file():
            dest = target / (
                "zookeeper.log" if found.parent == base else f"{found.parent.name}.log"
            )
            shutil.copyfile(found, dest)
    print(f"  logs kept in {target}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
