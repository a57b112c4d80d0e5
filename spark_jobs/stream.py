"""The streaming job: the trends job's bucket tables, live, from brokers' admin APIs.

    python -m spark_jobs.stream (--admin URL [--admin URL2] | --in SCRAPED) --out DIR
        --checkpoint DIR [--interval S] [--available-now] [--duration S]
    spark-submit spark_jobs/stream.py ...   (same options)

Owns: the query over one of two sources: live brokers,
``readStream.format("trio_broker_metrics")`` (``spark_jobs.stream_source``, one snapshot per
broker and micro-batch, its spool under ``CHECKPOINT/spool``), or the scraper's output,
``format("trio_broker_scraped")`` (``spark_jobs.scraped_source``, every line appended since
the last micro-batch); the same ``bucket_rows``/``aggregate``/``split`` as
the batch job with a watermark on the snapshot time, in append mode: a bucket is written
once the watermark has passed its end. Each micro-batch writes the ``requests``, ``pools``
and ``connections`` tables under ``--out`` in the batch job's layout
(``<table>/date=YYYY-MM-DD/``), one file per micro-batch named by its batch id and
replaced atomically, so a micro-batch replayed after a failure rewrites the same file
(exactly once). Over the scraper's output (``--in``) it also writes the client tables,
``clients`` and ``produce_path``, for the buckets the micro-batch closed, with the batch
job's own functions (``spark_jobs.client_tables``) over the ``*.clients.ndjson`` lines
scraped so far (each micro-batch reads them all again: their cost grows with the scrape)
and the micro-batch's ``requests``; pushes in a bucket that no snapshot closes (a gap in
the scrape) are not written, where the batch job writes them. Over live brokers
(``--admin``) there are no client tables: the source reads ``/v1/metrics`` only.
``--available-now`` runs one ``Trigger.AvailableNow`` query and exits (run it from cron):
with ``--in``, everything scraped so far on the first run and what was appended since on
later ones; with ``--admin``, one fresh snapshot per broker (a bucket
needs a later snapshot past its end, so a first run writes nothing). Otherwise a
micro-batch every ``--interval`` seconds until ``--duration`` or SIGTERM. At the end it
says how many snapshots it read and how many buckets it wrote, and which bucket stays open.
Must not: compute anything the batch job computes differently.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

if __package__ in (None, ""):  # spark-submit spark_jobs/stream.py: find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from spark_jobs import scraped_source, stream_source
from spark_jobs.aggregate import aggregate, bucket_rows, split
from spark_jobs.client_tables import clients_table, produce_path, read_client_lines
from spark_jobs.fetch import token_from_env
from spark_jobs.session import add_spark_args, parse_confs, spark_session


class TableWriter:
    """``foreachBatch``: one micro-batch of closed buckets into the three tables, and with
    ``clients_in`` (the scraper's output) the client tables of those buckets."""

    def __init__(self, out: Path, bucket_s: int, clients_in: Path | None = None) -> None:
        self.out = out
        self.bucket_s = bucket_s
        self.clients_in = clients_in
        self.rows: dict[str, int] = {}  # rows written per table, this process

    def client_tables(self, tables: dict[str, DataFrame]) -> dict[str, DataFrame]:
        """``clients`` and ``produce_path`` for the buckets this micro-batch closed (those
        with a ``connections`` row), by the batch job's code over the pushes scraped so far
        and this micro-batch's ``requests``."""
        connections = tables["connections"]
        if self.clients_in is None or connections.isEmpty():  # no bucket closed
            return {}
        lines = read_client_lines(connections.sparkSession, str(self.clients_in))
        if lines is None:
            return {}
        closed = connections.select("time").distinct()
        clients = clients_table(lines, self.bucket_s).join(closed, "time", "left_semi")
        return {"clients": clients, "produce_path": produce_path(clients, tables["requests"])}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        batch = batch.persist()
        try:
            tables = split(batch, self.bucket_s)
            tables.update(self.client_tables(tables))
            for name, df in tables.items():
                table = df.toArrow()
                if table.num_rows == 0:
                    continue
                self.rows[name] = self.rows.get(name, 0) + table.num_rows
                dates = table.column("date")
                for date in sorted(set(dates.to_pylist())):
                    part = table.filter(pc.equal(dates, pa.scalar(date))).drop_columns(["date"])
                    directory = self.out / name / f"date={date}"
                    directory.mkdir(parents=True, exist_ok=True)
                    path = directory / f"stream-{batch_id:010d}.parquet"
                    tmp = directory / f".{path.name}.tmp"
                    pq.write_table(part, tmp)
                    os.replace(tmp, path)
        finally:
            batch.unpersist()


def start(
    spark: SparkSession,
    admins: list[str],
    out: Path,
    checkpoint: Path,
    *,
    scraped: Path | None = None,
    token: str | None = None,
    interval_s: float = 10.0,
    bucket_s: int = 60,
    watermark_s: int = 0,
    available_now: bool = False,
    writer_fn: TableWriter | None = None,
) -> StreamingQuery:
    """Start the query over live brokers (``admins``) or the scraper's output
    (``scraped``); with ``available_now`` it ends by itself."""
    if scraped is not None:
        scraped_source.register(spark)
        source = spark.readStream.format(scraped_source.NAME).load(str(scraped))
    else:
        stream_source.register(spark)
        reader = (
            spark.readStream.format(stream_source.NAME)
            .option("admin", ",".join(admins))
            .option("spoolDir", str(checkpoint / "spool"))
            .option("minIntervalSeconds", str(interval_s / 2))
        )
        if token:
            reader = reader.option("token", token)
        source = reader.load()
    rows = bucket_rows(source.select("value", "prev"))
    agg = aggregate(rows.withWatermark("ts", f"{watermark_s} seconds"), bucket_s)
    writer = (
        agg.writeStream.outputMode("append")
        .option("checkpointLocation", str(checkpoint / "query"))
        .foreachBatch(writer_fn or TableWriter(out, bucket_s, scraped))
        .queryName("trio-broker-metrics")
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{interval_s} seconds")
    return writer.start()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="stream", description="The per-bucket trend tables, live from brokers."
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--admin", action="append", help="admin API URL (repeatable)")
    source.add_argument(
        "--in", dest="scraped", type=Path, help="the scraper's output directory (--out of scrape)"
    )
    p.add_argument("--token", help="admin bearer token (default: $TRIO_BROKER_ADMIN_TOKEN)")
    p.add_argument("--out", type=Path, required=True, help="directory of the Parquet tables")
    p.add_argument("--checkpoint", type=Path, required=True, help="checkpoint directory")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between micro-batches")
    p.add_argument("--bucket-seconds", type=int, default=60)
    p.add_argument(
        "--watermark-seconds",
        type=int,
        default=0,
        help="how late a snapshot may come (they arrive in order: 0)",
    )
    p.add_argument("--available-now", action="store_true", help="one run, then exit")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    add_spark_args(p)
    return p.parse_args(argv)


def summary(query: StreamingQuery, writer: TableWriter, out: Path) -> str:
    """What a run did, in one line: snapshots read, buckets written, what stays open."""
    progress: list[Any] = query.recentProgress  # the last 100 micro-batches at most
    snapshots = sum(int(p["numInputRows"]) for p in progress)
    batches = len(progress)
    watermarks = [
        w
        for p in progress
        if (w := (p.get("eventTime") or {}).get("watermark")) and not w.startswith("1970-")
    ]
    buckets = writer.rows.get("connections", 0)  # one row per bucket and broker
    names = ["requests", "pools", "connections"]
    if writer.clients_in is not None:
        names += ["clients", "produce_path"]
    tables = ", ".join(f"{t} {writer.rows.get(t, 0)}" for t in names)
    last = " (the last 100)" if batches >= 100 else ""
    line = (
        f"stream: read {snapshots} snapshot{'' if snapshots == 1 else 's'} in {batches} "
        f"micro-batch{'' if batches == 1 else 'es'}{last}; wrote {buckets} "
        f"bucket{'' if buckets == 1 else 's'} (rows: {tables}) -> {out}"
    )
    if snapshots:
        after = f" after {watermarks[-1]}" if watermarks else ""
        line += f"; a bucket{after} is written once a later snapshot passes its end"
    return line


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = spark_session("trio-broker-stream", args.master, parse_confs(args.conf))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    writer = TableWriter(args.out, args.bucket_seconds, args.scraped)
    try:
        query = start(
            spark,
            args.admin or [],
            args.out,
            args.checkpoint,
            scraped=args.scraped,
            token=args.token or token_from_env(),
            interval_s=args.interval,
            bucket_s=args.bucket_seconds,
            watermark_s=args.watermark_seconds,
            available_now=args.available_now,
            writer_fn=writer,
        )
        if args.available_now:
            query.awaitTermination()
        else:
            stop.wait(args.duration)
            query.stop()
        exc = query.exception()
        if exc is not None:
            print(f"stream: {exc}", file=sys.stderr)
            return 1
        print(summary(query, writer, args.out))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
