"""The streaming job over a live broker: the Python data source (offsets are snapshot
seqs, a spool for replays), Trigger.AvailableNow runs resumed from one checkpoint, a
processing-time trigger, and the command line. The broker counts the requests the test
sends; the stream's tables must find exactly those."""

from __future__ import annotations

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

from spark_jobs import stream
from spark_jobs.stream_source import Spool
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient
from .conftest import ROOT, spark_cli_args, spark_env
from .synthetic import FakeBroker


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
