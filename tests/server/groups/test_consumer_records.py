"""KIP-848 consumer groups in ``__consumer_offsets``: the six record types byte for byte
against a small struct-based encoder written here from Kafka's JSON schemas (the oracle),
and a coordinator on an in-memory offsets topic whose groups a second coordinator reads
back: same epochs, members, targets, and heartbeats that carry on with their epochs."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
import trio

from trio_broker.apis.group_services import ConsumerHeartbeat, TopicMeta
from trio_broker.log.cleaner.compaction import clean
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.coordinator_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicPartitions,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from trio_broker.records import iter_batches, iter_records, validate_batches
from trio_broker.server.groups.log_format import Replay

from ...log.helpers import open_log, region_bytes
from .harness import EPOCH_MS, MemoryTopic, start

T1 = uuid.UUID("0b2c4e6f-1111-4222-8333-944455566677")
T2 = uuid.UUID("ffeeddcc-bbaa-4998-8776-655443322110")


# ------------------------------------------------------------------ the oracle


def s16(text: str) -> bytes:  # non-flexible string (keys)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(text: str | None) -> bytes:  # compact (nullable) string
    if text is None:
        return uvarint(0)
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def carray(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"


def tps(topic: uuid.UUID, parts: list[int]) -> bytes:
    return topic.bytes + carray([struct.pack(">i", p) for p in parts]) + NO_TAGS


CASES: list[tuple[Any, bytes, Any, bytes]] = [
    (
        ConsumerGroupMetadataKey(group="grp"),
        struct.pack(">h", 3) + s16("grp"),
        ConsumerGroupMetadataValue(epoch=42),
        struct.pack(">hi", 0, 42) + NO_TAGS,
    ),
    (
        ConsumerGroupPartitionMetadataKey(group="grp"),
        struct.pack(">h", 4) + s16("grp"),
        ConsumerGroupPartitionMetadataValue(
            topics=[
                ConsumerGroupPartitionMetadataValue.TopicMetadata(
                    topic_id=T1, topic_name="orders", num_partitions=12, partition_metadata=[]
                )
            ]
        ),
        struct.pack(">h", 0)
        + carray([T1.bytes + cstr("orders") + struct.pack(">i", 12) + carray([]) + NO_TAGS])
        + NO_TAGS,
    ),
    (
        ConsumerGroupMemberMetadataKey(group="grp", member_id="m-1"),
        struct.pack(">h", 5) + s16("grp") + s16("m-1"),
        ConsumerGroupMemberMetadataValue(
            instance_id=None,
            rack_id="r1",
            client_id="cli",
            client_host="/127.0.0.1",
            subscribed_topic_names=["a", "b"],
            subscribed_topic_regex=None,
            rebalance_timeout_ms=300000,
            server_assignor="uniform",
        ),
        struct.pack(">h", 0)
        + cstr(None)
        + cstr("r1")
        + cstr("cli")
        + cstr("/127.0.0.1")
        + carray([cstr("a"), cstr("b")])
        + cstr(None)
        + struct.pack(">i", 300000)
        + cstr("uniform")
        + NO_TAGS,
    ),
    (
        ConsumerGroupTargetAssignmentMetadataKey(group="grp"),
        struct.pack(">h", 6) + s16("grp"),
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=7),
        struct.pack(">hi", 0, 7) + NO_TAGS,
    ),
    (
        ConsumerGroupTargetAssignmentMemberKey(group="grp", member_id="m-1"),
        struct.pack(">h", 7) + s16("grp") + s16("m-1"),
        ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=[TopicPartitions(topic_id=T1, partitions=[0, 3])]
        ),
        struct.pack(">h", 0) + carray([tps(T1, [0, 3])]) + NO_TAGS,
    ),
    (
        ConsumerGroupCurrentMemberAssignmentKey(group="grp", member_id="m-1"),
        struct.pack(">h", 8) + s16("grp") + s16("m-1"),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=9,
            previous_member_epoch=8,
            state=1,
            assigned_partitions=[TopicPartitions(topic_id=T1, partitions=[0])],
            partitions_pending_revocation=[TopicPartitions(topic_id=T2, partitions=[5])],
        ),
        struct.pack(">hiib", 0, 9, 8, 1)
        + carray([tps(T1, [0])])
        + carray([tps(T2, [5])])
        + NO_TAGS,
    ),
]


@pytest.mark.parametrize(("key", "key_bytes", "value", "value_bytes"), CASES)
def test_consumer_group_records_match_the_oracle(
    key: Any, key_bytes: bytes, value: Any, value_bytes: bytes
) -> None:
    assert encode_key(key) == key_bytes
    assert encode_value(value, 0) == value_bytes
    assert decode_key(key_bytes) == key
    assert decode_value(key, value_bytes) == value


def test_a_classic_members_tagged_metadata_is_read_and_written() -> None:
    """Kafka writes ClassicMemberMetadata (tag 0) for a classic member of a converted
    group: read, and written back byte for byte."""
    key, _, value, plain = CASES[2]
    tagged = struct.pack(">i", 45000) + carray([cstr("range") + uvarint(3) + b"md" + NO_TAGS])
    # Kafka's generated writer: tag, size (+1 for the marker), marker 1 (not null), struct
    with_tag = plain[:-1] + uvarint(1) + uvarint(0) + uvarint(len(tagged + NO_TAGS) + 1)
    with_tag += uvarint(1) + tagged + NO_TAGS
    decoded = decode_value(key, with_tag)
    classic = decoded.classic_member_metadata
    assert classic is not None and classic.session_timeout_ms == 45000
    assert [(p.name, bytes(p.metadata)) for p in classic.supported_protocols] == [("range", b"md")]
    decoded.classic_member_metadata = None
    assert decoded == value
    decoded.classic_member_metadata = classic
    assert encode_value(decoded, 0) == with_tag


# ------------------------------------------------------- written and read back


class Topics:
    def __init__(self, **counts: int) -> None:
        self.meta = {
            name: TopicMeta(name, uuid.UUID(int=i + 1), n)
            for i, (name, n) in enumerate(counts.items())
        }

    def by_name(self, name: str) -> TopicMeta | None:
        return self.meta.get(name)

    def names(self) -> list[str]:
        return list(self.meta)


def beat(member_id: str, epoch: int, owned: Any = None, **kw: Any) -> ConsumerHeartbeat:
    first = epoch == 0
    fields: dict[str, Any] = {
        "group_id": "g",
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 60000 if first else -1,
        "subscribed_topic_names": ("t",) if first else None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "owned": {} if first else owned,
        "client_id": "cli",
        "client_host": "/127.0.0.1",
    }
    fields.update(kw)
    return ConsumerHeartbeat(**fields)


async def stable_pair(c: Any, topics: Topics) -> dict[str, int]:
    """Members a and b, heartbeating until both hold their targets; their epochs."""
    epochs = {"a": 0, "b": 0}
    owned: dict[str, Any] = {"a": {}, "b": {}}
    for _ in range(6):
        for m in ("a", "b"):
            r = await c.consumer_group_heartbeat(beat(m, epochs[m], owned[m]), topics)
            assert r.error_code == ErrorCode.NONE, r
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = r.assignment
    return epochs


def snapshot(c: Any) -> Any:
    g = c.consumer.groups["g"]
    return (
        g.group_epoch,
        g.assignment_epoch,
        dict(g.target),
        {m.member_id: (m.member_epoch, m.state, m.assigned) for m in g.members.values()},
        dict(g.subscription_metadata),
        dict(g.partition_epochs),
    )


async def test_a_new_coordinator_reads_the_group_back_and_heartbeats_carry_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    topic = MemoryTopic()
    topics = Topics(t=4)
    async with trio.open_nursery() as nursery:
        h = await start(nursery, topic)
        epochs = await stable_pair(h.coordinator, topics)
        before = snapshot(h.coordinator)
        assert str(h.coordinator.consumer.groups["g"].state) == "Stable"
        h.coordinator.stop()
    async with trio.open_nursery() as nursery:
        again = await start(nursery, topic)
        assert snapshot(again.coordinator) == before
        for m in ("a", "b"):
            r = await again.coordinator.consumer_group_heartbeat(beat(m, epochs[m]), topics)
            assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, epochs[m])
        assert snapshot(again.coordinator)[:2] == before[:2]  # no epoch bump
        # nothing changed, so nothing more was written
        written = len(topic.records())
        await again.coordinator.consumer_group_heartbeat(beat("a", epochs["a"]), topics)
        assert len(topic.records()) == written
        again.coordinator.stop()


async def test_a_member_gone_and_a_group_deleted_leave_tombstones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    topic = MemoryTopic()
    topics = Topics(t=4)
    async with trio.open_nursery() as nursery:
        h = await start(nursery, topic)
        c = h.coordinator
        epochs = await stable_pair(c, topics)
        r = await c.consumer_group_heartbeat(beat("b", -1), topics)  # b leaves
        assert r.error_code == ErrorCode.NONE
        keys = [decode_key(x.key) for x in topic.records() if x.value is None]
        assert [type(k).__name__ for k in keys] == [
            "ConsumerGroupCurrentMemberAssignmentKey",
            "ConsumerGroupTargetAssignmentMemberKey",
            "ConsumerGroupMemberMetadataKey",
        ]
        replay = Replay()
        for rec in topic.records():
            replay.apply(rec.key, rec.value)
        loaded = replay.consumer.loaded()["g"]
        assert set(loaded.members) == {"a"} and loaded.epoch == epochs["b"] + 1
        r = await c.consumer_group_heartbeat(beat("a", -1), topics)  # a leaves: empty
        assert await c.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        c.stop()
    replay = Replay()
    for rec in topic.records():
        replay.apply(rec.key, rec.value)
    assert replay.consumer.loaded() == {}
    async with trio.open_nursery() as nursery:
        again = await start(nursery, topic)
        assert "g" not in again.coordinator.consumer.groups
        again.coordinator.stop()


async def test_a_failed_write_is_answered_and_written_again_by_the_next_heartbeat(
    autojump_clock: trio.testing.MockClock,
) -> None:
    topic = MemoryTopic()
    topics = Topics(t=2)
    async with trio.open_nursery() as nursery:
        h = await start(nursery, topic)
        c = h.coordinator
        topic.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
        r = await c.consumer_group_heartbeat(beat("a", 0), topics)
        assert r.error_code == ErrorCode.NOT_COORDINATOR
        topic.fail_with = 0
        r = await c.consumer_group_heartbeat(beat("a", 0), topics)
        assert r.error_code == ErrorCode.NONE
        before = snapshot(c)
        c.stop()
    async with trio.open_nursery() as nursery:
        again = await start(nursery, topic)
        assert snapshot(again.coordinator) == before
        again.coordinator.stop()


async def test_compaction_keeps_each_keys_latest_and_drops_what_was_removed(
    tmp_path: Any, autojump_clock: trio.testing.MockClock
) -> None:
    """The records through the log cleaner (a real compacted partition log): each key's
    latest record stays, so the group reads back the same; once past
    delete.retention.ms, the tombstones of a member gone and of a group deleted are
    removed with everything they covered."""
    topic = MemoryTopic(partitions=1)
    topics = Topics(t=4)
    async with trio.open_nursery() as nursery:
        c = (await start(nursery, topic)).coordinator
        epochs = await stable_pair(c, topics)
        x = await c.consumer_group_heartbeat(beat("x", 0, group_id="gone"), topics)
        await c.consumer_group_heartbeat(beat("x", -1, group_id="gone"), topics)
        assert await c.delete_groups(["gone"]) == {"gone": ErrorCode.NONE}
        assert x.member_epoch == 1
        await c.consumer_group_heartbeat(beat("b", -1), topics)  # b leaves g
        await c.consumer_group_heartbeat(beat("a", epochs["a"]), topics)
        c.stop()

    def replayed(records: list[tuple[bytes | None, bytes | None]]) -> Any:
        replay = Replay()
        for key, value in records:
            replay.apply(key, value)
        return replay.consumer.loaded()

    written = [(r.key, r.value) for r in topic.records()]
    log = open_log(tmp_path / "co-0", cleanup_policy=("compact",), delete_retention_ms=1_000)
    now = EPOCH_MS + 10**7
    for batch in topic.batches[0]:
        log.append(
            validate_batches(memoryview(batch), max_batch_bytes=1 << 24), leader_epoch=0, now_ms=now
        )
    log.roll(now)
    assert clean(log, now, 1_000) is not None
    kept = log_records(log)
    assert len(kept) < len(written)
    assert replayed(kept) == replayed(written)
    assert any(v is None for _, v in kept)  # tombstones, until their horizon
    assert clean(log, now + 2_000, 1_000, force=True) is not None
    final = log_records(log)
    assert all(v is not None for _, v in final)
    keys = [decode_key(k) for k, _ in final if k is not None]
    assert {k.group for k in keys} == {"g"}
    assert {getattr(k, "member_id", "a") for k in keys} == {"a"}
    assert replayed(final) == replayed(written)
    assert set(replayed(final)["g"].members) == {"a"}
    log.close()


def log_records(log: Any) -> list[tuple[bytes | None, bytes | None]]:
    info = log.read(log.log_start_offset, 1 << 30)
    try:
        data = region_bytes(info)
    finally:
        info.release()
    return [(r.key, r.value) for _, b in iter_batches(data) for r in iter_records(b)]


async def test_an_empty_group_dropped_by_the_retention_check_leaves_tombstones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A consumer group with no members and no offsets goes at the next retention check
    (a timer, no request): its records are tombstoned, so a new coordinator has none."""
    topic = MemoryTopic()
    topics = Topics(t=2)
    async with trio.open_nursery() as nursery:
        c = (await start(nursery, topic, offsets_retention_check_interval_ms=60_000)).coordinator
        r = await c.consumer_group_heartbeat(beat("a", 0), topics)
        await c.consumer_group_heartbeat(beat("a", -1), topics)
        assert r.member_epoch == 1 and "g" in c.consumer.groups
        await trio.sleep(61)
        assert "g" not in c.consumer.groups
        await trio.testing.wait_all_tasks_blocked()
        c.stop()
    replay = Replay()
    for rec in topic.records():
        replay.apply(rec.key, rec.value)
    assert replay.consumer.loaded() == {}
