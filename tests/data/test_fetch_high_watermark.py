"""Fetch v18 (KIP-1166): a follower tells the leader which high watermark it knows. A
follower behind the leader's is answered at once instead of waiting for records; one that
is not waits as before; a consumer's value, or none, changes nothing. (The leader's high
watermark passing a parked follower's: tests/control/test_fetch_high_watermark.py.)"""

from __future__ import annotations

import uuid

import trio

from trio_broker.protocol.messages.fetch import NO_HIGH_WATERMARK_SENT, FetchRequest

from ..support.brokers import settled
from ..support.wire import AsyncWireClient
from .test_wire_data_path import address, batch, make_topic, produce_req, values_of

FetchTopic = FetchRequest.Topic
FetchPartition = FetchTopic.Partition


def fetch_from(
    topic_id: uuid.UUID, offset: int, known_hw: int, *, replica: int = 7, min_bytes: int = 1
) -> FetchRequest:
    """A fetch of partition 0 by ``replica`` (-1: a consumer) that knows ``known_hw``."""
    state = FetchRequest.ReplicaState(replica_id=replica, replica_epoch=-1)
    return FetchRequest(
        replica_state=state,
        max_wait_ms=60_000,
        min_bytes=min_bytes,
        topics=[
            FetchTopic(
                topic_id=topic_id,
                partitions=[
                    FetchPartition(
                        partition=0,
                        fetch_offset=offset,
                        partition_max_bytes=1 << 20,
                        high_watermark=known_hw,
                    )
                ],
            )
        ],
    )


async def test_a_follower_behind_the_high_watermark_is_answered_at_once(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    producer = await AsyncWireClient.connect(address(broker))
    topic_id = await make_topic(client, "t")
    assert isinstance(topic_id, uuid.UUID)
    for i in range(3):
        await producer.request(produce_req("t", batch(b"%d" % i)), 8)

    # at the log end, knowing high watermark 1 (or none, -1): no records, answered now
    for known in (1, -1):
        with trio.fail_after(10):  # parked, it would wait its 60 s
            answer = await client.request(fetch_from(topic_id, 3, known), 18)
        (p,) = answer.responses[0].partitions
        assert (p.error_code, p.high_watermark, values_of(p.records)) == (0, 3, [])

    # knowing the leader's high watermark, a later one, sending none, or a consumer's
    # value (replica -1): the fetch waits for records, as before
    end = 3
    for case in ("equal", "ahead", "not sent", "a consumer's"):
        known, replica = {
            "equal": (end, 7),
            "ahead": (end + 2, 7),
            "not sent": (NO_HIGH_WATERMARK_SENT, 7),
            "a consumer's": (1, -1),  # behind, but a consumer's: no matter
        }[case]
        await client.send(fetch_from(topic_id, end, known, replica=replica), 18)
        await settled(broker)
        assert broker.fetch_purgatory.size == 1, case
        await producer.request(produce_req("t", batch(b"wake")), 8)
        with trio.fail_after(10):
            _, answer = await client.receive()
        (p,) = answer.responses[0].partitions
        assert values_of(p.records) == [b"wake"]
        end += 1
        assert p.high_watermark == end
