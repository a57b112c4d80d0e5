"""The streaming job over a live broker: the Python data source (offsets are snapshot
seqs, a spool for replays), Trigger.AvailableNow runs resumed from one checkpoint, a
processing-time trigger, and the command line. The broker counts the requests the test
sends; the stream's tables must find exactly those."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql.streaming import StreamingQueryListener

from spark_jobs import stream, trends
from spark_jobs.stream_source import Spool
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient
from .conftest import ROOT, spark_cli_args, spark_env
from .synthetic import FakeBroker, write_jsonl


def test_the_spool_numbers_restarts_and_pairs_each_snapshot_with_the_one_before(
    tmp_path: Path,
) -> None:
    b = FakeBroker()
    spool = Spool(tmp_path, "http://broker:9644")
    snaps = [b.tick(5), b.tick(5)]
    b.restart()
    snaps += [b.tick(5)]
    keys = [spool.add(s, json.dumps(s).encode()) for s in snaps]
    assert keys == [(0, 1), (0, 2), (1, 1)]  # seq starts again: the restart count orders it
    rows = spool.rows("src", (0, 1), (1, 1))
    assert [(r[1], r[2]) for r in rows] == [(0, 2), (1, 1)]
    assert [json.loads(r[4])["seq"] for r in rows] == [1, 2]  # prev: the snapshot before
    spool.prune((0, 2))
    assert spool.keys() == [(0, 2), (1, 1)]  # the committed one stays: the next one's prev
    assert Spool(tmp_path, "http://broker:9644").last()[0] == (1, 1)  # type: ignore[index]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    data = tmp_path_factory.mktemp("stream") / "data"
    b = BrokerThread(data, {"admin.listeners": "http://127.0.0.1:0"}).start()
    yield b
    b.stop()


def send_api_versions(b: BrokerThread, n: int) -> None:
    with WireClient(b.bootstrap) as client:
        for _ in range(n):
            client.request(ApiVersionsRequest(), 3)


def table(out: Path, name: str) -> list[dict[str, Any]]:
    if not (out / name).exists():
        return []
    return sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["time"])


def test_available_now_runs_resume_from_the_checkpoint(
    spark: Any, broker: BrokerThread, tmp_path: Path
) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    runs = 3
    for _ in range(runs):
        send_api_versions(broker, 3)
        query = stream.start(
            spark, [broker.admin_url], out, checkpoint, bucket_s=1, available_now=True
        )
        query.awaitTermination(120)
        assert query.exception() is None
    # Each run added one snapshot; the last one's bucket is still open (the watermark).
    conns = table(out, "connections")
    assert len(conns) == runs - 1 and all(r["snapshots"] == 1 for r in conns)
    api = [r for r in table(out, "requests") if r["request"] == "ApiVersions"]
    assert [r["requests"] for r in api] == [None] + [3] * (runs - 2)  # the first has no prev
    assert all(r["request_rate"] > 0 for r in api[1:])
    io = [r for r in table(out, "pools") if r["pool"] == "io"]
    assert {r["size"] for r in io} == {4} and len(io) == runs - 1
    spooled = list((checkpoint / "spool").rglob("*.json"))
    assert len(spooled) <= 2  # committed snapshots are dropped, all but the last

    # The command line, on the same checkpoint: one more run, one more bucket closed.
    send_api_versions(broker, 2)
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_jobs.stream",
            "--admin",
            broker.admin_url,
            "--out",
            str(out),
            "--checkpoint",
            str(checkpoint),
            "--bucket-seconds",
            "1",
            "--available-now",
            *spark_cli_args(),
        ],
        capture_output=True,
        text=True,
        env=spark_env(),
        cwd=ROOT,
        timeout=180,
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    api = [r for r in table(out, "requests") if r["request"] == "ApiVersions"]
    assert [r["requests"] for r in api][-1] == 3 and len(api) == runs


class Progress(StreamingQueryListener):
    """Sets ``ready`` once ``n`` micro-batches with input have completed."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen = 0
        self.ready = threading.Event()

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        if event.progress.numInputRows > 0:
            self.seen += 1
            if self.seen >= self.n:
                self.ready.set()

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.ready.set()


def test_a_processing_time_stream_writes_closed_buckets(
    spark: Any, broker: BrokerThread, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    listener = Progress(4)
    spark.streams.addListener(listener)
    try:
        query = stream.start(
            spark, [broker.admin_url], out, tmp_path / "checkpoint", interval_s=1.0, bucket_s=1
        )
        assert listener.ready.wait(120)
        query.stop()
    finally:
        spark.streams.removeListener(listener)
    assert query.exception() is None
    conns = table(out, "connections")
    assert len(conns) >= 2
    assert all(r["connections_max"] is not None for r in conns)


P = "org.apache.kafka.producer."


def client_line(b: FakeBroker, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The scraper's client line beside ``snapshot``: on broker 0, one producer that pushed
    a second before it (its latency moving with the snapshot's seq), on others none."""
    t = dt.datetime.fromisoformat(snapshot["ts"].replace("Z", "+00:00")).timestamp()
    seq = int(snapshot["seq"])
    clients = []
    if b.broker_id == 0:
        clients.append(
            {
                "client_instance_id": "00000000-0000-0000-0000-000000000001",
                "client_id": "app-p",
                # As Kafka's Java client names its producer metrics under KIP-714; it
                # pushes the batch size and in-flight count that librdkafka does not.
                "client_software_name": "apache-kafka-java",
                "client_software_version": "4.1.0",
                "client_source_address": "127.0.0.1",
                "push_interval_ms": 10000,
                "last_push_time": t - 1.0,
                # the broker's count of its connection, growing 1000 bytes in a snapshot
                "broker_connections": [
                    {"id": "c1", "bytes_in": 1000 * seq, "bytes_out": 100 * seq}
                ],
                "metrics": {
                    P + "request.latency.avg": 2.0 + seq % 5,
                    P + "request.latency.max": 10.0 + seq % 7,
                    P + "record.queue.time.avg": 0.5,
                    P + "record.queue.time.max": 1.0,
                    P + "batch.size.avg": 1500.0,
                    P + "requests.in.flight": 2.0,
                    P + "outgoing.byte.total": 900.0,  # since its last push (delta)
                },
            }
        )
    return {
        "schema": "trio-broker.client-metrics/1",
        "broker_id": b.broker_id,
        "ts": snapshot["ts"],
        "clients": clients,
    }


def scraped_hours(scraped: Path, brokers: list[FakeBroker], ticks: int) -> None:
    """``ticks`` snapshots 10 s apart per broker, appended in the scraper's layout, each
    with its client line beside it."""
    for _ in range(ticks):
        for b in brokers:
            s = b.tick(
                10,
                requests={"Produce": 60, "Metadata": 6},
                queue_ms={"Produce": 0.3},
                local_ms={"Produce": 1.5},
                io_idle=0.5,
            )
            t = s["ts"]
            hour = scraped / f"broker={b.broker_id}" / f"date={t[:10]}" / f"hour={t[11:13]}"
            write_jsonl(hour.with_suffix(".jsonl"), [s])
            write_jsonl(hour.with_suffix(".clients.ndjson"), [client_line(b, s)])


def run_stream_cli(scraped: Path, out: Path, checkpoint: Path) -> str:
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_jobs.stream",
            "--in",
            str(scraped),
            "--out",
            str(out),
            "--checkpoint",
            str(checkpoint),
            "--available-now",
            *spark_cli_args(),
        ],
        capture_output=True,
        text=True,
        env=spark_env(),
        cwd=ROOT,
        timeout=300,  # a bound, not a speed check: 135-210 s seen with the machine shared
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    return cli.stdout


def test_available_now_over_the_scrapers_output_writes_what_the_batch_job_writes(
    spark: Any, tmp_path: Path
) -> None:
    scraped, out, checkpoint = tmp_path / "scraped", tmp_path / "out", tmp_path / "ckpt"
    brokers = [FakeBroker(0), FakeBroker(1, io_size=4)]  # T0 23:50: crosses midnight
    scraped_hours(scraped, brokers, 30)  # 5 minutes
    first = run_stream_cli(scraped, out, checkpoint)
    # The first run processes everything scraped so far and says what it wrote: the five
    # minutes 23:50-23:54 of both brokers; the snapshot at 23:55:00 opens a bucket whose
    # end no snapshot has passed yet.
    assert "read 60 snapshots" in first and "wrote 10 buckets" in first, first
    assert "after 2025-03-01T23:55:00" in first
    assert len(table(out, "connections")) == 10
    # the client tables of the same five closed buckets: one producer, pushing every 10 s
    assert "clients 5, produce_path 5" in first, first
    assert {r["pushes"] for r in table(out, "clients")} == {6}
    assert {(r["batch_size_avg"], r["in_flight_avg"]) for r in table(out, "clients")} == {
        (1500.0, 2.0)
    }
    # the broker's bytes: 1000 a snapshot, six pairs of snapshots a minute (four in the
    # first, whose snapshots begin at 23:50:10 with none before); its own count, 900 a push
    bytes_in = [r["broker_bytes_in"] for r in table(out, "clients")]
    assert bytes_in[0] == 4000 and set(bytes_in[1:]) == {6000}, bytes_in
    assert {r["client_outgoing_bytes"] for r in table(out, "clients")} == {5400.0}

    # The scraper goes on past midnight (a new date, a new hour file), then a torn line.
    scraped_hours(scraped, brokers, 36)
    torn = scraped / "broker=0" / "date=2025-03-02" / "hour=00.jsonl"
    with torn.open("a") as f:
        f.write('{"schema": "trio-broker.metrics/1", "broker_id": 0, "se')
    second = run_stream_cli(scraped, out, checkpoint)
    assert "read 72 snapshots" in second and "wrote 12 buckets" in second, second

    # Together: every bucket the batch job writes for the same lines, but the open one.
    batch = tmp_path / "batch"
    torn.write_bytes(torn.read_bytes().rsplit(b"\n", 1)[0] + b"\n")
    trends.run(spark, str(scraped), str(batch), bucket_s=60, trend_window_s=600)  # type: ignore[arg-type]
    for name in ("requests", "pools", "connections", "clients", "produce_path"):
        streamed = table(out, name)
        columns = list(streamed[0])
        expected = [
            {c: r[c] for c in columns}
            for r in table(batch, name)
            if r["time"] < streamed[-1]["time"] + dt.timedelta(minutes=1)
        ]
        key = lambda r: json.dumps(r, default=str, sort_keys=True)  # noqa: E731
        assert sorted(map(key, streamed)) == sorted(map(key, expected)), name
    assert len(table(batch, "connections")) == len(table(out, "connections")) + 2
