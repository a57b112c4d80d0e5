"""Transactional produce against idempotent produce, on the same broker (issue 19).

What it measures: one confluent-kafka producer writes ``--records`` (50000) records of
``--size`` bytes (1 KiB) to a fresh one-partition topic, either idempotently (acks=all, the
default of an idempotent producer) or in transactions of ``--per-txn`` (100) records each
(``begin_transaction``, the records, ``commit_transaction``, which waits for the
coordinator's answer: the commit is decided). Runs alternate, idempotent then
transactional, ``--pairs`` times (3), each on a fresh topic; tables show medians and the
ratio transactional/idempotent is the median of the per-pair ratios. Figures per run:
records/s and MB/s (payload bytes, 1 MB = 10^6 B) from the first ``produce()`` to the
last delivery report (idempotent) or the last commit (transactional), transactions/s,
and the broker's CPU seconds per MB (``/proc/<pid>/stat``).

The broker runs with its defaults, its log directory in ``--data-dir`` (by default
``/dev/shm``, tmpfs, as ``bench/throughput.py``), one broker: a commit costs the EndTxn
round trip, the PREPARE and COMPLETE writes to ``__transaction_state`` and a marker per
partition written in the transaction.

Run from the repository (``scripts/test`` sets up ``.venv``)::

    .venv/bin/python bench/transactions.py              # about a minute
    .venv/bin/python bench/transactions.py --records 10000 --pairs 1

Every load stops by itself: the record count bounds each run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BrokerProcess,
    cpu_seconds,
    default_data_dir,
    header,
    table,
    wait_quiet,
    write_json,
)
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

TITLE = "Transactional produce against idempotent produce"


def run(broker: BrokerProcess, topic: str, args: argparse.Namespace, txn: bool) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    conf: dict[str, Any] = {"bootstrap.servers": broker.bootstrap, "linger.ms": 5}
    if txn:
        conf["transactional.id"] = f"bench-{topic}"
    else:
        conf["enable.idempotence"] = True
    p = Producer(conf)
    if txn:
        p.init_transactions(30)
    value = b"x" * args.size
    # warm-up: the connection and the first request (in a transaction of its own)
    if txn:
        p.begin_transaction()
    p.produce(topic, value=value)
    if txn:
        p.commit_transaction(30)
    assert p.flush(30) == 0
    failures: list[object] = []

    def delivered(err: object, msg: object) -> None:
        if err is not None:
            failures.append(err)

    cpu0, began = cpu_seconds(broker.pid), time.perf_counter()
    txns = 0
    for start in range(0, args.records, args.per_txn if txn else args.records):
        count = min(args.per_txn if txn else args.records, args.records - start)
        if txn:
            p.begin_transaction()
        for _ in range(count):
            while True:
                try:
                    p.produce(topic, value=value, on_delivery=delivered)
                    break
                except BufferError:  # the client's queue is full: let it drain
                    p.poll(0.001)
        if txn:
            p.commit_transaction(60)
            txns += 1
    assert p.flush(60) == 0
    elapsed = time.perf_counter() - began
    cpu = cpu_seconds(broker.pid) - cpu0
    assert not failures, failures[:3]
    mb = args.records * args.size / 1e6
    admin.delete_topics([topic])[topic].result(30)
    return {
        "kind": "transactional" if txn else "idempotent",
        "records_per_s": args.records / elapsed,
        "mb_per_s": mb / elapsed,
        "txns_per_s": txns / elapsed if txn else None,
        "broker_cpu_s_per_mb": cpu / mb,
        "seconds": elapsed,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument("--records", type=int, default=50000, help="records per run (50000)")
    p.add_argument("--size", type=int, default=1024, help="record size in bytes (1024)")
    p.add_argument("--per-txn", type=int, default=100, help="records a transaction (100)")
    p.add_argument("--pairs", type=int, default=3, help="idempotent/transactional pairs (3)")
    p.add_argument(
        "--wait-quiet", type=float, default=30, help="most s waiting for a quiet machine"
    )
    p.add_argument("--data-dir", default=default_data_dir(), help="where the broker's dir goes")
    p.add_argument("--json", help="also write the results here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    options = {k: v for k, v in vars(args).items() if k != "json"}
    print(header(TITLE, options), flush=True)
    if args.wait_quiet:
        wait_quiet(args.wait_quiet)
    runs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    with BrokerProcess([], base_dir=args.data_dir) as broker:
        for i in range(args.pairs):
            idem = run(broker, f"idem-{i}", args, txn=False)
            txn = run(broker, f"txn-{i}", args, txn=True)
            runs.append((idem, txn))
    rows = []
    summary: dict[str, Any] = {}
    for index, kind in enumerate(("idempotent", "transactional")):
        mine = [pair[index] for pair in runs]
        summary[kind] = {
            key: statistics.median(r[key] for r in mine)
            for key in ("records_per_s", "mb_per_s", "broker_cpu_s_per_mb")
        }
        tps = [r["txns_per_s"] for r in mine if r["txns_per_s"] is not None]
        rows.append(
            [
                kind,
                f"{summary[kind]['records_per_s']:,.0f}",
                f"{summary[kind]['mb_per_s']:.1f}",
                f"{statistics.median(tps):.0f}" if tps else "",
                f"{summary[kind]['broker_cpu_s_per_mb'] * 1000:.1f}",
            ]
        )
    ratio = statistics.median(t["mb_per_s"] / i["mb_per_s"] for i, t in runs)
    summary["ratio_transactional_to_idempotent"] = ratio
    print()
    print(table(["producer", "records/s", "MB/s", "txns/s", "broker CPU ms/MB"], rows))
    print(f"\ntransactional/idempotent (median of {len(runs)} pairs): {ratio:.2f}x")
    write_json(args.json, TITLE, options, {"runs": runs, "summary": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
