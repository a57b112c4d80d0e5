"""Leader epochs as clients meet them: OffsetForLeaderEpoch (KIP-320 offset validation by
librdkafka after a seek with an epoch), and the current leader epoch fencing of
OffsetForLeaderEpoch and ListOffsets. The leader epoch is bumped the way a controller
does, with LeaderAndIsr on the control plane; the epochs survive a restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.controller import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
)
from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.offsets import (
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)

from ..support.brokers import BrokerThread
from ..support.wire import WireClient

PLANES = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "control.plane.listener.name": "CONTROLLER",
}
E = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
L = ListOffsetsRequest.Topic


def produce(bootstrap: str, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        p.produce("t", value=b"%d" % i, partition=0)
    assert p.flush(10) == 0


def bump_leader_epoch(broker: BrokerThread, epoch: int) -> None:
    """What a controller does when it re-elects this broker: LeaderAndIsr, a new epoch."""
    state = LeaderAndIsrPartitionState(
        partition_index=0,
        controller_epoch=1,
        leader=0,
        leader_epoch=epoch,
        isr=[0],
        partition_epoch=epoch,
        replicas=[0],
    )
    req = LeaderAndIsrRequest(
        controller_id=0,
        controller_epoch=1,
        topic_states=[LeaderAndIsrRequest.TopicState(topic_name="t", partition_states=[state])],
    )
    with WireClient(broker.address("CONTROLLER")) as c:
        r = c.request(req, 7)
    assert r.topics[0].partition_errors[0].error_code == ErrorCode.NONE


def epoch_ends(broker: BrokerThread, *asked: tuple[int, int]) -> list[tuple[int, int, int]]:
    """(error, epoch, end offset) for each (leader epoch, current leader epoch)."""
    parts = [
        E.OffsetForLeaderPartition(partition=0, leader_epoch=e, current_leader_epoch=c)
        for e, c in asked
    ]
    req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[E(topic="t", partitions=parts)])
    with WireClient(broker.address()) as c:
        r = c.request(req, 4)
    return [(p.error_code, p.leader_epoch, p.end_offset) for p in r.topics[0].partitions]


@pytest.fixture
def epochs(tmp_path: Path) -> Iterator[BrokerThread]:
    """Offsets 0-4 written at leader epoch 0, 5-9 at leader epoch 3."""
    b = BrokerThread(tmp_path / "data", PLANES).start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
    produce(b.bootstrap, 5)
    bump_leader_epoch(b, 3)
    produce(b.bootstrap, 5)
    yield b
    b.stop()


def test_offset_for_leader_epoch_answers_where_each_epoch_ended(epochs: BrokerThread) -> None:
    assert epoch_ends(epochs, (0, -1), (1, -1), (3, -1), (4, -1)) == [
        (ErrorCode.NONE, 0, 5),  # epoch 0 ended where epoch 3 began
        (ErrorCode.NONE, 0, 5),  # epoch 1 never wrote: the epoch below it answers
        (ErrorCode.NONE, 3, 10),  # the current epoch ends at the log end
        (ErrorCode.NONE, -1, -1),  # newer than any epoch of the log
    ]
    assert epoch_ends(epochs, (0, 2), (0, 4), (0, 3)) == [
        (ErrorCode.FENCED_LEADER_EPOCH, -1, -1),
        (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),
        (ErrorCode.NONE, 0, 5),
    ]


def test_list_offsets_fences_an_old_current_leader_epoch(epochs: BrokerThread) -> None:
    def latest(current: int) -> tuple[int, int, int]:
        part = L.Partition(partition_index=0, timestamp=-1, current_leader_epoch=current)
        req = ListOffsetsRequest(replica_id=-1, topics=[L(name="t", partitions=[part])])
        with WireClient(epochs.address()) as c:
            p = c.request(req, 7).topics[0].partitions[0]
        return p.error_code, p.offset, p.leader_epoch

    assert latest(-1) == (ErrorCode.NONE, 10, 3)
    assert latest(3) == (ErrorCode.NONE, 10, 3)
    assert latest(2) == (ErrorCode.FENCED_LEADER_EPOCH, -1, -1)
    assert latest(4) == (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1)


def consumer(bootstrap: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "g",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )


def test_librdkafka_validates_a_seek_with_its_epoch_and_detects_truncation(
    epochs: BrokerThread,
) -> None:
    c = consumer(epochs.bootstrap)
    try:
        c.assign([TopicPartition("t", 0, 3, leader_epoch=0)])
        # offset 3 of epoch 0 is in the log (epoch 0 ended at 5): consumed from there
        got = []
        while len(got) < 7:
            msg = c.poll(10)
            assert msg is not None and msg.error() is None, msg and msg.error()
            got.append((msg.offset(), msg.leader_epoch()))
        assert got == [(3, 0), (4, 0), (5, 3), (6, 3), (7, 3), (8, 3), (9, 3)]
        # offset 7 of epoch 0 never existed on this leader: epoch 0 ended at 5, so the
        # broker's answer tells librdkafka that the log it read from was truncated.
        c.seek(TopicPartition("t", 0, 7, leader_epoch=0))
        msg = c.poll(10)
        assert msg is not None and msg.error() is not None
        # (auto.offset.reset=error: librdkafka reports it as a reset to INVALID; without
        # the broker's answer it would have fetched and met "offset out of range")
        assert msg.error().code() == KafkaError._AUTO_OFFSET_RESET, msg.error()
        assert "log truncation detected" in msg.error().str(), msg.error()
        assert "broker end offset is 5" in msg.error().str(), msg.error()
    finally:
        c.close()


def test_the_epochs_survive_a_restart(tmp_path: Path, epochs: BrokerThread) -> None:
    epochs.stop()
    again = BrokerThread(epochs.config.log_dirs[0], PLANES).start()
    try:
        assert epoch_ends(again, (0, -1), (3, -1)) == [
            (ErrorCode.NONE, 0, 5),
            (ErrorCode.NONE, 3, 10),
        ]
    finally:
        again.stop()


def fetch(broker: BrokerThread, offset: int, current: int, last_fetched: int, version: int) -> Any:
    topic_id = broker.call(lambda: broker.broker.topic("t").topic_id)
    F = FetchRequest.Topic
    part = F.Partition(
        partition=0,
        fetch_offset=offset,
        current_leader_epoch=current,
        last_fetched_epoch=last_fetched,
        partition_max_bytes=1 << 20,
    )
    req = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        topics=[F(topic="t", topic_id=topic_id, partitions=[part])],
    )
    with WireClient(broker.address()) as c:
        return c.request(req, version).responses[0].partitions[0]


@pytest.mark.parametrize("version", [12, 17])
def test_a_fetch_from_a_diverged_log_gets_the_diverging_epoch(
    epochs: BrokerThread, version: int
) -> None:
    # A follower (or consumer) that read offsets 0-6 all in epoch 0 diverged at offset 5,
    # where this log's epoch 0 ended: it is told so, and gets no records.
    p = fetch(epochs, 7, 3, 0, version)
    assert p.error_code == ErrorCode.NONE and p.high_watermark == 10
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, 5)
    assert not p.records
    # Offset 4 of epoch 0, or offset 7 of epoch 3, are in this log: records come.
    for offset, last in ((4, 0), (7, 3)):
        p = fetch(epochs, offset, 3, last, version)
        assert p.error_code == ErrorCode.NONE and p.records
        assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (-1, -1)


def test_a_fetch_with_a_stale_or_future_leader_epoch_is_refused(epochs: BrokerThread) -> None:
    assert fetch(epochs, 0, 2, -1, 12).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert fetch(epochs, 0, 4, -1, 12).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert fetch(epochs, 0, 3, -1, 12).error_code == ErrorCode.NONE
    assert fetch(epochs, 0, -1, -1, 12).error_code == ErrorCode.NONE
