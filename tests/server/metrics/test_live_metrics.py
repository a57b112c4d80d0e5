"""Metrics of a real broker over real TCP: the JSON snapshot (against its JSON Schema) and
the Prometheus text carry every figure, and they move as the traffic says."""

from __future__ import annotations

import datetime
import math
from typing import Any

import trio
import trio.testing

from trio_broker.apis.context import RequestContext
from trio_broker.apis.services import NewTopic
from trio_broker.apis.table import API_TABLE
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ...support.gates import Gate, gated_table
from ...support.metrics import labels, prometheus_samples, validate_snapshot
from ...support.wire import AsyncWireClient

METADATA = 3
PHASES = ("queue", "local", "remote", "throttle", "response_queue", "response_send", "total")
TWO_PLANES = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "control.plane.listener.name": "CONTROLLER",
}


def addr(broker, listener: str = "PLAINTEXT") -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()[listener]
    return f"{host}:{port}"


async def test_snapshot_and_prometheus_carry_every_figure(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({**TWO_PLANES, "num.io.threads": "3"})
    client = await AsyncWireClient.connect(addr(broker))
    sent_bytes = {"Metadata": 0, "ApiVersions": 0}
    for i in range(12):
        _, frame = client.frame(MetadataRequest(topics=[]), 1 + i % 12)
        await client.send_raw(frame)
        await client.receive()
        sent_bytes["Metadata"] += len(frame)
    for version in (0, 1, 2, 0, 1):
        _, frame = client.frame(ApiVersionsRequest(), version)
        await client.send_raw(frame)
        await client.receive()
        sent_bytes["ApiVersions"] += len(frame)
    control = await AsyncWireClient.connect(addr(broker, "CONTROLLER"))
    await control.request(MetadataRequest(topics=[]), 4)
    await control.aclose()
    broker.metrics.record_produce("orders", 0, 1000, 10)
    broker.metrics.record_produce("orders", 1, 500, 5)
    broker.metrics.record_produce_failure("payments")
    broker.metrics.record_fetched([("orders", 0, 1200)])
    broker.metrics.record_fetch_failure("orders")
    broker.metrics.record_log_flush(2.5)
    broker.metrics.set_memory_pool(lambda: (900, 100))
    await trio.testing.wait_all_tasks_blocked()

    first = validate_snapshot(broker.metrics_snapshot())
    s = validate_snapshot(broker.metrics_snapshot())
    assert (first["schema"], s["seq"]) == ("trio-broker.metrics/1", first["seq"] + 1)
    assert datetime.datetime.fromisoformat(s["ts"]).tzinfo is not None
    assert s["broker_id"] == 0 and s["uptime_s"] > 0 and s["metrics_enabled"]

    meta, av = s["requests"]["Metadata"], s["requests"]["ApiVersions"]
    assert meta["count"] == 13  # 12 data plane + 1 control plane
    assert meta["versions"] == {str(v): 1 for v in range(1, 13)} | {"4": 2}
    assert meta["bytes"] > sent_bytes["Metadata"]
    assert av["count"] == 5 and av["versions"] == {"0": 2, "1": 2, "2": 1}
    assert av["bytes"] == sent_bytes["ApiVersions"]
    assert av["errors"] == 0 and av["errors_by_code"] == {"NONE": 5}
    for phase in PHASES:
        d = meta[f"{phase}_time_ms"]
        assert d["count"] == 13 and d["window_count"] == 13
        assert 0 <= d["p50"] <= d["p75"] <= d["p95"] <= d["p99"] <= d["p999"] <= d["max"]
    assert meta["total_time_ms"]["max"] > 0 and meta["handler_time_ms"] > 0
    assert meta["rate_per_s"] > 0

    io, ctl = s["pools"]["io"], s["pools"]["control"]
    assert (io["size"], len(io["handlers"]), io["plane"]) == (3, 6, "data")
    assert (ctl["size"], ctl["plane"]) == (1, "control")
    assert set(io["request_share"]) == {"Metadata", "ApiVersions"}
    assert set(ctl["request_share"]) == {"Metadata"}
    net = s["pools"]["network"]
    assert set(net) == {"PLAINTEXT", "CONTROLLER"}
    assert net["PLAINTEXT"]["size"] == len(net["PLAINTEXT"]["processors"]) == 2
    assert sum(p["connections"] for p in net["PLAINTEXT"]["processors"]) == 1
    assert s["request_queue"] == {
        "data": {"size": 0, "capacity": 500},
        "control": {"size": 0, "capacity": 20},
    }
    assert s["response_queue"]["size"] == 0
    c = s["connections"]
    assert (c["count"], c["created"], c["closed"], c["muted"], c["throttled"]) == (1, 2, 1, 0, 0)
    assert c["by_listener"] == {"PLAINTEXT": 1, "CONTROLLER": 0}
    assert s["topics"]["all"] == {
        "messages_in": 15,
        "bytes_in": 1500,
        "bytes_out": 1200,
        "failed_produce_requests": 1,
        "failed_fetch_requests": 1,
    }
    assert s["topics"]["by_topic"]["payments"]["failed_produce_requests"] == 1
    assert s["purgatories"]["fetch"] == {"size": 0, "completed": 0, "expired": 0}
    assert set(s["purgatories"]) == {"fetch", "metadata", "produce", "rebalance", "throttle"}
    assert s["memory_pool"] == {"capacity_bytes": -1, "available_bytes": 900, "used_bytes": 100}
    assert s["log"]["flush_time_ms"]["max"] == 2.5

    # Prometheus: the same figures (no request happened in between).
    p = prometheus_samples(broker.prometheus_text())
    assert broker.metrics_report.seq == s["seq"]  # a scrape takes no snapshot
    requests = p["kafka_network_requests_total"]
    assert requests[labels(request="Metadata", version="4")] == 2
    assert sum(v for k, v in requests.items() if ("request", "Metadata") in k) == 13
    assert p["kafka_network_request_errors_total"][labels(request="ApiVersions", error="NONE")] == 5
    assert p["kafka_network_request_bytes_total"][labels(request="Metadata")] == meta["bytes"]
    for phase in PHASES:
        name = f"kafka_network_request_{phase}_time_ms"
        q = p[name][labels(request="Metadata", quantile="0.99")]
        assert q == meta[f"{phase}_time_ms"]["p99"]
        assert p[name + "_count"][labels(request="Metadata")] == 13
    assert p["kafka_server_request_handler_avg_idle_ratio"][labels(plane="data")] <= 1
    assert len(p["kafka_server_request_handler_idle_ratio"]) == 7  # 2 x 3 io + 1 control
    assert set(p["kafka_network_processor_avg_idle_ratio"]) == {
        labels(listener="PLAINTEXT"),
        labels(listener="CONTROLLER"),
    }
    assert p["kafka_network_request_queue_size"][labels(plane="data")] == 0
    assert p["kafka_network_response_queue_size"][()] == 0
    assert p["kafka_server_purgatory_size"][labels(purgatory="fetch")] == 0
    assert p["kafka_server_connection_count"][labels(listener="PLAINTEXT")] == 1
    assert p["kafka_server_connections_created_total"][()] == 2
    assert p["kafka_server_topic_bytes_in_total"][labels(topic="orders")] == 1500
    assert p["kafka_server_messages_in_total"][()] == 15
    assert p["kafka_server_failed_fetch_requests_total"][()] == 1
    assert p["kafka_network_memory_pool_available_bytes"][()] == 900
    assert p["kafka_log_flush_time_ms"][labels(quantile="0.5")] == 2.5
    share = p["kafka_server_request_handler_pool_usage_ratio"]  # moves with time
    assert 0 < share[labels(plane="data", request="Metadata")] <= 1
    assert 0 < io["request_share"]["Metadata"] <= 1
    await client.aclose()


async def test_a_held_handler_fills_the_queue_and_drains_the_handler_idle_ratio(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    broker = await run_broker(
        {"num.io.threads": "1", "metrics.window.seconds": "1"}, gated_table(METADATA, gate)
    )
    clients = [await AsyncWireClient.connect(addr(broker)) for _ in range(4)]
    before = broker.metrics_snapshot()["pools"]["io"]["handler_idle_ratio"]
    held_at = trio.current_time()
    for c in clients:
        await c.send(MetadataRequest(topics=[]), 9)
    await trio.testing.wait_all_tasks_blocked()
    s = validate_snapshot(broker.metrics_snapshot())
    assert gate.waiting == 2  # the one io thread's two handlers
    assert s["request_queue"]["data"]["size"] == 2
    assert s["pools"]["io"]["busy"] == 2 and s["pools"]["io"]["handlers"][0]["busy"]
    assert s["connections"]["muted"] == 4
    # Time must pass for an idle ratio to move: poll until the held handler dominates.
    with trio.fail_after(5):
        while (idle := broker.metrics_snapshot()["pools"]["io"]["handler_idle_ratio"]) > 0.2:
            await trio.sleep(0.05)
    assert idle < before
    held_ms = (trio.current_time() - held_at) * 1000
    gate.open()
    for c in clients:
        await c.receive()
        await c.aclose()
    await trio.testing.wait_all_tasks_blocked()
    s = validate_snapshot(broker.metrics_snapshot())
    meta = s["requests"]["Metadata"]
    assert meta["count"] == 4
    queued = meta["queue_time_ms"]
    # two requests waited in the queue for about the whole hold, two (held) did not
    assert queued["p75"] >= 0.8 * held_ms and queued["max"] >= 0.8 * held_ms
    assert meta["local_time_ms"]["max"] >= 0.8 * held_ms
    assert s["request_queue"]["data"]["size"] == 0
    assert 0 <= s["pools"]["io"]["handler_idle_ratio"] <= 0.3


async def test_a_request_whose_connection_closes_counts_as_an_error(run_broker) -> None:  # type: ignore[no-untyped-def]
    async def broken(ctx: RequestContext, body: Any) -> Any:
        raise RuntimeError("a broker bug")  # the handler closes the connection

    broker = await run_broker({}, API_TABLE.with_handler(METADATA, broken))
    client = await AsyncWireClient.connect(addr(broker))
    await client.send(MetadataRequest(topics=[]), 9)
    assert await client.closed_by_peer()
    await trio.testing.wait_all_tasks_blocked()
    s = validate_snapshot(broker.metrics_snapshot())
    meta = s["requests"]["Metadata"]
    assert (meta["count"], meta["closed"], meta["errors"]) == (1, 1, 1)
    assert meta["total_time_ms"]["count"] == 0
    assert s["connections"]["closed"] == 1
    p = prometheus_samples(broker.prometheus_text())
    assert p["kafka_network_request_closed_total"][labels(request="Metadata")] == 1
    assert math.isnan(
        p["kafka_network_request_total_time_ms"][labels(request="Metadata", quantile="0.5")]
    )


async def test_disabled_metrics_record_nothing_per_request(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"metrics.enabled": "false"})
    assert broker.request_handler.response_observers == []
    client = await AsyncWireClient.connect(addr(broker))
    for _ in range(3):
        await client.request(MetadataRequest(topics=[]), 9)
    broker.metrics.record_produce("t", 0, 10, 1)
    s = validate_snapshot(broker.metrics_snapshot())
    assert s["metrics_enabled"] is False
    assert s["requests"] == {} and s["topics"]["by_topic"] == {}
    assert s["connections"]["count"] == 1  # gauges are still read
    prometheus_samples(broker.prometheus_text())
    await client.aclose()


async def test_log_flush_times_are_recorded(run_broker) -> None:  # type: ignore[no-untyped-def]
    from trio_broker.records import Record, build_batch

    from ...data.test_wire_data_path import produce_req

    broker = await run_broker({"log.flush.interval.messages": "1"})
    await broker.create_topic(NewTopic("durable", 1))
    client = await AsyncWireClient.connect(addr(broker))
    for i in range(5):
        batch = build_batch([Record(None, b"%d" % i)])
        (p,) = (
            (await client.request(produce_req("durable", batch), 8))
            .responses[0]
            .partition_responses
        )
        assert p.error_code == 0
    await trio.testing.wait_all_tasks_blocked()
    flush = broker.metrics_snapshot()["log"]
    assert flush["flush_time_ms"]["count"] >= 5, flush
