"""Resizing the io and network pools over HTTP while traffic flows: nothing is dropped.

Many raw connections pipeline bursts of Metadata and ApiVersions requests (each burst in
one write) and check that every response arrives, in order; a confluent-kafka AdminClient
loops list_topics. Meanwhile the test resizes io 8 -> 2 -> 16 -> 8 and network
3 -> 1 -> 4 -> 3 with the admin API, and after each step checks what the API shows:
the new sizes at once, every connection still there, on the surviving processors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import httpx
from confluent_kafka.admin import AdminClient

from trio_broker.network.connection import Connection
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient
from .conftest import ADMIN

CLIENT_THREADS = 6
CLIENTS_PER_THREAD = 4
BURST = 6
STEPS = [(2, 1), (16, 4), (8, 3)]  # (io, network) after each step


class Traffic:
    """Client threads and their progress; ``wait`` blocks until each made more."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.clients = [
            WireClient(address, client_id=f"pipe-{i}", timeout=20)
            for i in range(CLIENT_THREADS * CLIENTS_PER_THREAD)
        ]
        self.bursts = [0] * len(self.clients)
        self.admin_loops = 0
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.progress = threading.Condition()
        self.threads = [
            threading.Thread(target=self._guard(self._pipeline, i), daemon=True)
            for i in range(CLIENT_THREADS)
        ]
        self.threads.append(threading.Thread(target=self._guard(self._admin_client), daemon=True))

    def _guard(self, fn: Callable[..., None], *args: object) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(*args)
            except BaseException as exc:
                self.errors.append(exc)
                with self.progress:
                    self.progress.notify_all()

        return run

    def _pipeline(self, t: int) -> None:
        mine = range(t * CLIENTS_PER_THREAD, (t + 1) * CLIENTS_PER_THREAD)
        n = 0
        while not self.stop.is_set():
            for i in mine:
                client = self.clients[i]
                frames, expected = [], []
                for _ in range(BURST):
                    n += 1
                    if n % 2:
                        corr, data = client.frame(ApiVersionsRequest(), n % 4)
                    else:
                        corr, data = client.frame(MetadataRequest(topics=[]), 1 + n % 12)
                    frames.append(data)
                    expected.append(corr)
                client.send_raw(b"".join(frames))
                got = [client.receive()[0] for _ in expected]
                assert got == expected, f"client {i}: responses out of order"
                with self.progress:
                    self.bursts[i] += 1
                    self.progress.notify_all()

    def _admin_client(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.address})
        while not self.stop.is_set():
            md = admin.list_topics(timeout=10)
            assert list(md.brokers) == [0]
            with self.progress:
                self.admin_loops += 1
                self.progress.notify_all()

    def start(self) -> None:
        for th in self.threads:
            th.start()

    def wait(self, more: int = 2) -> None:
        """Until every client did ``more`` bursts and the AdminClient ``more`` loops."""
        with self.progress:
            target = [b + more for b in self.bursts]
            admin_target = self.admin_loops + more
            ok = self.progress.wait_for(
                lambda: (
                    bool(self.errors)
                    or (
                        all(b >= t for b, t in zip(self.bursts, target, strict=True))
                        and self.admin_loops >= admin_target
                    )
                ),
                timeout=30,
            )
        assert ok, "traffic stalled"
        assert not self.errors, self.errors

    def finish(self) -> None:
        self.stop.set()
        for th in self.threads:
            th.join(30)
        assert not self.errors, self.errors

    def remotes(self) -> set[str]:
        return {f"127.0.0.1:{c.sock.getsockname()[1]}" for c in self.clients}


def by_peer(reason: str) -> bool:
    """Whether the client ended the connection: a clean close, or a reset it sent (as
    librdkafka may when it drops a connection with data still unread)."""
    return reason == "closed by client" or "reset by peer" in reason


def spy_on_closes(b: BrokerThread) -> list[tuple[str, str]]:
    """Record (connection id, close reason) of every PLAINTEXT connection that closes."""
    assert b.broker is not None
    listener = b.broker.socket_server.listener("PLAINTEXT")
    closed: list[tuple[str, str]] = []
    original = listener.connection_closed

    def record(conn: Connection) -> None:
        closed.append((conn.id, conn.close_reason))
        original(conn)

    b.call(setattr, listener, "connection_closed", record)
    return closed


def test_live_resize_under_traffic_drops_nothing(tmp_path: Path) -> None:
    b = BrokerThread(
        tmp_path / "data",
        {**ADMIN, "num.io.threads": "8", "num.network.threads": "3"},
    ).start()
    broker = b.broker
    assert broker is not None
    plaintext = broker.socket_server.listener("PLAINTEXT")
    traffic = Traffic(b.address())
    try:
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            traffic.start()
            traffic.wait(1)
            start = http.get("/v1/pools").json()
            assert start["io"]["size"] == 8 and start["network"]["PLAINTEXT"]["size"] == 3
            before = {c["id"]: c for c in http.get("/v1/connections").json()["connections"]}
            assert traffic.remotes() <= {c["remote"] for c in before.values()}
            closed = spy_on_closes(b)

            for io, network in STEPS:
                r = http.put("/v1/pools/io", json={"size": io})
                assert r.status_code == 200 and r.json()["io"]["size"] == io
                r = http.put("/v1/pools/network/PLAINTEXT", json={"size": network})
                assert r.status_code == 200
                assert r.json()["network"]["PLAINTEXT"]["size"] == network

                shown = http.get("/v1/pools").json()
                assert shown["io"]["size"] == io
                assert shown["network"]["PLAINTEXT"]["size"] == network
                assert shown["network"]["CONTROLLER"]["size"] == 1
                assert b.call(lambda: broker.io_pool.size) == io
                processors = set(b.call(lambda: [p.id for p in plaintext.processors]))
                assert len(processors) == network

                now = {c["id"]: c for c in http.get("/v1/connections").json()["connections"]}
                by_client = {conn_id for conn_id, reason in closed if by_peer(reason)}
                assert set(before) - by_client <= set(now), "a connection disappeared"
                assert traffic.remotes() <= {c["remote"] for c in now.values()}
                for c in now.values():
                    if c["listener"] == "PLAINTEXT":
                        assert c["processor"] in processors, c
                traffic.wait(5)  # traffic flows through the new pools

            cfg = http.get("/v1/config").json()["config"]
            assert (cfg["num.io.threads"], cfg["num.network.threads"]) == ("8", "3")
            traffic.finish()
            # The broker closed nothing (librdkafka may drop its bootstrap connection).
            assert [reason for _, reason in closed if not by_peer(reason)] == []
            # Every pipelining connection still answers.
            for client in traffic.clients:
                assert client.request(MetadataRequest(topics=[]), 4).brokers[0].node_id == 0
            assert sum(traffic.bursts) >= len(traffic.clients) * (1 + 5 * len(STEPS))
    finally:
        traffic.stop.set()
        for client in traffic.clients:
            client.close()
        b.stop()
