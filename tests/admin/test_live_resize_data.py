"""Resizing the pools over HTTP under a steady produce and consume load loses, duplicates
and reorders nothing, checked message by message, and the clients see no error."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ..support.brokers import BrokerThread
from .conftest import ADMIN
from .test_live_resize import by_peer, spy_on_closes

PARTITIONS = 4
STEPS = [(2, 1), (16, 4), (8, 3)]  # (io, network): 8 -> 2 -> 16 -> 8, 3 -> 1 -> 4 -> 3


class Load:
    """A producer thread and a consumer thread, with progress the test can wait on."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.produced_all = threading.Event()
        self.cond = threading.Condition()
        self.delivered: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.consumed: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]

    def _error(self, err: object) -> None:
        with self.cond:
            self.errors.append(str(err))
            self.cond.notify_all()

    def _produce(self) -> None:
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "error_cb": self._error,
            }
        )

        def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
            if err is not None:
                self._error(err)
                return
            with self.cond:
                self.delivered[msg.partition()].append((msg.offset(), msg.value()))
                self.cond.notify_all()

        seq = 0
        while not self.stop.is_set():
            for _ in range(200):
                p.produce(
                    "flow", value=b"%08d" % seq, partition=seq % PARTITIONS, on_delivery=on_delivery
                )
                seq += 1
            p.poll(0.005)
        if p.flush(30) != 0:
            self._error("undelivered messages at the end")
        self.produced_all.set()

    def _consume(self) -> None:
        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "resize-check",
                "enable.auto.commit": False,
                "error_cb": self._error,
            }
        )
        c.assign([TopicPartition("flow", p, 0) for p in range(PARTITIONS)])
        while not (self.produced_all.is_set() and self.caught_up()):
            for m in c.consume(500, timeout=0.2):
                if m.error() is not None:
                    self._error(m.error())
                    continue
                with self.cond:
                    self.consumed[m.partition()].append((m.offset(), m.value()))
                    self.cond.notify_all()
        c.close()

    def caught_up(self) -> bool:
        with self.cond:
            return all(len(self.consumed[p]) >= len(self.delivered[p]) for p in self.delivered)

    def counts(self) -> tuple[int, int]:
        with self.cond:
            return (
                sum(len(v) for v in self.delivered.values()),
                sum(len(v) for v in self.consumed.values()),
            )

    def wait_for_more(self, more: int) -> None:
        """Until both clients moved ``more`` messages on (or something failed)."""
        delivered, consumed = self.counts()
        with self.cond:
            ok = self.cond.wait_for(
                lambda: (
                    bool(self.errors)
                    or (
                        sum(len(v) for v in self.delivered.values()) >= delivered + more
                        and sum(len(v) for v in self.consumed.values()) >= consumed + more
                    )
                ),
                timeout=60,
            )
        assert ok, "the load stalled"
        assert not self.errors, self.errors


def test_resizes_under_produce_and_consume_lose_nothing(tmp_path: Path) -> None:
    b = BrokerThread(
        tmp_path / "data", {**ADMIN, "num.io.threads": "8", "num.network.threads": "3"}
    ).start()
    load = Load(b.bootstrap)
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("flow", PARTITIONS, 1)])["flow"].result(10)
        closed = spy_on_closes(b)
        for t in load.threads:
            t.start()
        load.wait_for_more(2000)
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            for io, network in STEPS:
                assert http.put("/v1/pools/io", json={"size": io}).status_code == 200
                r = http.put("/v1/pools/network/PLAINTEXT", json={"size": network})
                assert r.status_code == 200
                shown = http.get("/v1/pools").json()  # the new sizes, at once
                assert shown["io"]["size"] == io
                assert shown["network"]["PLAINTEXT"]["size"] == network
                load.wait_for_more(3000)  # the load flows through the new pools
        load.stop.set()
        for t in load.threads:
            t.join(90)
        assert not load.errors, load.errors
        # Message by message: every delivered message once, in order, offsets contiguous.
        for p in range(PARTITIONS):
            delivered = sorted(load.delivered[p])
            assert [o for o, _ in delivered] == list(range(len(delivered)))
            assert load.consumed[p] == delivered
            values = [int(v) for _, v in delivered]
            assert values == sorted(values) and len(set(values)) == len(values)
        # The broker closed no connection (librdkafka may drop its bootstrap one).
        assert [reason for _, reason in closed if not by_peer(reason)] == []
    finally:
        load.stop.set()
        b.stop()
