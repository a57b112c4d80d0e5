"""Request metrics from a request's stamps: Kafka's time split, Fetch split, closed requests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from trio_broker.network.request import Request, RequestTimes
from trio_broker.protocol.api import ApiSpec
from trio_broker.protocol.header import RequestHeader
from trio_broker.protocol.messages.metadata import MetadataRequest, MetadataResponse
from trio_broker.server.metrics.requests import PHASES, RequestMetrics, replica_id_of
from trio_broker.server.metrics.window import Window

MS = 1_000_000  # ns
META = ApiSpec(3, "Metadata", MetadataRequest, MetadataResponse, MetadataRequest.valid_versions)
FETCH = ApiSpec(1, "Fetch", MetadataRequest, MetadataResponse, MetadataRequest.valid_versions)


def request(spec: ApiSpec, version: int, times: RequestTimes, body: Any = None) -> Request:
    return Request(
        sink=None,  # type: ignore[arg-type]
        connection_id="c1",
        processor_id=0,
        header=RequestHeader(spec.key, version, 1, "c"),
        spec=spec,
        body=body,
        size=100,
        times=times,
    )


def stamps(base: int = 1000 * MS, *, remote: bool = False, throttle_ms: int = 0) -> RequestTimes:
    return RequestTimes(
        start_ns=base,
        dequeue_ns=base + 2 * MS,  # queue 2 ms
        api_local_complete_ns=base + 5 * MS,  # local 3 ms
        response_complete_ns=base + (12 if remote else 5) * MS,  # remote 7 ms or 0
        response_dequeue_ns=base + (13 if remote else 6) * MS,  # response queue 1 ms
        send_complete_ns=base + (17 if remote else 10) * MS,  # send 4 ms
        throttle_ms=throttle_ms,
    )


def test_time_split_matches_split_ms() -> None:
    metrics = RequestMetrics(Window(60))
    t1, t2 = stamps(), stamps(2000 * MS, remote=True, throttle_ms=20)
    metrics.completed(request(META, 12, t1))
    metrics.completed(request(META, 9, t2))
    rt = metrics.by_name["Metadata"]
    epoch = t2.send_complete_ns // rt.window.slot_ns
    for phase in PHASES:
        d = rt.phase(phase).read(epoch)
        expected = sorted([t1.split_ms()[phase], t2.split_ms()[phase]])
        assert d.count == 2
        assert d.sum / 1000 == pytest.approx(sum(expected)), phase
        assert d.max / 1000 == pytest.approx(expected[1]), phase
    assert rt.count == 2 and rt.versions == {12: 1, 9: 1} and rt.bytes == 200
    assert rt.handler_time_us == 6000  # local time 3 ms twice, on the data plane
    assert rt.closed == 0 and rt.error_count == 0


def test_a_request_without_a_response_counts_as_closed() -> None:
    metrics = RequestMetrics(Window(60))
    t = RequestTimes(start_ns=5 * MS, dequeue_ns=6 * MS)  # never sent
    metrics.completed(request(META, 4, t))
    rt = metrics.by_name["Metadata"]
    assert (rt.count, rt.closed, rt.error_count, rt.bytes) == (1, 1, 1, 100)
    assert rt.total.count == 0


def test_fetch_is_split_by_replica_id() -> None:
    metrics = RequestMetrics(Window(60))
    consumer = SimpleNamespace(replica_id=-1)
    follower = SimpleNamespace(replica_id=2)
    v15_follower = SimpleNamespace(replica_id=-1, replica_state=SimpleNamespace(replica_id=1))
    for body in (consumer, consumer, follower, v15_follower):
        metrics.completed(request(FETCH, 12, stamps(), body))
    assert metrics.by_name["FetchConsumer"].count == 2
    assert metrics.by_name["FetchFollower"].count == 2
    assert "Fetch" not in metrics.by_name
    assert replica_id_of(SimpleNamespace()) == -1


def test_error_codes_of_responses_are_counted_per_type() -> None:
    metrics = RequestMetrics(Window(60))
    req = request(META, 12, stamps())
    Topic = MetadataResponse.Topic
    body = MetadataResponse(topics=[Topic(error_code=3), Topic(error_code=0)])
    metrics.response(req, body, 12)
    metrics.response(req, body, 12)
    rt = metrics.by_name["Metadata"]
    assert rt.errors == {3: 2, 0: 2}
    assert rt.error_count == 2
