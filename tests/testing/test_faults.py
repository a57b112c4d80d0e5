"""Fault injection (``testing.faults.enable``): each rule against real clients on the wire.

Through ``broker.faults`` (in-process) and ``/v1/faults`` (the admin API): an error
answered in place of an API, for one topic or one client id only; a delay; a connection
dropped after N requests; a partition's leader away for a time, then back; a throttled
client. Each rule's counts are read back. Off (the default), the broker has no fault hook
in its request path at all and the routes answer 403.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from trio_broker.apis.table import SINGLE_BROKER_TABLE
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.server.quotas.throttling import Throttler
from trio_broker.testing import RunningBroker, running
from trio_broker.tools.client import WireClient

from ..admin.conftest import error_code
from ..support.brokers import BrokerThread


@pytest.fixture
def b() -> Any:
    with running() as broker:
        yield broker


def metadata(client: WireClient, *topics: str) -> dict[str, int]:
    body = MetadataRequest(
        topics=[MetadataRequest.Topic(name=t) for t in topics], allow_auto_topic_creation=False
    )
    resp = client.request(body, 9)
    return {t.name: t.error_code for t in resp.topics}


def api_versions(client: WireClient) -> Any:
    return client.request(ApiVersionsRequest(), 2)


def test_off_by_default_no_hook_and_403(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "d", {"admin.listeners": "http://127.0.0.1:0"}).start()
    try:
        assert broker.broker is not None
        # Nothing of the feature is in the request path: the plain table and throttler.
        assert broker.broker.request_handler.table is SINGLE_BROKER_TABLE
        assert type(broker.broker.request_handler.throttler) is Throttler
        assert broker.broker.faults is None
        with httpx.Client(base_url=broker.admin_url, timeout=10) as http:
            assert http.get("/v1/config").json()["config"]["testing.faults.enable"] == "false"
            for method, path in [
                ("GET", "/v1/faults"),
                ("POST", "/v1/faults"),
                ("DELETE", "/v1/faults"),
                ("GET", "/v1/faults/1"),
                ("DELETE", "/v1/faults/1"),
            ]:
                r = http.request(method, path, json={"action": "delay", "delay_ms": 5})
                assert r.status_code == 403, (method, path)
                assert error_code(r) == "faults-disabled"
    finally:
        broker.stop()


def test_an_error_answers_the_next_n_requests_then_the_api_again(b: RunningBroker) -> None:
    b.create_topic("a")
    rule = b.faults.error("Metadata", "UNKNOWN_TOPIC_OR_PARTITION", count=2)
    with WireClient(b.bootstrap) as c:
        assert metadata(c, "a") == {"a": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert metadata(c, "a") == {"a": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert metadata(c, "a") == {"a": ErrorCode.NONE}
    assert (rule.hits, rule.matched, rule.active) == (2, 2, False)


def test_an_error_for_one_topic_or_one_client_id_only(b: RunningBroker) -> None:
    b.create_topic("a")
    b.create_topic("b")
    by_topic = b.faults.error("Metadata", 3, topic="b", count=None)
    by_client = b.faults.error("Metadata", "CLUSTER_AUTHORIZATION_FAILED", client_id="app-2")
    with WireClient(b.bootstrap, client_id="app-1") as c:
        assert metadata(c, "a") == {"a": 0}
        assert metadata(c, "b") == {"b": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert metadata(c, "b") == {"b": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    with WireClient(b.bootstrap, client_id="app-2") as c:
        assert metadata(c, "a") == {"a": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    assert by_topic.hits == 2
    assert by_client.hits == 1


def test_a_delay_holds_the_request(b: RunningBroker) -> None:
    rule = b.faults.delay("ApiVersions", 300, count=1)
    with WireClient(b.bootstrap) as c:
        t0 = time.monotonic()
        api_versions(c)
        held = time.monotonic() - t0
        t0 = time.monotonic()
        api_versions(c)
        after = time.monotonic() - t0
    assert held >= 0.3
    assert after < held
    assert rule.hits == 1


def test_a_connection_is_dropped_after_n_requests(b: RunningBroker) -> None:
    rule = b.faults.disconnect("ApiVersions", after=2)
    with WireClient(b.bootstrap) as c:
        api_versions(c)
        api_versions(c)
        c.send(ApiVersionsRequest(), 2)
        assert c.closed_by_peer()
    with WireClient(b.bootstrap) as c:  # used up: a new connection is served
        assert api_versions(c).error_code == 0
    state = rule.state()
    assert (state["matched"], state["hits"]) == (3, 1)  # matched while in force


def test_a_partition_leader_away_for_a_time_then_back(b: RunningBroker) -> None:
    b.create_topic("orders", partitions=2)
    rule = b.faults.leader_unavailable("orders", 1, duration_ms=800)
    p = Producer({"bootstrap.servers": b.bootstrap, "retry.backoff.ms": 50, "linger.ms": 0})
    results: list[tuple[int, Any]] = []
    t0 = time.monotonic()
    for partition in (0, 1):
        p.produce(
            "orders",
            b"v",
            partition=partition,
            on_delivery=lambda err, msg: results.append((msg.partition(), err)),
        )
    assert p.flush(30) == 0
    took = time.monotonic() - t0
    assert sorted(results) == [(0, None), (1, None)]  # partition 1 after retries
    assert rule.hits >= 1
    assert took >= 0.5  # partition 1 waited for its leader to come back
    assert not rule.active
    assert rule.state()["remaining_ms"] == 0


def test_a_throttled_client_is_told_and_muted(b: RunningBroker) -> None:
    rule = b.faults.throttle("slow", 400, api="Metadata", count=1)
    with WireClient(b.bootstrap, client_id="slow") as c:
        resp = c.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 9)
        assert resp.throttle_time_ms == 400
        t0 = time.monotonic()
        api_versions(c)  # waits behind the throttle: the connection is muted
        assert time.monotonic() - t0 >= 0.3
    with WireClient(b.bootstrap, client_id="other") as c:
        resp = c.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 9)
        assert resp.throttle_time_ms == 0
    assert rule.hits == 1


def test_the_admin_api_adds_lists_reads_and_removes_rules(b: RunningBroker) -> None:
    assert b.admin_url is not None
    with httpx.Client(base_url=b.admin_url, timeout=10) as http:
        r = http.post("/v1/faults", json={"action": "error", "api": ["Metadata"]})
        assert r.status_code == 400 and "error_code" in r.json()["error"]["message"]
        r = http.post("/v1/faults", json={"action": "error", "api": "Nope", "error_code": 6})
        assert r.status_code == 400 and "api" in r.json()["error"]["message"]
        r = http.post(
            "/v1/faults",
            json={"action": "error", "api": "Metadata", "error_code": 6, "count": 1},
        )
        assert r.status_code == 201
        rule = r.json()
        assert (rule["error"], rule["api"], rule["hits"]) == (
            "NOT_LEADER_OR_FOLLOWER",
            ["Metadata"],
            0,
        )
        with WireClient(b.bootstrap) as c:
            metadata(c, "x")
        assert http.get(f"/v1/faults/{rule['id']}").json()["hits"] == 1
        assert [x["id"] for x in http.get("/v1/faults").json()["rules"]] == [rule["id"]]
        assert http.delete(f"/v1/faults/{rule['id']}").json()["hits"] == 1
        assert http.get(f"/v1/faults/{rule['id']}").status_code == 404
        http.post("/v1/faults", json={"action": "delay", "delay_ms": 1})
        removed = http.delete("/v1/faults").json()["rules"]
        assert [x["action"] for x in removed] == ["delay"]
        assert http.get("/v1/faults").json() == {"rules": []}
