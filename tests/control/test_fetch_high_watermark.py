"""Fetch v18 (KIP-1166) at a replicated partition's leader: a follower's fetch parked with
the high watermark it knows completes as soon as the leader's high watermark passes it,
without waiting for its ``min_bytes`` or ``max_wait_ms``. Two brokers of a ZooKeeper
cluster in the test's loop (real ZooKeeper); the fetch is a wire client's, as a replica
the partition does not have (the leader keeps no state for it)."""

from __future__ import annotations

from typing import Any

import trio

from trio_broker.protocol.messages.topics import CreateTopicsRequest

from ..data.test_fetch_high_watermark import fetch_from
from ..data.test_wire_data_path import batch, produce_req, values_of
from ..support.wire import AsyncWireClient
from .test_zk_metadata import settings


async def _client(broker: Any) -> AsyncWireClient:
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return await AsyncWireClient.connect(f"{host}:{port}")


async def test_a_parked_follower_fetch_completes_when_the_high_watermark_passes(
    run_broker: Any, connect: str
) -> None:
    leader = await run_broker(settings(connect, 0))
    await run_broker(settings(connect, 1))
    client = await _client(leader)
    Topic = CreateTopicsRequest.CreatableTopic
    created = await client.request(
        CreateTopicsRequest(
            topics=[
                Topic(
                    name="hw",
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[
                        Topic.CreatableReplicaAssignment(partition_index=0, broker_ids=[0, 1])
                    ],
                    configs=[],
                )
            ],
            timeout_ms=30_000,
        ),
        7,
    )
    assert created.topics[0].error_code == 0, created
    with trio.fail_after(30):  # the leader sees both replicas in sync
        while True:
            info = leader.topic("hw")
            if info is not None and (info.partitions[0].leader, set(info.partitions[0].isr)) == (
                0,
                {0, 1},
            ):
                break
            await trio.sleep(0.05)
    producer = await _client(leader)
    answer = await producer.request(produce_req("hw", batch(b"first"), acks=-1), 8)
    assert answer.responses[0].partition_responses[0].error_code == 0  # high watermark 1

    watcher = await _client(leader)
    await watcher.send(fetch_from(info.topic_id, 1, 1, replica=9, min_bytes=10 << 20), 18)
    answer = await producer.request(produce_req("hw", batch(b"second"), acks=-1), 8)
    assert answer.responses[0].partition_responses[0].error_code == 0  # high watermark 2
    with trio.fail_after(20):  # without KIP-1166 it waits its 60 s (10 MB never come)
        _, fetched = await watcher.receive()
    (p,) = fetched.responses[0].partitions
    assert (p.error_code, p.high_watermark) == (0, 2)
    assert values_of(p.records) == [b"second"]
