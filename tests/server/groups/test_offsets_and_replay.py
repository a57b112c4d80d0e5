"""Committed offsets: acknowledged after the write, kept in order, expired by the retention
rule with tombstones, and everything rebuilt from the log on start-up."""

from __future__ import annotations

import random

import trio

from trio_broker.apis.group_services import CommittedOffset, MemberIdentity, OffsetCommitEntry
from trio_broker.protocol.errors import ErrorCode as E
from trio_broker.protocol.messages.coordinator_records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
)
from trio_broker.server.groups import GroupState

from .harness import MemoryTopic, start

MINUTE = 60.0


def log_of(topic: MemoryTopic) -> list[tuple[object, object]]:
    out = []
    for r in topic.records():
        key = decode_key(r.key)  # type: ignore[arg-type]
        out.append((key, None if r.value is None else decode_value(key, r.value)))
    return out


async def test_a_commit_is_acknowledged_only_once_written(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    topic = MemoryTopic()
    h = await start(nursery, topic)
    m = h.member("simple")
    topic.gate = trio.Event()
    done: list[dict] = []

    async def commit() -> None:
        done.append(await m.commit({("t", 0): 42}, generation=-1, metadata="meta"))

    nursery.start_soon(commit)
    await h.settle()
    assert done == [] and topic.records() == []
    assert h.coordinator.fetch_offsets("g", [("t", 0)], False)[1][("t", 0)].offset == -1
    topic.gate.set()
    await h.settle()
    assert done == [{("t", 0): E.NONE}]
    assert h.coordinator.fetch_offsets("g", [("t", 0)], False)[1] == {
        ("t", 0): CommittedOffset(42, -1, "meta", 0)
    }
    ((key, value),) = log_of(topic)
    assert key == OffsetCommitKey(group="g", topic="t", partition=0)
    assert isinstance(value, OffsetCommitValue) and (value.offset, value.metadata) == (42, "meta")
    assert value.commit_timestamp > 0


async def test_a_failed_write_reports_kafkas_error_and_keeps_the_old_offset(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    topic = MemoryTopic()
    h = await start(nursery, topic)
    m = h.member("simple")
    assert await m.commit({("t", 0): 1}, generation=-1) == {("t", 0): 0}
    for storage_error, reported in [
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
        (E.RECORD_LIST_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
        (E.MESSAGE_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
    ]:
        topic.fail_with = storage_error
        assert await m.commit({("t", 0): 2}, generation=-1) == {("t", 0): reported}
    assert h.coordinator.fetch_offsets("g", None, False)[1][("t", 0)].offset == 1


async def test_metadata_longer_than_the_limit_is_refused_per_partition(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, offset_metadata_max_bytes=10)
    got = await h.coordinator.commit_offsets(
        "g",
        -1,
        "",
        None,
        -1,
        [
            OffsetCommitEntry("t", 0, 1, metadata="x" * 11),
            OffsetCommitEntry("t", 1, 1, metadata="ok"),
        ],
    )
    assert got == {("t", 0): E.OFFSET_METADATA_TOO_LARGE, ("t", 1): E.NONE}


async def test_concurrent_commits_land_in_order_and_share_appends(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    topic = MemoryTopic()
    h = await start(nursery, topic)
    m = h.member("simple")
    rng = random.Random(7)
    topic.gate = trio.Event()

    async def commit(i: int) -> None:
        await trio.sleep(rng.random() / 1000)
        await m.commit({("t", 0): i}, generation=-1)

    async with trio.open_nursery() as inner:
        for i in range(50):
            inner.start_soon(commit, i)
        await trio.sleep(0.01)
        topic.gate.set()
    # the commits were submitted in some order; the log and the cache agree on the last one
    last_in_log = [v.offset for _, v in log_of(topic)][-1]  # type: ignore[attr-defined]
    assert h.coordinator.fetch_offsets("g", None, False)[1][("t", 0)].offset == last_in_log
    assert topic.appends < 50  # commits queued behind one append share the next one


async def test_offsets_of_an_empty_group_expire_after_the_retention(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    topic = MemoryTopic()
    h = await start(
        nursery, topic, offsets_retention_ms=60 * 60_000, offsets_retention_check_interval_ms=60_000
    )
    a = h.member("a", session_ms=1_800_000)
    await h.stable_group(a)
    await a.commit({("t", 0): 10, ("t", 1): 11})
    await trio.sleep(20 * MINUTE)  # a group with members keeps its offsets
    assert len(h.groups["g"].offsets) == 2
    h.coordinator.leave_group("g", [MemberIdentity(a.member_id)])
    became_empty = trio.current_time()
    await trio.sleep(59 * MINUTE)
    assert len(h.groups["g"].offsets) == 2  # counted from when the group became empty
    await trio.sleep(2 * MINUTE)
    await h.settle()
    assert "g" not in h.groups  # no offsets left: the group is gone as well
    assert trio.current_time() - became_empty < 62 * MINUTE
    tail = log_of(topic)[-3:]
    assert [type(k).__name__ for k, _ in tail] == [
        "OffsetCommitKey",
        "OffsetCommitKey",
        "GroupMetadataKey",
    ]
    assert all(v is None for _, v in tail)  # tombstones


async def test_a_stable_consumer_group_expires_offsets_of_topics_it_no_longer_reads(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    subscription = b"\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x04mine" + b"\xff\xff\xff\xff"
    h = await start(
        nursery, offsets_retention_ms=10 * 60_000, offsets_retention_check_interval_ms=60_000
    )
    a = h.member("a", protocols=(("range", subscription),), session_ms=1_800_000)
    await h.stable_group(a)
    assert h.groups["g"].subscribed_topics == {"mine"}
    await a.commit({("mine", 0): 1, ("old", 0): 2})
    await trio.sleep(11 * MINUTE)
    assert list(h.groups["g"].offsets) == [("mine", 0)]


async def test_offsets_committed_with_a_retention_time_expire_then(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, offsets_retention_check_interval_ms=1000)
    m = h.member("simple")
    await m.commit({("t", 0): 1}, generation=-1, retention=5000)
    await trio.sleep(4)
    assert h.groups["g"].offsets
    await trio.sleep(2)
    assert "g" not in h.groups


async def test_groups_and_offsets_come_back_from_the_log(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    topic = MemoryTopic()
    h = await start(nursery, topic)
    s, d = h.member("s", instance="i-s", session_ms=20_000), h.member("d", session_ms=20_000)
    await h.stable_group(s, d)
    await d.commit({("t", 0): 100, ("t", 1): 200}, metadata="m")
    e = h.member("e", group="emptied")
    await h.stable_group(e)
    await e.commit({("t", 2): 7})
    h.coordinator.leave_group("emptied", [MemberIdentity(e.member_id)])
    gone = h.member("x", group="deleted")
    await gone.commit({("t", 0): 1}, generation=-1)
    assert await h.coordinator.delete_groups(["deleted"]) == {"deleted": E.NONE}
    await h.settle()
    before = h.groups["g"]
    h.coordinator.stop()
    await h.settle()

    # a new coordinator on the same log (the broker restarted)
    h2 = await start(nursery, topic)
    g = h2.groups["g"]
    assert (g.state, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id) == (
        GroupState.STABLE,
        before.generation_id,
        "consumer",
        "range",
        before.leader_id,
    )
    assert {m.member_id: m.assignment for m in g.members.values()} == {
        s.member_id: b"assigned-s",
        d.member_id: b"assigned-d",
    }
    assert g.static_members == {"i-s": s.member_id}
    assert h2.coordinator.fetch_offsets("g", None, False)[1] == {
        ("t", 0): CommittedOffset(100, -1, "m", 0),
        ("t", 1): CommittedOffset(200, -1, "m", 0),
    }
    emptied = h2.groups["emptied"]
    assert emptied.state is GroupState.EMPTY and emptied.offsets[("t", 2)].offset == 7
    assert "deleted" not in h2.groups
    # members carry on in their generation, with fresh sessions
    d.h = s.h = h2
    assert d.heartbeat() == E.NONE
    assert (await d.synced(d.sync())).assignment == b"assigned-d"
    await trio.sleep(15)
    assert d.heartbeat() == E.NONE
    await trio.sleep(15)  # s never came back: its session (from the load) ran out
    assert s.member_id not in g.members and g.state is GroupState.PREPARING_REBALANCE


async def test_unreadable_records_are_skipped_on_load(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    from trio_broker.records import Record, build_batch

    topic = MemoryTopic(partitions=1)
    topic.batches[0].append(build_batch([Record(b"\x00\x09junk", b"x"), Record(None, b"y")]))
    h = await start(nursery, topic)
    m = h.member("simple")
    await m.commit({("t", 0): 3}, generation=-1)
    await h.settle()
    h.coordinator.stop()
    h2 = await start(nursery, topic)
    assert h2.coordinator.loaded_records == 3
    assert h2.groups["g"].offsets[("t", 0)].offset == 3


async def test_delete_groups(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    topic = MemoryTopic()
    h = await start(nursery, topic)
    a = h.member("a")
    await h.stable_group(a)
    simple = h.member("s", group="simple")
    await simple.commit({("t", 0): 5}, generation=-1)
    got = await h.coordinator.delete_groups(["g", "simple", "missing", "simple"])
    assert got == {"g": E.NON_EMPTY_GROUP, "simple": E.NONE, "missing": E.GROUP_ID_NOT_FOUND}
    assert h.coordinator.fetch_offsets("simple", [("t", 0)], False)[1][("t", 0)].offset == -1
    part = h.coordinator.partition_for("simple")
    keys = [decode_key(r.key) for r in topic.records(part)]  # type: ignore[arg-type]
    assert keys[-1] == GroupMetadataKey(group="simple")
    assert [r.value for r in topic.records(part)][-2:] == [None, None]


async def test_offset_delete(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x04mine" + b"\xff\xff\xff\xff"
    h = await start(nursery)
    a = h.member("a", protocols=(("range", subscription),))
    await h.stable_group(a)
    await a.commit({("mine", 0): 1, ("other", 0): 2})
    code, results = await h.coordinator.delete_offsets("g", [("mine", 0), ("other", 0)])
    assert code == E.NONE
    assert results == {("mine", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): E.NONE}
    assert list(h.groups["g"].offsets) == [("mine", 0)]
    assert (await h.coordinator.delete_offsets("nope", [("t", 0)]))[0] == E.GROUP_ID_NOT_FOUND
    b = h.member("b", group="other-protocol")
    b.protocols = (("x", b""),)
    await h.coordinator.commit_offsets("other-protocol", -1, "", None, -1, [])
    out = h.coordinator.join_group(b.params(protocol_type="connect", require_known_member_id=False))
    await h.result(out)
    assert (await h.coordinator.delete_offsets("other-protocol", [("t", 0)]))[
        0
    ] == E.NON_EMPTY_GROUP


async def test_list_and_describe(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a"), h.member("b")
    await h.stable_group(a, b)
    await h.member("s", group="simple").commit({("t", 0): 1}, generation=-1)
    code, groups = h.coordinator.list_groups([])
    assert code == 0 and {(g.group_id, g.protocol_type, g.state) for g in groups} == {
        ("g", "consumer", "Stable"),
        ("simple", "", "Empty"),
    }
    assert [g.group_id for g in h.coordinator.list_groups(["stable"])[1]] == ["g"]
    assert [g.group_id for g in h.coordinator.list_groups(["Empty", "Dead"])[1]] == ["simple"]
    d = h.coordinator.describe_group("g")
    assert (d.error_code, d.state, d.protocol_type, d.protocol) == (
        0,
        "Stable",
        "consumer",
        "range",
    )
    assert [(m.client_id, m.client_host, m.metadata, m.assignment) for m in d.members] == [
        ("a", "/127.0.0.1", b"meta", b"assigned-a"),
        ("b", "/127.0.0.1", b"meta", b"assigned-b"),
    ]
    h.member("c").join()  # rebalancing: no protocol, no metadata or assignments shown
    d = h.coordinator.describe_group("g")
    assert (d.state, d.protocol) == ("PreparingRebalance", "")
    assert {m.metadata for m in d.members} == {b""}
    missing = h.coordinator.describe_group("missing")
    assert (missing.error_code, missing.state, missing.members) == (0, "Dead", ())
