"""``__consumer_offsets`` records byte for byte as Kafka lays them out, the group-to-partition
hash, and the coordinator's timers."""

from __future__ import annotations

import struct

import pytest
import trio

from trio_broker.protocol.errors import CorruptRequest
from trio_broker.protocol.messages.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from trio_broker.server.groups.group import Group
from trio_broker.server.groups.log_format import (
    Replay,
    group_metadata_record,
    offset_commit_record,
    restore_group,
)
from trio_broker.server.groups.member import Member
from trio_broker.server.groups.offsets import OffsetAndMetadata, subscribed_topics
from trio_broker.server.groups.state import GroupState
from trio_broker.server.groups.storage import java_string_hash, partition_for
from trio_broker.server.groups.timers import Timers


def s16(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def b32(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_commit_key_and_value_v3() -> None:
    key = encode_key(OffsetCommitKey(group="grp", topic="orders", partition=7))
    assert key == struct.pack(">h", 1) + s16("grp") + s16("orders") + struct.pack(">i", 7)
    value = encode_value(
        OffsetCommitValue(offset=1234, leader_epoch=5, metadata="md", commit_timestamp=99), 3
    )
    assert value == struct.pack(">hqi", 3, 1234, 5) + s16("md") + struct.pack(">q", 99)


def test_offset_commit_value_v1_carries_the_expiry_time() -> None:
    value = encode_value(
        OffsetCommitValue(offset=1, metadata="", commit_timestamp=10, expire_timestamp=20), 1
    )
    assert value == struct.pack(">hq", 1, 1) + s16("") + struct.pack(">qq", 10, 20)


def test_group_metadata_key_and_value_v3() -> None:
    assert encode_key(GroupMetadataKey(group="grp")) == struct.pack(">h", 2) + s16("grp")
    member = GroupMetadataValue.MemberMetadata(
        member_id="m-1",
        group_instance_id=None,
        client_id="cli",
        client_host="/10.0.0.1",
        rebalance_timeout=300000,
        session_timeout=45000,
        subscription=b"sub",
        assignment=b"asg",
    )
    value = encode_value(
        GroupMetadataValue(
            protocol_type="consumer",
            generation=4,
            protocol="range",
            leader="m-1",
            current_state_timestamp=1234,
            members=[member],
        ),
        3,
    )
    expected = (
        struct.pack(">h", 3)
        + s16("consumer")
        + struct.pack(">i", 4)
        + s16("range")
        + s16("m-1")
        + struct.pack(">q", 1234)
        + struct.pack(">i", 1)
        + s16("m-1")
        + s16(None)
        + s16("cli")
        + s16("/10.0.0.1")
        + struct.pack(">ii", 300000, 45000)
        + b32(b"sub")
        + b32(b"asg")
    )
    assert value == expected


@pytest.mark.parametrize("version", range(5))
def test_every_value_version_reads_back(version: int) -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=0)
    v = OffsetCommitValue(offset=9, leader_epoch=2, metadata="x", commit_timestamp=3)
    back = decode_value(key, encode_value(v, version))
    assert isinstance(back, OffsetCommitValue) and (back.offset, back.metadata) == (9, "x")
    assert back.leader_epoch == (2 if version >= 3 else -1)
    gkey = GroupMetadataKey(group="g")
    gv = GroupMetadataValue(protocol_type="consumer", generation=1, protocol=None, leader=None)
    assert decode_value(gkey, encode_value(gv, version)) == gv


def test_unknown_versions_are_corrupt() -> None:
    with pytest.raises(CorruptRequest, match="key version 100"):
        decode_key(struct.pack(">h", 100) + s16("g"))
    with pytest.raises(CorruptRequest, match="value version 9"):
        decode_value(GroupMetadataKey(group="g"), struct.pack(">h", 9))
    with pytest.raises(CorruptRequest):
        decode_key(b"\x00")


def test_java_hash_and_partition() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("hello world") == 1794106052
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 code units
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 7) == 0  # Kafka's abs(MIN_VALUE) is 0
    assert partition_for("hello", 50) == 99162322 % 50


def test_records_round_trip_through_replay() -> None:
    g = Group("grp", GroupState.EMPTY, 5)
    m = Member("m1", "inst", "cli", "/h", 100, 200, "consumer", (("range", b"sub"),))
    g.add(m)
    g.protocol_name = "range"
    g.generation_id = 3
    replay = Replay()
    rec = group_metadata_record(g, {"m1": b"asg"}, 10)
    replay.apply(rec.key, rec.value)
    om = OffsetAndMetadata(7, 1, "meta", 11)
    rec = offset_commit_record("grp", ("t", 0), om)
    replay.apply(rec.key, rec.value)
    loaded = replay.groups()["grp"]
    assert loaded.offsets == {("t", 0): om}
    back = restore_group("grp", loaded)
    assert back.state is GroupState.STABLE and back.generation_id == 3
    member = back.members["m1"]
    assert (member.group_instance_id, member.assignment, member.protocols) == (
        "inst",
        b"asg",
        (("range", b"sub"),),
    )
    assert back.static_members == {"inst": "m1"} and back.leader_id == "m1"


def test_consumer_subscriptions_are_read_for_their_topics() -> None:
    v0 = b"\x00\x00" + b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x02bc" + b"\xff\xff\xff\xff"
    assert subscribed_topics(v0) == {"a", "bc"}
    with pytest.raises(ValueError):
        subscribed_topics(b"\x00\x00\x00\x00\x00\x05\x00")


async def test_timers_fire_in_order_and_can_be_rearmed_or_cancelled(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    timers = Timers()
    await nursery.start(timers.run)
    fired: list[tuple[str, float]] = []

    def record(name: str):  # type: ignore[no-untyped-def]
        return lambda: fired.append((name, trio.current_time()))

    timers.schedule("a", 5, record("a"))
    timers.schedule("b", 2, record("b"))
    timers.schedule("c", 3, record("c"))
    timers.cancel("c")
    await trio.sleep(1)
    timers.schedule("a", 1, record("a"))  # re-armed: the old deadline no longer counts
    await trio.sleep(10)
    assert fired == [("a", 2.0), ("b", 2.0)] or fired == [("b", 2.0), ("a", 2.0)]
    assert len(timers) == 0
