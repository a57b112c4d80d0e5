"""A broker bug met by one request costs that request only (Kafka's KafkaApis catch-all):
a handler, the throttler, a response observer or a request observer that raises. The
client of that request gets UNKNOWN_SERVER_ERROR where its response has an error code (or
a closed connection where it has none), the failure is logged once with its traceback and
counted, and a second client, on its own connection, sees nothing of it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from trio_broker.apis.context import RequestContext
from trio_broker.apis.metadata import handle as handle_metadata
from trio_broker.apis.services import NewTopic
from trio_broker.apis.table import API_TABLE
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.records import Record, build_batch

from ..data.test_wire_data_path import produce_req
from ..support.metrics import validate_snapshot
from ..support.wire import AsyncWireClient

METADATA = 3
UNKNOWN = int(ErrorCode.UNKNOWN_SERVER_ERROR)


def addr(broker: Any) -> str:
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


def asking(*names: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.Topic(name=n) for n in names])


def bug_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info and "a broker bug" in str(r.exc_info[1])]


async def metadata_works(client: AsyncWireClient) -> None:
    """A request on a connection that must not have noticed anything."""
    (topic,) = (await client.request(asking("fine"), 12)).topics
    assert topic.name == "fine" and topic.error_code != UNKNOWN


async def test_a_failing_handler_answers_unknown_server_error_to_that_request_only(
    run_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def buggy(ctx: RequestContext, body: Any) -> Any:
        if body.topics and body.topics[0].name == "boom":
            raise RuntimeError("a broker bug")
        return await handle_metadata(ctx, body)

    broker = await run_broker({}, API_TABLE.with_handler(METADATA, buggy))
    victim = await AsyncWireClient.connect(addr(broker))
    bystander = await AsyncWireClient.connect(addr(broker))
    await metadata_works(bystander)

    response = await victim.request(asking("boom", "other"), 12)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("boom", UNKNOWN),
        ("other", UNKNOWN),
    ]
    await metadata_works(victim)  # the same connection goes on
    await metadata_works(bystander)

    (logged,) = bug_records(caplog)  # once, with its traceback
    assert logged.levelno == logging.ERROR and "Metadata" in logged.getMessage()
    snapshot = validate_snapshot(broker.metrics_snapshot())
    meta = snapshot["requests"]["Metadata"]
    assert meta["errors_by_code"]["UNKNOWN_SERVER_ERROR"] == 2  # one per topic
    # Counted where an operator looks: the snapshot and Prometheus.
    assert snapshot["broker_errors"] == {"total": 1, "by_request": {"Metadata": 1}}
    prometheus = broker.prometheus_text().decode()
    assert 'kafka_server_broker_errors_total{request="Metadata"} 1.0' in prometheus
    await victim.aclose()
    await bystander.aclose()


async def test_without_an_error_code_to_carry_it_only_that_connection_closes(
    run_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def buggy(ctx: RequestContext, body: Any) -> Any:
        if body.topics is None:  # all topics: an empty answer would read as "no topics"
            raise RuntimeError("a broker bug")
        return await handle_metadata(ctx, body)

    broker = await run_broker({}, API_TABLE.with_handler(METADATA, buggy))
    victim = await AsyncWireClient.connect(addr(broker))
    bystander = await AsyncWireClient.connect(addr(broker))
    await victim.send(MetadataRequest(topics=None), 12)
    with trio.fail_after(10):
        assert await victim.closed_by_peer()
    await metadata_works(bystander)
    assert len(bug_records(caplog)) == 1
    await trio.testing.wait_all_tasks_blocked()
    meta = validate_snapshot(broker.metrics_snapshot())["requests"]["Metadata"]
    assert meta["closed"] == 1
    await bystander.aclose()


async def test_a_failing_response_observer_or_throttler_answers_unknown_server_error(
    run_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    broker = await run_broker({})
    await broker.create_topic(NewTopic("orders", 1))
    handler = broker.request_handler

    def observer(request: Any, response: Any, version: int) -> None:
        if request.header.client_id == "victim":
            raise RuntimeError("a broker bug")

    handler.response_observers.insert(0, observer)  # before the metrics' own
    victim = await AsyncWireClient.connect(addr(broker), client_id="victim")
    bystander = await AsyncWireClient.connect(addr(broker), client_id="bystander")
    batch = build_batch([Record(None, b"v")])

    async def produce(client: AsyncWireClient) -> int:
        (topic,) = (await client.request(produce_req("orders", batch), 8)).responses
        assert topic.name == "orders"
        (p,) = topic.partition_responses
        assert p.index == 0
        return int(p.error_code)

    assert await produce(victim) == UNKNOWN
    assert await produce(bystander) == 0
    handler.response_observers.remove(observer)

    throttler = handler.throttler
    assert throttler is not None
    real = throttler.throttle_ms

    def throttle_ms(request: Any, size: int) -> int:
        if request.header.client_id == "victim":
            raise RuntimeError("a broker bug")
        return real(request, size)

    throttler.throttle_ms = throttle_ms  # type: ignore[method-assign]
    assert await produce(victim) == UNKNOWN
    assert await produce(bystander) == 0
    throttler.throttle_ms = real  # type: ignore[method-assign]
    await metadata_works(victim)  # the victim's connection is still open
    assert len(bug_records(caplog)) == 2
    produce_errors = validate_snapshot(broker.metrics_snapshot())["requests"]["Produce"]
    assert produce_errors["errors_by_code"]["UNKNOWN_SERVER_ERROR"] == 2
    assert handler.failures == {"Produce": 2}
    await victim.aclose()
    await bystander.aclose()


async def test_a_failing_request_observer_closes_that_connection_only(
    run_broker: Any, caplog: pytest.LogCaptureFixture
) -> None:
    broker = await run_broker({})

    def observer(request: Any) -> None:
        if request.header.client_id == "victim":
            raise RuntimeError("a broker bug")

    broker.socket_server.request_observers.insert(0, observer)
    victim = await AsyncWireClient.connect(addr(broker), client_id="victim")
    bystander = await AsyncWireClient.connect(addr(broker), client_id="bystander")
    # The response is written before the request's end is observed: the client has it.
    await metadata_works(victim)
    with trio.fail_after(10):
        assert await victim.closed_by_peer()
    await metadata_works(bystander)
    assert len(bug_records(caplog)) == 1
    await trio.testing.wait_all_tasks_blocked()
    s = validate_snapshot(broker.metrics_snapshot())
    assert s["connections"]["bad_requests"] == {"InternalError": 1}
    assert s["requests"]["Metadata"]["count"] == 2  # the metrics still saw both
    await bystander.aclose()
