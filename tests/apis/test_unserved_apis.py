"""What the broker does not serve is refused at once, never with an error that makes a
client wait (issue 19's "honest refusals").

- KIP-932's share groups, and KIP-848's consumer protocol when
  group.coordinator.rebalance.protocols leaves it out: listed in ApiVersions and refused
  UNSUPPORTED_VERSION, so librdkafka's consumer and share consumer fail at once (left out,
  librdkafka looks for the coordinator again and again, silently).
- Every other Kafka API the broker does not serve: left out of ApiVersions; a client that
  sends one anyway has its connection closed at once (as Kafka does), logged with the API's
  name and counted, and every other connection goes on.
- The APIs librdkafka probes and finds absent, it does without: telemetry (KIP-714); and
  a classic group, which ConsumerGroupDescribe does not find, it describes with
  DescribeGroups.
"""

from __future__ import annotations

import logging
import struct
import time

import pytest
import trio
import trio.testing
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient

from trio_broker.apis.table import API_TABLE
from trio_broker.apis.unserved import CONSUMER_PROTOCOL_REFUSED, SHARE_GROUPS_REFUSED
from trio_broker.protocol.api import ApiKey
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.group_heartbeats import (
    ConsumerGroupHeartbeatRequest,
    ShareGroupHeartbeatRequest,
)

from ..support.brokers import BrokerThread
from ..support.wire import AsyncWireClient

# Every Kafka API key no plane of this broker serves.
UNSERVED = [k for k in ApiKey if API_TABLE.get(k) is None]
# librdkafka reports a fatal error within milliseconds; a client left to retry would still
# be waiting after this long (its coordinator queries go on for ever).
DEADLINE_S = 15.0


def test_the_unserved_list_is_kafkas_whole_remainder() -> None:
    """Guards the parametrization below: it covers the group protocols' other APIs and
    delegation tokens, and not the APIs that are served."""
    assert {ApiKey.CreateDelegationToken, ApiKey.ShareFetch} <= set(UNSERVED)
    assert ApiKey.StreamsGroupHeartbeat in UNSERVED
    assert ApiKey.ConsumerGroupHeartbeat not in UNSERVED
    assert ApiKey.ConsumerGroupDescribe not in UNSERVED
    assert ApiKey.Produce not in UNSERVED
    assert [int(k) for k in ApiKey] == list(range(93))  # every key up to Kafka 4.1's last


def poll_until_error(consumer: Consumer) -> tuple[KafkaError, float]:
    start = time.monotonic()
    while time.monotonic() - start < DEADLINE_S:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is not None:
            return msg.error(), time.monotonic() - start
    raise AssertionError(f"no error within {DEADLINE_S} s")


def test_a_consumer_protocol_consumer_fails_at_once_when_switched_off(tmp_path) -> None:  # type: ignore[no-untyped-def]
    broker = BrokerThread(
        tmp_path / "data", {"group.coordinator.rebalance.protocols": "classic"}
    ).start()
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "kip848",
            "group.protocol": "consumer",
            "logger": logging.getLogger("librdkafka-test"),
        }
    )
    try:
        consumer.subscribe(["orders"])
        error, _ = poll_until_error(consumer)
        assert error.code() == KafkaError._FATAL
        assert "ConsumerGroupHeartbeat" in error.str()
        assert "not supported" in error.str()
    finally:
        consumer.close()
        broker.stop()


def test_a_share_consumer_fails_at_once(broker) -> None:  # type: ignore[no-untyped-def]
    consumer = ShareConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "kip932",
            "logger": logging.getLogger("librdkafka-test"),
        }
    )
    try:
        consumer.subscribe(["orders"])
        start = time.monotonic()
        with pytest.raises(KafkaException) as raised:
            while time.monotonic() - start < DEADLINE_S:
                consumer.poll(0.5)
        error = raised.value.args[0]
        assert error.fatal()
        assert error.code() == KafkaError.UNSUPPORTED_VERSION
        assert "ShareGroupHeartbeat" in error.str()
    finally:
        consumer.close()


def test_librdkafka_does_without_the_apis_it_finds_absent(broker) -> None:  # type: ignore[no-untyped-def]
    """Telemetry (GetTelemetrySubscriptions, asked for only when listed): no request for
    an unlisted API reaches the broker; and a classic group is described (librdkafka
    falls back from ConsumerGroupDescribe to DescribeGroups)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.metrics.push": True})
    producer.produce("orders", b"one")
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "classic",
            "auto.offset.reset": "earliest",
            "enable.metrics.push": True,
        }
    )
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + DEADLINE_S
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
        assert msg is not None and msg.error() is None and msg.value() == b"one"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        (future,) = admin.describe_consumer_groups(["classic"]).values()
        description = future.result(timeout=15)
        assert description.group_id == "classic" and len(description.members) == 1
    finally:
        consumer.close()
    counters = broker.broker.socket_server.counters
    assert "UnknownApiKey" not in counters.bad_requests


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


@pytest.mark.parametrize("version", [0, 1])
async def test_the_refusals_say_what_to_do(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"group.coordinator.rebalance.protocols": "classic"})
    client = await AsyncWireClient.connect(address(broker))
    consumer = await client.request(
        ConsumerGroupHeartbeatRequest(group_id="g", member_id="", member_epoch=0), version
    )
    assert consumer.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert consumer.error_message == CONSUMER_PROTOCOL_REFUSED
    assert "group.protocol=classic" in CONSUMER_PROTOCOL_REFUSED
    share = await client.request(
        ShareGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0), version
    )
    assert share.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert share.error_message == SHARE_GROUPS_REFUSED
    # refused, not broken: the connection goes on
    assert (await client.request(ApiVersionsRequest(), 2)).error_code == ErrorCode.NONE


@pytest.mark.parametrize("api_key", UNSERVED, ids=lambda k: k.name)
async def test_an_unlisted_api_closes_only_its_connection_at_once(
    run_broker,
    caplog,
    api_key: ApiKey,  # type: ignore[no-untyped-def]
) -> None:
    broker = await run_broker()
    healthy = await AsyncWireClient.connect(address(broker), client_id="healthy")
    listed = await healthy.request(ApiVersionsRequest(), 2)
    assert api_key not in {k.api_key for k in listed.api_keys}

    asking = await AsyncWireClient.connect(address(broker), client_id="asking")
    header = struct.pack(">hhih", api_key, 0, 9, 6) + b"asking"
    payload = header + b"\x00" * 8  # a body the broker must not read
    with caplog.at_level(logging.WARNING, logger="trio_broker.network"):
        await asking.send_raw(struct.pack(">i", len(payload)) + payload)
        with trio.fail_after(5):
            assert await asking.closed_by_peer()
        await trio.testing.wait_all_tasks_blocked()
    lines = [r.getMessage() for r in caplog.records if f"({api_key.name})" in r.getMessage()]
    assert len(lines) == 1 and "not served" in lines[0], lines
    assert broker.socket_server.counters.bad_requests == {"UnknownApiKey": 1}
    assert (await healthy.request(ApiVersionsRequest(), 2)).error_code == ErrorCode.NONE
    await healthy.aclose()
