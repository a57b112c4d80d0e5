"""Pipelined Produce requests of one connection go to a handler together
(``network.pipelining``) and are answered as if handled one by one: in order, each with
its own result, appended in the order they were sent. Wire clients over real sockets,
in-process brokers on the test's loop."""

from __future__ import annotations

from typing import Any

import trio

from trio_broker.network.connection import ResponseOrder
from trio_broker.network.mute import MuteState
from trio_broker.network.pipelining import MAX_GROUP
from trio_broker.network.request import NoOpResponse, Request, RequestTimes
from trio_broker.protocol.api import ApiKey, spec_for
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.header import RequestHeader
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.quotas import AlterClientQuotasRequest

from ..data.test_wire_data_path import batch, fetch_req, make_topic, produce_req, values_of
from ..support.wire import AsyncWireClient


def addr(broker: Any) -> str:
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


async def _read_all(c: AsyncWireClient, topic: str) -> list[bytes]:
    got: list[bytes] = []
    while True:
        resp = await c.request(fetch_req(topic, len(got)), 11)
        values = values_of(resp.responses[0].partitions[0].records)
        if not values:
            return got
        got += values


async def test_pipelined_produces_are_appended_in_order_and_answered_in_order(
    run_broker: Any,
) -> None:
    broker = await run_broker()
    c = await AsyncWireClient.connect(addr(broker))
    await make_topic(c, "p")
    io = broker.replica_manager.io
    jobs_before = io.jobs
    n = 150  # more than one group
    frames, corrs = [], []
    for i in range(n):
        corr, data = c.frame(produce_req("p", batch(b"v-%d" % i)), 9)
        frames.append(data)
        corrs.append(corr)
    await c.send_raw(b"".join(frames))  # all in one write: pipelined
    answers = [await c.receive() for _ in corrs]
    assert [corr for corr, _ in answers] == corrs
    offsets = [resp.responses[0].partition_responses[0].base_offset for _, resp in answers]
    assert offsets == list(range(n))
    assert await _read_all(c, "p") == [b"v-%d" % i for i in range(n)]
    # they went in groups: far fewer storage jobs than requests (one by one: n)
    assert io.jobs - jobs_before < n
    assert io.jobs - jobs_before >= -(-n // MAX_GROUP)
    await c.aclose()


async def test_each_pipelined_produce_gets_its_own_answer(run_broker: Any) -> None:
    broker = await run_broker()
    c = await AsyncWireClient.connect(addr(broker))
    await make_topic(c, "ok")
    requests = [
        produce_req("ok", batch(b"a")),
        produce_req("missing", batch(b"b")),  # no such topic (not created: acks=1 write)
        produce_req("ok", batch(b"c"), acks=-1),  # another acks: its own storage job
        produce_req("ok", batch(b"d"), acks=2),  # invalid acks
        produce_req("ok", batch(b"e")),
    ]
    frames = [c.frame(r, 9) for r in requests]
    await c.send_raw(b"".join(data for _, data in frames))
    answers = [await c.receive() for _ in frames]
    assert [corr for corr, _ in answers] == [corr for corr, _ in frames]
    parts = [resp.responses[0].partition_responses[0] for _, resp in answers]
    assert [(p.error_code, p.base_offset) for p in parts] == [
        (ErrorCode.NONE, 0),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        (ErrorCode.NONE, 1),
        (ErrorCode.INVALID_REQUIRED_ACKS, -1),
        (ErrorCode.NONE, 2),
    ]
    assert await _read_all(c, "ok") == [b"a", b"c", b"e"]
    await c.aclose()


async def test_another_api_behind_pipelined_produces_waits_its_turn(run_broker: Any) -> None:
    broker = await run_broker()
    c = await AsyncWireClient.connect(addr(broker))
    await make_topic(c, "m")
    frames = [
        c.frame(produce_req("m", batch(b"1")), 9),
        c.frame(produce_req("m", batch(b"2")), 9),
        c.frame(MetadataRequest(topics=None), 12),
        c.frame(produce_req("m", batch(b"3")), 9),
    ]
    await c.send_raw(b"".join(data for _, data in frames))
    answers = [await c.receive() for _ in frames]
    assert [corr for corr, _ in answers] == [corr for corr, _ in frames]
    assert "m" in [t.name for t in answers[2][1].topics]
    assert await _read_all(c, "m") == [b"1", b"2", b"3"]
    await c.aclose()


async def test_a_bad_frame_behind_a_group_closes_after_the_group_is_answered(
    run_broker: Any,
) -> None:
    broker = await run_broker()
    c = await AsyncWireClient.connect(addr(broker))
    await make_topic(c, "b")
    good = [c.frame(produce_req("b", batch(b"g-%d" % i)), 9) for i in range(3)]
    _, bad = c.frame(produce_req("b", batch(b"x")), 9)
    bad = bad[:-6] + b"\xff" * 6  # its tagged fields and batch torn: the body does not parse
    await c.send_raw(b"".join(data for _, data in good) + bad)
    for corr, _ in good:
        got, resp = await c.receive()
        assert got == corr and resp.responses[0].partition_responses[0].error_code == 0
    assert await c.closed_by_peer()
    c2 = await AsyncWireClient.connect(addr(broker))
    assert await _read_all(c2, "b") == [b"g-0", b"g-1", b"g-2"]
    await c2.aclose()


async def test_pipelined_acks_0_produces_are_appended_in_order_unanswered(
    run_broker: Any,
) -> None:
    broker = await run_broker()
    c = await AsyncWireClient.connect(addr(broker))
    await make_topic(c, "q")
    frames = [c.frame(produce_req("q", batch(b"q-%d" % i), acks=0), 9)[1] for i in range(20)]
    c._pending.clear()  # no response is coming for them
    corr, meta = c.frame(MetadataRequest(topics=None), 12)
    await c.send_raw(b"".join(frames) + meta)
    got, _ = await c.receive()  # the next thing on the wire
    assert got == corr
    assert await _read_all(c, "q") == [b"q-%d" % i for i in range(20)]
    await c.aclose()


async def test_a_throttled_group_mutes_its_connection_until_the_last_throttle_ends(
    run_broker: Any,
) -> None:
    # a rate over 2 samples of 1 s (Kafka's 11 would spread the burst over 10 s)
    broker = await run_broker({"quota.window.num": "2"})
    c = await AsyncWireClient.connect(addr(broker), client_id="slow")
    await make_topic(c, "t")
    Entry = AlterClientQuotasRequest.EntryData
    quota = AlterClientQuotasRequest(  # 10 KiB a second: six 4 KB produces go over it
        entries=[
            Entry(
                entity=[Entry.EntityData(entity_type="client-id", entity_name="slow")],
                ops=[Entry.OpData(key="producer_byte_rate", value=10240.0, remove=False)],
            )
        ],
        validate_only=False,
    )
    assert (await c.request(quota, 1)).entries[0].error_code == 0
    frames = [c.frame(produce_req("t", batch(b"x" * 4000)), 9) for _ in range(6)]
    await c.send_raw(b"".join(data for _, data in frames))
    answers = [await c.receive() for _ in frames]
    answered = trio.current_time()
    assert [corr for corr, _ in answers] == [corr for corr, _ in frames]
    throttles = [resp.throttle_time_ms for _, resp in answers]
    assert max(throttles) > 0, throttles
    (conn,) = broker.socket_server.all_connections()
    assert conn.mute_state is MuteState.MUTED_AND_THROTTLED  # until the longest ends
    with trio.fail_after(max(throttles) / 1000 + 10):
        while conn.mute_state is not MuteState.NOT_MUTED:
            await trio.sleep(0.02)  # polling another task's state, with a deadline
    assert trio.current_time() - answered >= max(throttles) / 1000 - 0.1
    resp = await c.request(MetadataRequest(topics=None), 12)  # the connection reads again
    assert "t" in [t.name for t in resp.topics]
    await c.aclose()


def _request(index: int) -> Request:
    spec = spec_for(ApiKey.Produce)
    assert spec is not None
    header = RequestHeader(api_key=0, api_version=9, correlation_id=index, client_id="c")
    return Request(
        sink=None,  # type: ignore[arg-type]
        connection_id="c",
        processor_id=0,
        header=header,
        spec=spec,
        body=None,
        size=0,
        times=RequestTimes(start_ns=0),
        group_index=index,
    )


def test_an_early_answer_is_held_until_the_ones_before_it() -> None:
    order = ResponseOrder()
    group = [_request(i) for i in range(3)]
    order.begin(list(group))
    a0, a1, a2 = (NoOpResponse(r) for r in group)
    assert order.ready(a2) == [] and order.ready(a1) == []  # earlier ones pending
    assert order.ready(a0) == [a0, a1, a2]
    assert not order.answered(group[0]) and not order.answered(group[1])
    assert order.answered(group[2]) and not order.in_flight
