"""Transaction version 2 (KIP-890 part 2) in a ZooKeeper cluster: a partition led by
another broker than the transaction coordinator joins the transaction as the producer's
Produce v12 reaches it (the leader sends AddPartitionsToTxn v5 to the coordinator over the
inter-broker listener), and the coordinator's EndTxn v5 marks it there. Two brokers in the
test's loop, real ZooKeeper; the producer is a wire client (no client here speaks
transaction version 2)."""

from __future__ import annotations

from typing import Any

import trio

from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.groups import FindCoordinatorRequest
from trio_broker.protocol.messages.produce import InitProducerIdRequest
from trio_broker.protocol.messages.topics import CreateTopicsRequest
from trio_broker.protocol.messages.transactions import DescribeTransactionsRequest

from ..data.test_transactions_v2 import TXN, end, produce, txn_batch
from ..data.test_wire_data_path import values_of
from ..support.wire import AsyncWireClient
from .test_zk_metadata import settings

SMALL = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
}


async def _client(broker: Any) -> AsyncWireClient:
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return await AsyncWireClient.connect(f"{host}:{port}")


async def test_a_partition_led_elsewhere_joins_at_the_coordinator(
    run_broker: Any, connect: str
) -> None:
    brokers = [await run_broker({**settings(connect, i), **SMALL}) for i in (0, 1)]
    c0 = await _client(brokers[0])
    with trio.fail_after(30):
        while True:  # the transaction coordinator, once __transaction_state is led
            found = await c0.request(FindCoordinatorRequest(key_type=1, coordinator_keys=[TXN]), 4)
            (entry,) = found.coordinators
            if entry.error_code == 0:
                break
            await trio.sleep(0.1)
    coordinator = entry.node_id
    leader = 1 - coordinator
    Topic = CreateTopicsRequest.CreatableTopic
    created = await c0.request(
        CreateTopicsRequest(
            topics=[
                Topic(
                    name="tv2",
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[
                        Topic.CreatableReplicaAssignment(partition_index=0, broker_ids=[leader])
                    ],
                    configs=[],
                )
            ],
            timeout_ms=30_000,
        ),
        7,
    )
    assert created.topics[0].error_code == 0
    with trio.fail_after(30):
        while (info := brokers[leader].topic("tv2")) is None or info.partitions[0].leader != leader:
            await trio.sleep(0.05)

    at_coordinator = await _client(brokers[coordinator])
    at_leader = await _client(brokers[leader])
    started = await at_coordinator.request(
        InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000), 5
    )
    pid, epoch = started.producer_id, started.producer_epoch
    answer = await at_leader.request(produce(txn_batch(pid, epoch, 0, b"across")), 12)
    assert answer.responses[0].partition_responses[0].error_code == 0
    (state,) = (
        await at_coordinator.request(DescribeTransactionsRequest(transactional_ids=[TXN]), 0)
    ).transaction_states
    assert (state.transaction_state, [(t.topic, t.partitions) for t in state.topics]) == (
        "Ongoing",
        [("tv2", [0])],
    )
    ended = await at_coordinator.request(end(pid, epoch, True), 5)
    assert (ended.error_code, ended.producer_epoch) == (0, epoch + 1)

    # the leader has the marker: a read_committed fetch reads the record
    F = FetchRequest.Topic
    fetched = await at_leader.request(
        FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            isolation_level=1,
            topics=[
                F(
                    topic="tv2",
                    partitions=[
                        F.Partition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
        ),
        12,
    )
    (p,) = fetched.responses[0].partitions
    assert p.last_stable_offset == 2  # the record and its marker
    assert values_of(p.records)[0] == b"across"  # (then its commit marker, a control batch)
