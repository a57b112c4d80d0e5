"""The figures an operator tunes by: under a produce load that saturates a 1-thread io
pool, RequestQueueTimeMs rises and the handler idle ratio falls; raising num.io.threads
through the admin API reverses both. Real producers, real HTTP."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ...support.brokers import BrokerThread

PARTITIONS = 8
ADMIN = {"admin.listeners": "http://127.0.0.1:0"}


def produce_load(
    bootstrap: str, stop: threading.Event, errors: list[Any]
) -> list[threading.Thread]:
    """Eight producers, one per partition, acks=all: each append waits for an fsync."""

    def run(partition: int) -> None:
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 0,
                "max.in.flight.requests.per.connection": 1,
            }
        )
        while not stop.is_set():
            p.produce(
                "load",
                value=b"x" * 100,
                partition=partition,
                on_delivery=lambda err, _: err is not None and errors.append(err),
            )
            p.poll(0.001)
        p.flush(30)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(PARTITIONS)]
    for t in threads:
        t.start()
    return threads


def phase(http: httpx.Client, requests: int, settle_s: float) -> tuple[float, float]:
    """(mean Produce queue time in ms over the next ``requests`` produce requests, io idle
    ratio over the last window once ``settle_s`` has passed)."""
    start = http.get("/v1/metrics").json()["requests"]["Produce"]["queue_time_ms"]
    began = time.monotonic()
    deadline = began + 60
    while True:
        snap = http.get("/v1/metrics").json()
        q = snap["requests"]["Produce"]["queue_time_ms"]
        if q["count"] - start["count"] >= requests and time.monotonic() - began >= settle_s:
            break
        assert time.monotonic() < deadline, "the load stalled"
        threading.Event().wait(0.1)  # polling a time-windowed figure: nothing to wait on
    mean = (q["sum"] - start["sum"]) / (q["count"] - start["count"])
    return mean, snap["pools"]["io"]["idle_ratio"]


def test_queue_time_and_idle_ratio_say_raise_num_io_threads(tmp_path: Path) -> None:
    b = BrokerThread(
        tmp_path / "data",
        {
            **ADMIN,
            "num.io.threads": "1",
            "log.flush.interval.messages": "1",
            "metrics.window.seconds": "2",
        },
    ).start()
    stop = threading.Event()
    errors: list[Any] = []
    threads: list[threading.Thread] = []
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("load", PARTITIONS, 1)])["load"].result(10)
        threads = produce_load(b.bootstrap, stop, errors)
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            phase(http, 50, 0)  # warm up
            queue_small, idle_small = phase(http, 200, 2.5)
            r = http.put("/v1/pools/io", json={"size": 16})
            assert r.status_code == 200
            phase(http, 50, 0)  # let the backlog drain
            queue_big, idle_big = phase(http, 200, 2.5)
        assert not errors, errors
        assert idle_small < 0.2, idle_small  # the one handler is (almost) never idle
        assert idle_big > idle_small + 0.3, (idle_small, idle_big)
        assert queue_big < queue_small / 2, (queue_small, queue_big)
    finally:
        stop.set()
        for t in threads:  # the producers flush while the broker is still up
            t.join(60)
        b.stop()
