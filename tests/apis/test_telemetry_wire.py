"""GetTelemetrySubscriptions and PushTelemetry as Kafka answers them, through hand-built
requests where no real client can be made to send them: payloads in every codec Kafka
accepts (built with ``opentelemetry-proto``, compressed with the record codecs), each of
Kafka's push errors, throttling, the terminating push, and the bounds on what is kept
(``client.metrics.max.clients``, and instances dropped after 3 push intervals unheard).
The pushes that work are read back from the admin API."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import snappy
import zstandard

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.telemetry import (
    GetTelemetrySubscriptionsRequest,
    PushTelemetryRequest,
)
from trio_broker.records import Compression
from trio_broker.records.codec import compress
from trio_broker.testing.otlp import MetricSpec, otlp_metrics

from ..support.brokers import BrokerThread
from ..support.wire import WireClient

ZERO = uuid.UUID(int=0)
MAX_BYTES = 4096
INTERVAL_MS = 100


TELEMETRY_SETTINGS = {"telemetry.max.bytes": MAX_BYTES, "client.metrics.max.clients": 5}
TELEMETRY_SUBSCRIPTIONS = {"all": {"metrics": "*", "interval.ms": INTERVAL_MS}}


@pytest.fixture
def wire(telemetry_broker: BrokerThread) -> Iterator[WireClient]:
    with WireClient(telemetry_broker.bootstrap, client_id="wire-app") as client:
        yield client


def payload(padding: int = 0) -> bytes:
    """A MetricsData with a sum, a gauge (with an attribute) and a histogram."""
    metrics = [
        MetricSpec("org.apache.kafka.producer.record.send.total", "sum", 42),
        MetricSpec(
            "org.apache.kafka.producer.node.request.latency.avg", "gauge", 1.5, {"node_id": 3}
        ),
        MetricSpec("org.apache.kafka.producer.batch.size", "histogram", 4096.0, count=4),
    ]
    if padding:
        metrics.append(MetricSpec("x" * padding, "gauge", 0.0))
    return otlp_metrics(metrics, resource={"service.name": "wire-app"})


def get(wire: WireClient, instance_id: uuid.UUID = ZERO) -> Any:
    return wire.request(GetTelemetrySubscriptionsRequest(client_instance_id=instance_id), 0)


def push(
    wire: WireClient,
    got: Any,
    metrics: bytes,
    *,
    compression: int = 0,
    subscription_id: int | None = None,
    terminating: bool = False,
) -> int:
    answer = wire.request(
        PushTelemetryRequest(
            client_instance_id=got.client_instance_id,
            subscription_id=got.subscription_id if subscription_id is None else subscription_id,
            terminating=terminating,
            compression_type=compression,
            metrics=metrics,
        ),
        0,
    )
    return int(answer.error_code)


def entry(http: httpx.Client, instance_id: uuid.UUID) -> dict[str, Any]:
    clients = http.get("/v1/client-metrics").json()["clients"]
    (found,) = [c for c in clients if c["client_instance_id"] == str(instance_id)]
    return found


def test_the_subscription_answer(wire: WireClient) -> None:
    got = get(wire)
    assert got.error_code == ErrorCode.NONE
    assert got.client_instance_id != ZERO
    assert got.push_interval_ms == INTERVAL_MS
    assert got.telemetry_max_bytes == MAX_BYTES
    assert got.requested_metrics == ["*"]
    assert got.delta_temporality is True
    assert got.accepted_compression_types == [
        Compression.ZSTD,
        Compression.LZ4,
        Compression.GZIP,
        Compression.SNAPPY,
    ]
    again = get(wire, got.client_instance_id)  # sooner than one interval: throttled
    assert again.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED


@pytest.mark.parametrize(
    ("compression", "pack"),
    [
        (Compression.NONE, lambda b: b),
        (Compression.GZIP, lambda b: compress(Compression.GZIP, b)),
        (Compression.SNAPPY, lambda b: compress(Compression.SNAPPY, b)),  # xerial framing
        (Compression.SNAPPY, snappy.compress),  # a plain block, as librdkafka sends
        (Compression.LZ4, lambda b: compress(Compression.LZ4, b)),
        (Compression.ZSTD, lambda b: compress(Compression.ZSTD, b)),
    ],
)
def test_a_push_in_every_codec_is_kept(
    wire: WireClient, telemetry_http: httpx.Client, compression: Compression, pack: Any
) -> None:
    got = get(wire)
    assert push(wire, got, pack(payload()), compression=compression) == ErrorCode.NONE
    kept = entry(telemetry_http, got.client_instance_id)
    assert kept["client_id"] == "wire-app"
    assert kept["resource"] == {"service.name": "wire-app"}
    assert kept["metrics"] == {
        "org.apache.kafka.producer.record.send.total": 42.0,
        "org.apache.kafka.producer.node.request.latency.avg{node_id=3}": 1.5,
        "org.apache.kafka.producer.batch.size": {"count": 4, "sum": 4096.0},
    }


def test_kafkas_push_errors(wire: WireClient, telemetry_http: httpx.Client) -> None:
    unknown = type("Got", (), {"client_instance_id": ZERO, "subscription_id": 0})()
    assert push(wire, unknown, payload()) == ErrorCode.INVALID_REQUEST

    got = get(wire)
    wrong = got.subscription_id ^ 1
    assert push(wire, got, payload(), subscription_id=wrong) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    # after UNKNOWN_SUBSCRIPTION_ID the client may ask again at once (Kafka's exception)
    assert get(wire, got.client_instance_id).error_code == ErrorCode.NONE

    cases = [
        ({"compression": 9}, payload(), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        ({}, b"\xff\xff\xff not protobuf", ErrorCode.INVALID_RECORD),
        ({"compression": Compression.GZIP}, b"not gzip", ErrorCode.INVALID_RECORD),
        ({}, payload(padding=MAX_BYTES), ErrorCode.TELEMETRY_TOO_LARGE),
        # over the limit and not OTLP either: the size is what is answered, as in Kafka
        ({}, b"\xff" * (MAX_BYTES + 1), ErrorCode.TELEMETRY_TOO_LARGE),
        # small as sent, over the limit once decompressed
        (
            {"compression": Compression.GZIP},
            gzip.compress(payload(padding=10 * MAX_BYTES)),
            ErrorCode.TELEMETRY_TOO_LARGE,
        ),
    ]
    for options, metrics, code in cases:
        fresh = get(wire)
        assert push(wire, fresh, metrics, **options) == code, (options, code)
        assert entry(telemetry_http, fresh.client_instance_id)["metrics"] == {}

    # a second push sooner than one interval is throttled; a terminating one is not, and
    # nothing is accepted after it
    got = get(wire)
    assert push(wire, got, payload()) == ErrorCode.NONE
    assert push(wire, got, payload()) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert push(wire, got, payload(), terminating=True) == ErrorCode.NONE
    assert push(wire, got, payload()) == ErrorCode.INVALID_REQUEST
    figures = telemetry_http.get("/v1/metrics").json()["client_telemetry"]
    assert figures["throttled"] >= 1 and figures["unknown_subscription"] == 1
    assert figures["push_errors"] >= len(cases) + 3


def test_the_instances_kept_are_capped(wire: WireClient, telemetry_http: httpx.Client) -> None:
    made = [get(wire).client_instance_id for _ in range(8)]
    figures = telemetry_http.get("/v1/metrics").json()["client_telemetry"]
    assert figures["instances"] == 5 and figures["max_instances"] == 5
    assert figures["evicted"] == 3
    kept = {
        c["client_instance_id"] for c in telemetry_http.get("/v1/client-metrics").json()["clients"]
    }
    assert kept == {str(i) for i in made[3:]}  # the least recently heard from went first

    # the cap is dynamic
    r = telemetry_http.put("/v1/config", json={"settings": {"client.metrics.max.clients": 2}})
    assert r.status_code == 200, r.text
    get(wire)
    figures = telemetry_http.get("/v1/metrics").json()["client_telemetry"]
    assert figures["instances"] == 2 and figures["evicted"] == 7


def test_instances_unheard_for_three_intervals_are_dropped(
    telemetry_broker: BrokerThread, wire: WireClient, telemetry_http: httpx.Client
) -> None:
    """Kafka drops an instance unheard for max(60 s, 3 push intervals); the 60 s floor is
    lowered here to 0 (as Kafka's tests do through its constructor) to see the 3 intervals."""

    def no_floor() -> None:
        broker = telemetry_broker.broker
        assert broker is not None
        broker.telemetry.instances.expiry_floor_ms = 0

    telemetry_broker.call(no_floor)
    got = get(wire)
    assert push(wire, got, payload()) == ErrorCode.NONE
    assert telemetry_http.get("/v1/metrics").json()["client_telemetry"]["instances"] == 1
    # 3 intervals of 100 ms, and the sweep runs at most once a second: within 3 s
    deadline = time.monotonic() + 3
    while (figures := telemetry_http.get("/v1/metrics").json()["client_telemetry"])["instances"]:
        assert time.monotonic() < deadline, figures
        time.sleep(0.05)
    assert figures["expired"] == 1 and figures["disconnected"] == 0
    assert telemetry_http.get("/v1/client-metrics").json() == {"clients": []}


def test_the_floor_of_expiry_is_kafkas_60_s(
    telemetry_broker: BrokerThread, wire: WireClient, telemetry_http: httpx.Client
) -> None:
    """With Kafka's floor an instance at a 100 ms interval outlives 3 intervals."""
    got = get(wire)
    assert push(wire, got, payload()) == ErrorCode.NONE
    # past 3 intervals (300 ms) and the next sweep (at most 1 s apart), read twice
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        assert telemetry_http.get("/v1/metrics").json()["client_telemetry"]["instances"] == 1
        time.sleep(0.1)
    assert telemetry_http.get("/v1/metrics").json()["client_telemetry"]["expired"] == 0


def gone(http: httpx.Client, instance_id: uuid.UUID, timeout: float = 5) -> dict[str, Any]:
    """Wait (at most ``timeout`` s) until the instance is no longer listed: the
    ``client_telemetry`` figures then."""
    deadline = time.monotonic() + timeout
    while any(
        c["client_instance_id"] == str(instance_id)
        for c in http.get("/v1/client-metrics").json()["clients"]
    ):
        assert time.monotonic() < deadline, f"{instance_id} still kept after {timeout} s"
        time.sleep(0.02)
    figures: dict[str, Any] = http.get("/v1/metrics").json()["client_telemetry"]
    return figures


def connections_closed(http: httpx.Client) -> int:
    return int(http.get("/v1/metrics").json()["connections"]["closed"])


def test_an_instance_goes_with_the_connection_it_was_made_on(
    telemetry_broker: BrokerThread, wire: WireClient, telemetry_http: httpx.Client
) -> None:
    """Kafka's ClientMetricsManager maps the connection of the request that made an
    instance to it and drops the instance when that connection closes; a request for the
    instance from another connection does not move it there."""
    with WireClient(telemetry_broker.bootstrap, client_id="wire-app") as first:
        got = get(first)
        assert push(first, got, payload()) == ErrorCode.NONE
        closed = connections_closed(telemetry_http)
        with WireClient(telemetry_broker.bootstrap, client_id="wire-app") as second:
            # the same instance, heard from on another connection (throttled: too soon)
            assert get(second, got.client_instance_id).error_code == (
                ErrorCode.THROTTLING_QUOTA_EXCEEDED
            )
        # once the broker has seen the other connection close, the instance is still kept
        deadline = time.monotonic() + 5
        while connections_closed(telemetry_http) == closed:
            assert time.monotonic() < deadline, "the broker did not see the connection close"
            time.sleep(0.02)
        assert entry(telemetry_http, got.client_instance_id)["metrics"]
    figures = gone(telemetry_http, got.client_instance_id)
    assert figures["disconnected"] == 1 and figures["expired"] == 0
    # its client may come back on a new connection: the instance is made again
    again = get(wire, got.client_instance_id)
    assert again.error_code == ErrorCode.NONE
    assert again.client_instance_id == got.client_instance_id
    assert entry(telemetry_http, got.client_instance_id)["metrics"] == {}


def test_a_small_payload_that_decompresses_to_a_lot_is_never_decompressed_whole(
    wire: WireClient, telemetry_http: httpx.Client
) -> None:
    """64 MiB of zeros is ~2 KB of zstd, under telemetry.max.bytes as sent: the broker
    (here, in this process) stops decompressing past the limit instead of making 64 MiB."""
    bomb = zstandard.ZstdCompressor().compress(bytes(64 << 20))
    assert len(bomb) < MAX_BYTES
    got = get(wire)
    tracemalloc.start()
    try:
        code = push(wire, got, bomb, compression=Compression.ZSTD)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == ErrorCode.TELEMETRY_TOO_LARGE
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB allocated for one push"


def test_an_instance_holds_its_latest_push_only(
    wire: WireClient, telemetry_http: httpx.Client
) -> None:
    got = get(wire)
    assert push(wire, got, payload(padding=10)) == ErrorCode.NONE
    assert "x" * 10 in entry(telemetry_http, got.client_instance_id)["metrics"]
    # the next push is accepted one interval (100 ms) later: retried until then, within 5 s
    deadline = time.monotonic() + 5
    while (code := push(wire, got, payload())) == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert code == ErrorCode.NONE
    kept = entry(telemetry_http, got.client_instance_id)
    assert "x" * 10 not in kept["metrics"] and len(kept["metrics"]) == 3
