"""Client quotas at work: byte rates and request time, throttled KIP-219 style, with
quotas set through the admin API and through Kafka's AlterClientQuotas alike."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.header import encode_request
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
)
from trio_broker.protocol.primitives import join_parts
from trio_broker.records import Record, build_batch
from trio_broker.server.quotas.manager import SampledRate, candidate_entities

from ..data.test_wire_data_path import produce_req
from ..support.brokers import BrokerThread
from ..support.wire import WireClient

QUOTA = 200_000  # bytes per second


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    # A quota is a rate over a sliding window (quota.window.num samples), so a greedy
    # client gets in bursts of up to one window's worth when old samples leave it. Over a
    # 10 s measurement that averages out only if the window is much shorter than 10 s:
    # 2 samples of 1 s here (Kafka's default, 11 s, would need a minute-long test).
    b = BrokerThread(
        tmp_path / "data", {"admin.listeners": "http://127.0.0.1:0", "quota.window.num": "2"}
    ).start()
    yield b
    b.stop()


def test_a_producer_over_its_byte_rate_is_slowed_to_the_quota(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("q", 1, 1)])["q"].result(10)
    http = httpx.Client(base_url=broker.admin_url, timeout=10)
    r = http.put("/v1/quotas/clients/greedy", json={"producer_byte_rate": QUOTA})
    assert r.status_code == 200, r.text

    calm = WireClient(broker.bootstrap, client_id="calm")
    small = build_batch([Record(None, b"tick")])

    calm_throttles: list[int] = []

    def calm_produce() -> None:
        resp = calm.request(produce_req("q", small), 8)
        (p,) = resp.responses[0].partition_responses
        assert p.error_code == 0
        calm_throttles.append(resp.throttle_time_ms)

    calm_frame = len(join_parts(encode_request(8, 1, "calm", produce_req("q", small))))
    stop = threading.Event()
    throttles: list[int] = []

    def greedy() -> None:
        p = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "client.id": "greedy",
                "linger.ms": 5,
                "queue.buffering.max.kbytes": 512,
                "batch.size": 16384,  # many requests per quota window, as in real loads
                "throttle_cb": lambda event: throttles.append(event.throttle_time),
            }
        )
        value = b"g" * 1000
        while not stop.is_set():
            try:
                p.produce("q", value=value, partition=0)
            except BufferError:
                p.poll(0.01)
            p.poll(0)
        p.purge()  # what is still queued would take long at the quota: drop it
        p.flush(5)

    thread = threading.Thread(target=greedy, daemon=True)
    thread.start()
    try:
        stop.wait(3.0)  # until the first, unthrottled burst has left the quota window

        def produce_bytes() -> float:
            return http.get("/v1/metrics").json()["requests"]["Produce"]["bytes"]

        seen_throttled = False
        calm_muted = False
        calm_requests = 0
        start_bytes, start = produce_bytes(), time.monotonic()
        while time.monotonic() - start < 10.0:  # measure the rate over 10 s
            conns = http.get("/v1/connections").json()["connections"]
            seen_throttled = seen_throttled or any(
                c["client_id"] == "greedy"
                and c["mute_state"].startswith("MUTED_AND_THROTTLED")
                and c["throttle_remaining_ms"] > 0
                for c in conns
            )
            calm_muted = calm_muted or any(
                c["client_id"] == "calm" and c["mute_state"].startswith("MUTED_AND_THROTTLED")
                for c in conns
            )
            calm_produce()
            calm_requests += 1
            stop.wait(0.05)  # a calm client: 20 requests a second
        greedy_bytes = produce_bytes() - start_bytes - calm_requests * calm_frame
        rate = greedy_bytes / (time.monotonic() - start)
    finally:
        stop.set()
        thread.join(60)
        calm.close()
        http.close()
    assert abs(rate - QUOTA) / QUOTA < 0.10, rate
    assert throttles and max(throttles) > 0  # the client was told (throttle_time_ms)
    assert seen_throttled  # ... and the broker muted it meanwhile
    # The calm client, beside it all along, is never throttled (its latency: bench/).
    assert calm_requests == len(calm_throttles) and not any(calm_throttles), calm_throttles
    assert not calm_muted


def test_request_percentage_throttles_a_busy_client(broker: BrokerThread) -> None:
    http = httpx.Client(base_url=broker.admin_url, timeout=10)
    assert http.put("/v1/quotas/clients/busy", json={"request_percentage": 0.01}).status_code == 200
    with WireClient(broker.bootstrap, client_id="busy") as c:
        throttled = []
        for _ in range(40):  # until the broker says it is over its share
            throttled.append(c.request(MetadataRequest(topics=None), 9).throttle_time_ms)
            if throttled[-1]:
                break
    with WireClient(broker.bootstrap, client_id="free") as c:
        free = [c.request(MetadataRequest(topics=None), 9).throttle_time_ms for _ in range(40)]
    assert max(throttled) > 0 and max(free) == 0
    http.close()


def alter(
    c: WireClient,
    entity: dict[str, str | None],
    ops: dict[str, float | None],
    validate_only: bool = False,
) -> Any:
    Entry = AlterClientQuotasRequest.EntryData
    req = AlterClientQuotasRequest(
        entries=[
            Entry(
                entity=[Entry.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                ops=[Entry.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()],
            )
        ],
        validate_only=validate_only,
    )
    return c.request(req, 1).entries[0]


def describe(c: WireClient, *components: tuple[str, int, str | None], strict: bool = False) -> dict:
    Comp = DescribeClientQuotasRequest.ComponentData
    req = DescribeClientQuotasRequest(
        components=[Comp(entity_type=t, match_type=m, match=n) for t, m, n in components],
        strict=strict,
    )
    resp = c.request(req, 1)
    assert resp.error_code == 0, resp.error_message
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: v.value for v in entry.values
        }
        for entry in resp.entries
    }


def test_the_kafka_apis_and_the_admin_api_show_the_same_quotas(broker: BrokerThread) -> None:
    http = httpx.Client(base_url=broker.admin_url, timeout=10)
    with WireClient(broker.bootstrap) as c:
        assert (
            alter(
                c, {"user": "alice", "client-id": "app"}, {"producer_byte_rate": 1000.0}
            ).error_code
            == 0
        )
        assert alter(c, {"client-id": None}, {"consumer_byte_rate": 5000.0}).error_code == 0
        assert (
            http.put("/v1/quotas/clients/tool", json={"request_percentage": 50}).status_code == 200
        )
        shown = {
            tuple(sorted(q["entity"].items(), key=lambda kv: kv[0] != "user")): q["values"]
            for q in http.get("/v1/quotas").json()["quotas"]
        }
        assert shown == {
            (("user", "alice"), ("client-id", "app")): {"producer_byte_rate": 1000},
            (("client-id", None),): {"consumer_byte_rate": 5000},
            (("client-id", "tool"),): {"request_percentage": 50.0},
        }
        assert describe(c, ("client-id", 2, None), strict=True) == {
            (("client-id", None),): {"consumer_byte_rate": 5000.0},
            (("client-id", "tool"),): {"request_percentage": 50.0},
        }
        assert describe(c, ("client-id", 1, None)) == {
            (("client-id", None),): {"consumer_byte_rate": 5000.0}
        }
        assert describe(c, ("user", 0, "alice")) == {
            (("user", "alice"), ("client-id", "app")): {"producer_byte_rate": 1000.0}
        }
        # validate_only changes nothing; bad values are refused with a reason
        assert alter(c, {"client-id": "x"}, {"producer_byte_rate": 10.0}, True).error_code == 0
        assert describe(c, ("client-id", 0, "x")) == {}
        bad = alter(c, {"client-id": "x"}, {"producer_byte_rate": 1.5})
        assert bad.error_code == ErrorCode.INVALID_REQUEST and "whole" in bad.error_message
        assert alter(c, {"client-id": "tool"}, {"request_percentage": None}).error_code == 0
        assert http.get("/v1/quotas").json()["quotas"][-1]["entity"] != {"client-id": "tool"}
    http.close()


def test_sampled_rate_and_precedence() -> None:
    rate = SampledRate(samples=11, window_s=1.0)
    for t in range(20):
        rate.record(100.0, float(t))
    assert rate.measure(19.5) == pytest.approx(1100 / 10.5)  # 11 samples over 10.5 s
    first = [str(e) for e in candidate_entities("alice", "app")][:3]
    assert first == ["user=alice,client-id=app", "user=alice,client-id=<default>", "user=alice"]
