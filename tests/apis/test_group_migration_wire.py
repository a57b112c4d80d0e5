"""KIP-848's online migration at the wire (issue 34), through a real broker in the test's
loop: a classic group with a member becomes a consumer group when a consumer-protocol
member joins, its classic member goes on through JoinGroup / SyncGroup / Heartbeat as a
classic member inside it (told REBALANCE_IN_PROGRESS when its assignment changes, given
its partitions by the server-side assignor), and the group is classic again when the
consumer-protocol member leaves. ``group.consumer.migration.policy`` refuses with
Kafka's errors, and a restart reads the converted group back from its records. The
consumer protocol's bytes are built and read with aiokafka's codec (not ours)."""

from __future__ import annotations

from typing import Any

import trio
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from trio_broker.protocol.errors import ErrorCode as E
from trio_broker.protocol.messages.group_heartbeats import ConsumerGroupDescribeRequest
from trio_broker.protocol.messages.groups import (
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    SyncGroupRequest,
)

from .test_consumer_groups_wire import as_owned, hb, owned
from .test_groups_wire import client_of, make_topic

TOPIC = "mig"
SETTINGS = {
    "num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.session.timeout.ms": "500",
    "group.consumer.session.timeout.ms": "30000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "200",
}


def subscription() -> bytes:
    return ConsumerProtocolMemberMetadata(0, [TOPIC], b"").encode()


def assignment_bytes(partitions: list[int]) -> bytes:
    return ConsumerProtocolMemberAssignment(0, [(TOPIC, partitions)], b"").encode()


def partitions_in(data: bytes) -> list[int]:
    got = ConsumerProtocolMemberAssignment.decode(data)
    return sorted(p for topic, ps in got.assignment for p in ps if topic == TOPIC)


def classic_join(member: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=30_000,
        rebalance_timeout_ms=10_000,
        member_id=member,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.Protocol(name="range", metadata=subscription())],
    )


async def join_classic(c: Any, member: str = "") -> Any:
    r = await c.request(classic_join(member), 7)
    if r.error_code == E.MEMBER_ID_REQUIRED:
        r = await c.request(classic_join(r.member_id), 7)
    return r


def sync(member: str, generation: int, assignments: dict[str, bytes] | None = None) -> Any:
    return SyncGroupRequest(
        group_id="g",
        generation_id=generation,
        member_id=member,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequest.Assignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ],
    )


async def classic_group_of_one(c: Any) -> tuple[str, int]:
    """A classic member "a" alone in "g", holding all four partitions."""
    j = await join_classic(c)
    assert j.error_code == 0 and j.leader == j.member_id, j
    s = await c.request(
        sync(j.member_id, j.generation_id, {j.member_id: assignment_bytes([0, 1, 2, 3])}), 5
    )
    assert s.error_code == 0
    return j.member_id, j.generation_id


async def group_type(c: Any) -> tuple[str, str]:
    listed = (await c.request(ListGroupsRequest(), 5)).groups
    (g,) = [x for x in listed if x.group_id == "g"]
    return g.group_type, g.group_state


async def consumer_described(c: Any) -> Any:
    (d,) = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 1)).groups
    return d


async def test_a_classic_group_upgrades_and_downgrades_online(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(SETTINGS)
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    topic_id = broker.topic(TOPIC).topic_id
    a, generation = await classic_group_of_one(c)
    assert await group_type(c) == ("classic", "Stable")

    # the first consumer-protocol member: the group is a consumer group now
    b = await c.request(hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1)
    assert b.error_code == 0, b
    assert b.member_epoch == generation + 1  # the classic generation, bumped by b's joining
    assert owned(b).get(topic_id, []) == []  # a still holds them all: nothing yet
    assert (await group_type(c))[0] == "consumer"
    d = await consumer_described(c)
    assert d.error_code == 0 and d.group_epoch == generation + 1
    types = {m.member_id: m.member_type for m in d.members}
    assert types == {a: 0, "b": 1}  # a is a classic member inside the consumer group
    (dg,) = (await c.request(DescribeGroupsRequest(groups=["g"]), 5)).groups
    assert dg.group_state == "Dead"  # not a classic group any more, as Kafka answers

    # the classic member is told to rejoin, and gets half from the server's assignor
    assert (
        await c.request(HeartbeatRequest(group_id="g", generation_id=generation, member_id=a), 4)
    ).error_code == E.REBALANCE_IN_PROGRESS
    j = await join_classic(c, a)
    assert (j.error_code, j.member_id, j.generation_id) == (0, a, generation + 1)
    assert j.leader == "" and j.members == [] and j.protocol_name == "range"
    s = await c.request(sync(a, j.generation_id), 5)
    assert s.error_code == 0
    kept = partitions_in(s.assignment)
    assert len(kept) == 2
    ok = await c.request(
        HeartbeatRequest(group_id="g", generation_id=j.generation_id, member_id=a), 4
    )
    assert ok.error_code == 0

    # b now gets the other two
    epoch = b.member_epoch
    held: dict[Any, list[int]] = {}
    with trio.fail_after(10):
        while len(held.get(topic_id, [])) < 2:
            r = await c.request(hb("g", "b", epoch, topic_partitions=as_owned(held)), 1)
            assert r.error_code == 0, r
            epoch = r.member_epoch
            if r.assignment is not None:
                held = owned(r)
    assert sorted(held[topic_id]) == sorted({0, 1, 2, 3} - set(kept))

    # b leaves: the group is classic again, a is asked to join and leads it
    gone = await c.request(hb("g", "b", -1), 1)
    assert gone.error_code == 0
    assert await group_type(c) == ("classic", "PreparingRebalance")
    (dg,) = (await c.request(DescribeGroupsRequest(groups=["g"]), 5)).groups
    assert dg.protocol_type == "consumer" and [m.member_id for m in dg.members] == [a]
    (cd,) = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 1)).groups
    assert cd.error_code == E.GROUP_ID_NOT_FOUND
    beat = await c.request(
        HeartbeatRequest(group_id="g", generation_id=j.generation_id, member_id=a), 4
    )
    assert beat.error_code == E.REBALANCE_IN_PROGRESS
    again = await join_classic(c, a)
    assert again.error_code == 0 and again.leader == a and again.generation_id > j.generation_id
    s = await c.request(sync(a, again.generation_id, {a: assignment_bytes([0, 1, 2, 3])}), 5)
    assert s.error_code == 0 and partitions_in(s.assignment) == [0, 1, 2, 3]
    assert await group_type(c) == ("classic", "Stable")
    await c.aclose()


async def test_the_migration_policy_refuses_as_kafka(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({**SETTINGS, "group.consumer.migration.policy": "disabled"})
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    await classic_group_of_one(c)
    r = await c.request(hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1)
    assert (r.error_code, r.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group g is not a consumer group.",
    )
    assert await group_type(c) == ("classic", "Stable")
    # an empty classic group is replaced whatever the policy
    other = await c.request(
        hb("empty", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1
    )
    assert other.error_code == 0
    await c.aclose()


async def test_upgrade_only_keeps_the_consumer_group(run_broker) -> None:  # type: ignore[no-untyped-def]
    """Policy upgrade: the consumer-protocol member's leaving does not make the group
    classic again; its classic member stays a member of the consumer group."""
    broker = await run_broker({**SETTINGS, "group.consumer.migration.policy": "UPGRADE"})
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    a, _ = await classic_group_of_one(c)
    b = await c.request(hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1)
    assert b.error_code == 0
    assert (await c.request(hb("g", "b", -1), 1)).error_code == 0
    assert (await group_type(c))[0] == "consumer"
    d = await consumer_described(c)
    assert [m.member_id for m in d.members] == [a]
    # a classic LeaveGroup empties it (no downgrade on a classic member's leaving)
    left = await c.request(
        LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id=a)]), 3
    )
    assert left.error_code == 0 and left.members[0].error_code == 0
    assert await group_type(c) == ("consumer", "Empty")
    await c.aclose()


async def test_the_converted_group_is_read_back_after_a_restart(run_broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = {**SETTINGS, "log.dirs": str(tmp_path / "kept")}
    broker = await run_broker(settings)
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    a, generation = await classic_group_of_one(c)
    b = await c.request(hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1)
    assert b.error_code == 0
    before = await consumer_described(c)
    await c.aclose()
    broker.shutdown()
    with trio.fail_after(30):
        await broker.stopped.wait()

    again = await run_broker(settings)
    c = await client_of(again)
    after = await consumer_described(c)

    def view(d: Any) -> Any:
        return (
            d.group_epoch,
            d.assignment_epoch,
            sorted((m.member_id, m.member_type, m.member_epoch) for m in d.members),
        )

    assert (
        view(after)
        == view(before)
        == (
            generation + 1,
            generation + 1,
            sorted([(a, 0, generation), ("b", 1, generation + 1)]),
        )
    )
    # the classic member's metadata came back too: it rejoins and syncs as a classic member
    assert (
        await c.request(HeartbeatRequest(group_id="g", generation_id=generation, member_id=a), 4)
    ).error_code == E.REBALANCE_IN_PROGRESS
    j = await join_classic(c, a)
    assert j.error_code == 0 and j.generation_id == generation + 1
    s = await c.request(sync(a, j.generation_id), 5)
    assert s.error_code == 0 and len(partitions_in(s.assignment)) == 2
    await c.aclose()


async def test_the_downgraded_group_is_read_back_after_a_restart(run_broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The consumer group's tombstones and the classic group's record: a restart finds
    the classic group (its member, generation = the group epoch, protocol type consumer)
    and no consumer group."""
    settings = {**SETTINGS, "log.dirs": str(tmp_path / "kept")}
    broker = await run_broker(settings)
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    a, generation = await classic_group_of_one(c)
    b = await c.request(hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1)
    assert b.error_code == 0
    assert (await c.request(hb("g", "b", -1), 1)).error_code == 0
    assert await group_type(c) == ("classic", "PreparingRebalance")
    await c.aclose()
    broker.shutdown()
    with trio.fail_after(30):
        await broker.stopped.wait()

    again = await run_broker(settings)
    c = await client_of(again)
    assert await group_type(c) == ("classic", "Stable")
    (dg,) = (await c.request(DescribeGroupsRequest(groups=["g"]), 5)).groups
    assert (dg.protocol_type, dg.protocol_data) == ("consumer", "range")
    assert [m.member_id for m in dg.members] == [a]
    (cd,) = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 1)).groups
    assert cd.error_code == E.GROUP_ID_NOT_FOUND
    # a's heartbeat at the group epoch is that of the classic generation now
    beat = HeartbeatRequest(group_id="g", generation_id=generation + 1, member_id=a)
    assert (await c.request(beat, 4)).error_code == 0
    await c.aclose()


async def test_a_rebalancing_classic_group_tells_its_parked_members_to_rejoin(run_broker) -> None:  # type: ignore[no-untyped-def]
    """Upgraded while a JoinGroup is parked (the group is PreparingRebalance): the parked
    JoinGroup is answered REBALANCE_IN_PROGRESS, as Kafka's completeAllJoinFutures does,
    and its member then joins the consumer group as a classic member."""
    broker = await run_broker(SETTINGS)
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    await classic_group_of_one(c)
    other = await client_of(broker, "parked")
    first = await other.request(classic_join(), 7)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    answers: list[Any] = []

    async def parked() -> None:
        answers.append(await other.request(classic_join(first.member_id), 7))

    with trio.fail_after(15):  # the parked JoinGroup is answered, not left to time out
        async with trio.open_nursery() as nursery:
            nursery.start_soon(parked)
            with trio.fail_after(10):
                while (await group_type(c))[1] != "PreparingRebalance":
                    await trio.sleep(0.01)
            assert answers == []  # parked, waiting for the group's first member
            b = await c.request(
                hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[]), 1
            )
            assert b.error_code == 0
    (answer,) = answers
    assert answer.error_code == E.REBALANCE_IN_PROGRESS
    j = await join_classic(other, first.member_id)
    assert j.error_code == 0 and j.leader == ""
    d = await consumer_described(c)
    assert sorted(m.member_type for m in d.members) == [0, 0, 1]
    await other.aclose()
    await c.aclose()


async def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades(
    run_broker,
) -> None:  # type: ignore[no-untyped-def]
    """Kafka's downgrade by replacement: a classic JoinGroup with the instance id of the
    group's last consumer-protocol member (static) takes its place and partitions, and
    the group is classic again at once, Stable (no rebalance): the newcomer syncs its
    predecessor's partitions, the other member carries on at its generation."""
    broker = await run_broker(SETTINGS)
    c = await client_of(broker)
    await make_topic(c, TOPIC)
    topic_id = broker.topic(TOPIC).topic_id
    a, _ = await classic_group_of_one(c)
    first = hb("g", "b", 0, subscribed_topic_names=[TOPIC], topic_partitions=[], instance_id="i1")
    b = await c.request(first, 1)
    assert b.error_code == 0
    # a rejoins and gives up half; b takes it
    j = await join_classic(c, a)
    assert (await c.request(sync(a, j.generation_id), 5)).error_code == 0
    epoch, held = b.member_epoch, {}
    with trio.fail_after(10):
        while len(held.get(topic_id, [])) < 2:
            r = await c.request(
                hb("g", "b", epoch, topic_partitions=as_owned(held), instance_id="i1"), 1
            )
            assert r.error_code == 0, r
            epoch = r.member_epoch
            if r.assignment is not None:
                held = owned(r)
    replacing = JoinGroupRequest(
        group_id="g",
        session_timeout_ms=30_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        group_instance_id="i1",
        protocol_type="consumer",
        protocols=[JoinGroupRequest.Protocol(name="range", metadata=subscription())],
    )
    r = await c.request(replacing, 7)
    assert r.error_code == 0 and r.member_id not in ("", "b")
    assert r.generation_id == j.generation_id  # the group epoch, now the generation
    assert await group_type(c) == ("classic", "Stable")
    s = SyncGroupRequest(
        group_id="g",
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id="i1",
        protocol_type="consumer",
        protocol_name="range",
        assignments=[],
    )
    synced = await c.request(s, 5)
    assert synced.error_code == 0
    assert partitions_in(synced.assignment) == sorted(held[topic_id])
    beat = HeartbeatRequest(group_id="g", generation_id=j.generation_id, member_id=a)
    assert (await c.request(beat, 4)).error_code == 0
    (dg,) = (await c.request(DescribeGroupsRequest(groups=["g"]), 5)).groups
    assert sorted(m.member_id for m in dg.members) == sorted([a, r.member_id])
    await c.aclose()
