"""Fetch sessions (KIP-227) on the wire and with a real consumer: a session opens at epoch
0, later fetches list only changed partitions and get back only partitions with news;
wrong epochs, unknown sessions, a parked fetch overtaken by a later one and a switch from
topic names to ids get Kafka's errors; forgotten topics leave the session, and an emptied
session ends;
a full cache evicts a smaller session for a bigger one; and kafka-python's consumer on 200
partitions fetches incrementally (visible in the metrics) and receives everything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.fetch import FetchRequest

from ..support.brokers import BrokerThread
from ..support.wire import AsyncWireClient
from .test_wire_data_path import address, batch, make_topic, produce_req

FetchTopic = FetchRequest.Topic
FetchPartition = FetchTopic.Partition
Forgotten = FetchRequest.ForgottenTopic
V = 12  # topics by name, flexible


def fetch(
    session_id: int, epoch: int, parts: dict[int, int], forget: list[int] | None = None
) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        session_id=session_id,
        session_epoch=epoch,
        topics=[
            FetchTopic(
                topic="s",
                partitions=[
                    FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                    for p, o in parts.items()
                ],
            )
        ]
        if parts
        else [],
        forgotten_topics_data=[Forgotten(topic="s", partitions=forget)] if forget else [],
    )


def partitions_of(response: Any) -> list[int]:
    return [p.partition_index for t in response.responses for p in t.partitions]


async def test_a_session_answers_only_what_changed(run_broker: Any) -> None:
    broker = await run_broker({"num.partitions": 3})
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "s")
    for p in range(3):
        assert (await c.request(produce_req("s", batch(b"a"), partition=p), 9)).responses
    opened = await c.request(fetch(0, 0, {0: 0, 1: 0, 2: 0}), V)
    sid = opened.session_id
    assert sid != 0 and partitions_of(opened) == [0, 1, 2]  # a full response

    quiet = await c.request(fetch(sid, 1, {0: 1, 1: 1, 2: 1}), V)  # positions moved on
    assert quiet.error_code == 0 and quiet.session_id == sid and partitions_of(quiet) == []
    await c.request(produce_req("s", batch(b"b"), partition=1), 9)
    news = await c.request(fetch(sid, 2, {}), V)  # nothing changed on the client's side
    assert partitions_of(news) == [1]
    (p1,) = news.responses[0].partitions
    assert p1.high_watermark == 2 and bytes(p1.records)

    stale = await c.request(fetch(sid, 2, {}), V)
    assert stale.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    unknown = await c.request(fetch(sid + 1, 1, {}), V)
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

    # Forgetting partition 1: new data there is no longer reported.
    await c.request(fetch(sid, 3, {1: 2}, forget=[1]), V)
    await c.request(produce_req("s", batch(b"c"), partition=1), 9)
    assert partitions_of(await c.request(fetch(sid, 4, {}), V)) == []
    assert broker.metrics_snapshot()["fetch_sessions"]["partitions"] == 2

    # Epoch -1: a full fetch without a session, and the session is closed.
    final = await c.request(fetch(sid, -1, {0: 0, 1: 0}), V)
    assert final.session_id == 0 and partitions_of(final) == [0, 1]
    assert (await c.request(fetch(sid, 5, {}), V)).error_code == (
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
    await c.aclose()


async def test_a_parked_fetch_overtaken_by_a_later_one_of_its_session_is_refused(
    run_broker: Any,
) -> None:
    """Two connections share a session (as a client that reconnects may): a fetch parked
    waiting for data, then answered after a later fetch of the same session, would tell
    the session the client knows what it never received; Kafka answers it
    INVALID_FETCH_SESSION_EPOCH, and so do we."""
    broker = await run_broker({"num.partitions": 1})
    a = await AsyncWireClient.connect(address(broker))
    b = await AsyncWireClient.connect(address(broker))
    await make_topic(a, "s")
    await a.request(produce_req("s", batch(b"a"), partition=0), 9)
    sid = (await a.request(fetch(0, 0, {0: 0}), V)).session_id
    parked = fetch(sid, 1, {0: 1})
    parked.max_wait_ms = 10_000
    await a.send(parked, V)
    await trio.testing.wait_all_tasks_blocked()  # the fetch waits in the purgatory
    later = await b.request(fetch(sid, 2, {}), V)
    assert later.error_code == 0 and later.session_id == sid
    await b.request(produce_req("s", batch(b"b"), partition=0), 9)  # wakes the parked one
    with trio.fail_after(10):
        _, overtaken = await a.receive()
    assert overtaken.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert partitions_of(overtaken) == []
    news = await b.request(fetch(sid, 3, {}), V)  # the session itself goes on
    assert news.error_code == 0 and partitions_of(news) == [0]
    await a.aclose()
    await b.aclose()


async def test_sessions_end_when_empty_and_keep_to_names_or_ids(run_broker: Any) -> None:
    broker = await run_broker({"num.partitions": 2})
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "s")
    sid = (await c.request(fetch(0, 0, {0: 0, 1: 0}), V)).session_id
    # A session opened with topic names cannot go on with topic ids (Fetch v13).
    by_id = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        session_id=sid,
        session_epoch=1,
        topics=[],
        forgotten_topics_data=[],
    )
    switched = await c.request(by_id, 13)
    assert switched.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # Forgetting every partition ends the session: answered without one.
    emptied = await c.request(fetch(sid, 1, {}, forget=[0, 1]), V)
    assert emptied.error_code == 0 and emptied.session_id == 0
    assert (await c.request(fetch(sid, 2, {}), V)).error_code == (
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
    assert broker.metrics_snapshot()["fetch_sessions"]["sessions"] == 0
    await c.aclose()


async def test_a_full_cache_evicts_a_smaller_session_for_a_bigger_one(run_broker: Any) -> None:
    broker = await run_broker({"num.partitions": 3, "max.incremental.fetch.session.cache.slots": 1})
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "s")
    await c.request(produce_req("s", batch(b"a"), partition=0), 9)
    small = (await c.request(fetch(0, 0, {0: 0}), V)).session_id
    assert small != 0
    same_size = await c.request(fetch(0, 0, {1: 0}), V)
    assert same_size.session_id == 0  # no room, and no smaller session to give way
    big = (await c.request(fetch(0, 0, {0: 0, 1: 0, 2: 0}), V)).session_id
    assert big not in (0, small)
    assert (await c.request(fetch(small, 1, {}), V)).error_code == (
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
    figures = broker.metrics_snapshot()["fetch_sessions"]
    assert (figures["sessions"], figures["evictions"], figures["slots"]) == (1, 1, 1)
    await c.aclose()


def test_a_consumer_on_200_partitions_fetches_incrementally(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", {"admin.listeners": "http://127.0.0.1:0"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("wide", 200, 1)])["wide"].result(10)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
        for i in range(400):
            p.produce("wide", b"first-%d" % i, partition=i % 200)
        assert p.flush(30) == 0
        # librdkafka never opens fetch sessions (it always sends epoch -1); kafka-python
        # and the Java client do.
        c = KafkaConsumer(
            "wide",
            bootstrap_servers=b.bootstrap,
            group_id="wide",
            auto_offset_reset="earliest",
            fetch_max_wait_ms=50,
        )
        got: set[bytes] = set()

        def drain(expected: int) -> None:
            misses = 0
            while len(got) < expected:
                batches = c.poll(timeout_ms=1000)
                if not batches:
                    misses += 1
                    assert misses < 30, f"stuck at {len(got)} of {expected}"
                for records in batches.values():
                    got.update(r.value for r in records)

        drain(400)
        # Later data on partitions that were idle since the first round reaches it too.
        for i in range(0, 200, 7):
            p.produce("wide", b"later-%d" % i, partition=i)
        assert p.flush(30) == 0
        drain(400 + len(range(0, 200, 7)))
        c.close()
        figures = b.broker.metrics_snapshot()["fetch_sessions"]
        # One session of all 200 partitions, opened by a full fetch; the later data came
        # through incremental ones; no fetch without a session.
        assert (figures["sessions"], figures["partitions"]) == (1, 200), figures
        assert figures["full_fetches"] >= 1 and figures["incremental_fetches"] >= 1, figures
        assert figures["sessionless_fetches"] == 0, figures
    finally:
        b.stop()
