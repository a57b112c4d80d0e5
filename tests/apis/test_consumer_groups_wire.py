"""KIP-848's consumer group protocol at the wire, through a real broker in the test's loop:
ConsumerGroupHeartbeat (member ids, epochs, revocation before reassignment, leaving,
errors), ConsumerGroupDescribe, offsets with member epochs, ListGroups' group type, and
the two protocols side by side with the online migration off."""

from __future__ import annotations

import uuid
from typing import Any

import trio

from trio_broker.protocol.errors import ErrorCode as E
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.group_heartbeats import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    HeartbeatTopicPartitions,
)
from trio_broker.protocol.messages.group_offsets import OffsetCommitRequest, OffsetFetchRequest
from trio_broker.protocol.messages.groups import DescribeGroupsRequest, ListGroupsRequest

from .test_groups_wire import client_of, join_req, make_topic

FAST = {
    "num.partitions": "4",
    "group.consumer.min.session.timeout.ms": "500",
    "group.consumer.session.timeout.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "200",
}


def hb(group: str, member: str, epoch: int, **kw: Any) -> ConsumerGroupHeartbeatRequest:
    base: dict[str, Any] = dict(group_id=group, member_id=member, member_epoch=epoch)
    if epoch == 0:
        base |= dict(rebalance_timeout_ms=30_000, topic_partitions=[])
    base.update(kw)
    return ConsumerGroupHeartbeatRequest(**base)


def owned(resp: Any) -> dict[uuid.UUID, list[int]]:
    assert resp.assignment is not None
    return {t.topic_id: sorted(t.partitions) for t in resp.assignment.topic_partitions}


def as_owned(parts: dict[uuid.UUID, list[int]]) -> list[HeartbeatTopicPartitions]:
    return [HeartbeatTopicPartitions(topic_id=t, partitions=ps) for t, ps in parts.items()]


async def test_advertised(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await client_of(broker)
    got = {
        k.api_key: (k.min_version, k.max_version)
        for k in (await c.request(ApiVersionsRequest(), 3)).api_keys
    }
    assert got[68] == (0, 1)
    assert got[69] == (0, 1)


async def test_member_ids_v0_by_the_server_v1_by_the_client(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-ids")
    r0 = await c.request(hb("g0", "", 0, subscribed_topic_names=["cg-ids"]), 0)
    assert r0.error_code == 0 and r0.member_id and len(r0.member_id) == 22
    assert r0.member_epoch == 1 and r0.heartbeat_interval_ms == 200
    r1 = await c.request(hb("g1", "", 0, subscribed_topic_names=["cg-ids"]), 1)
    assert (r1.error_code, r1.error_message) == (E.INVALID_REQUEST, "MemberId can't be empty.")
    r2 = await c.request(hb("g1", "mine", 0, subscribed_topic_names=["cg-ids"]), 1)
    assert (r2.error_code, r2.member_id, r2.member_epoch) == (0, "mine", 1)


async def test_partitions_are_revoked_before_they_move(run_broker) -> None:  # type: ignore[no-untyped-def]
    """CurrentAssignmentBuilder: the second member gets nothing the first still owns; the
    first is asked to revoke (UNREVOKED_PARTITIONS, epoch kept); once its heartbeat owns
    only what it keeps, it moves to the new epoch and the second gets the rest."""
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-move")  # auto-created: num.partitions (4)
    topic = broker.topic("cg-move")
    n = len(topic.partitions)
    assert n == 4
    a = await c.request(hb("g", "a", 0, subscribed_topic_names=["cg-move"]), 1)
    assert owned(a) == {topic.topic_id: list(range(n))} and a.member_epoch == 1
    b = await c.request(hb("g", "b", 0, subscribed_topic_names=["cg-move"]), 1)
    assert b.member_epoch == 2 and owned(b) == {}  # all still owned by a
    a2 = await c.request(hb("g", "a", 1, topic_partitions=as_owned(owned(a))), 1)
    assert a2.member_epoch == 1  # not bumped until it revokes
    keep = owned(a2)[topic.topic_id]
    assert 0 < len(keep) < n
    b2 = await c.request(hb("g", "b", 2, topic_partitions=[]), 1)
    assert b2.assignment is None and b2.member_epoch == 2  # still waits
    a3 = await c.request(hb("g", "a", 1, topic_partitions=as_owned({topic.topic_id: keep})), 1)
    assert a3.member_epoch == 2
    b3 = await c.request(hb("g", "b", 2, topic_partitions=[]), 1)
    moved = owned(b3)[topic.topic_id]
    assert sorted(keep + moved) == list(range(n)) and not set(keep) & set(moved)

    d = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g", "nope"]), 1)).groups
    assert (d[0].error_code, d[0].group_state, d[0].group_epoch, d[0].assignment_epoch) == (
        0,
        "Stable",
        2,
        2,
    )
    assert d[0].assignor_name == "uniform"
    members = {m.member_id: m for m in d[0].members}
    assert members["b"].assignment.topic_partitions[0].topic_name == "cg-move"
    assert sorted(members["b"].assignment.topic_partitions[0].partitions) == moved
    assert members["b"].member_type == 1
    assert d[1].error_code == E.GROUP_ID_NOT_FOUND

    # leaving: epoch -1; the other gets everything back on its next heartbeats
    left = await c.request(hb("g", "b", -1), 1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    a4 = await c.request(hb("g", "a", 2, topic_partitions=as_owned({topic.topic_id: keep})), 1)
    assert owned(a4) == {topic.topic_id: list(range(n))} and a4.member_epoch == 3


async def test_epochs_and_unknown_members_are_fenced(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-fence")
    a = await c.request(hb("g", "a", 0, subscribed_topic_names=["cg-fence"]), 1)
    assert a.member_epoch == 1
    ahead = await c.request(hb("g", "a", 5), 1)
    assert ahead.error_code == E.FENCED_MEMBER_EPOCH
    unknown = await c.request(hb("g", "zz", 1), 1)
    assert unknown.error_code == E.UNKNOWN_MEMBER_ID
    no_group = await c.request(hb("other", "a", 3), 1)
    assert no_group.error_code == E.UNKNOWN_MEMBER_ID
    bad = await c.request(
        hb("g", "c", 0, subscribed_topic_names=["cg-fence"], server_assignor="x"), 1
    )
    assert bad.error_code == E.UNSUPPORTED_ASSIGNOR
    regex = await c.request(
        hb("g", "c", 0, subscribed_topic_regex="cg-(", subscribed_topic_names=None), 1
    )
    assert regex.error_code == E.INVALID_REGULAR_EXPRESSION


async def test_offsets_with_member_epochs(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-offsets")
    a = await c.request(hb("g", "a", 0, subscribed_topic_names=["cg-offsets"]), 1)
    T, P = OffsetCommitRequest.Topic, OffsetCommitRequest.Topic.Partition

    def commit(member: str, epoch: int) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=epoch,
            member_id=member,
            topics=[T(name="cg-offsets", partitions=[P(partition_index=0, committed_offset=7)])],
        )

    def code(resp: Any) -> int:
        return int(resp.topics[0].partitions[0].error_code)

    assert code(await c.request(commit("a", a.member_epoch + 1), 9)) == E.STALE_MEMBER_EPOCH
    assert code(await c.request(commit("x", a.member_epoch), 9)) == E.UNKNOWN_MEMBER_ID
    assert code(await c.request(commit("a", a.member_epoch), 9)) == E.NONE

    G = OffsetFetchRequest.Group

    def fetch(member: str | None, epoch: int) -> OffsetFetchRequest:
        topics = [G.Topics(name="cg-offsets", partition_indexes=[0])]
        return OffsetFetchRequest(
            groups=[G(group_id="g", member_id=member, member_epoch=epoch, topics=topics)]
        )

    stale = (await c.request(fetch("a", 99), 9)).groups[0]
    assert stale.error_code == E.STALE_MEMBER_EPOCH
    mine = (await c.request(fetch("a", a.member_epoch), 9)).groups[0]
    assert mine.error_code == 0 and mine.topics[0].partitions[0].committed_offset == 7
    admin = (await c.request(fetch(None, -1), 9)).groups[0]
    assert admin.topics[0].partitions[0].committed_offset == 7


async def test_session_timeout_expires_a_member(run_broker) -> None:  # type: ignore[no-untyped-def]
    """a stops heartbeating, b goes on (every heartbeat interval, as a client does): a is
    removed once group.consumer.session.timeout.ms (1000 ms) has passed, not before; b
    stays, and a's next heartbeat is UNKNOWN_MEMBER_ID."""
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-expire")
    await c.request(hb("g", "a", 0, subscribed_topic_names=["cg-expire"]), 1)
    a_last = trio.current_time()
    b = await c.request(hb("g", "b", 0, subscribed_topic_names=["cg-expire"]), 1)
    groups = broker.group_coordinator.consumer.groups
    with trio.fail_after(10):
        while "a" in groups["g"].members:
            await trio.sleep(b.heartbeat_interval_ms / 1000)
            b = await c.request(hb("g", "b", b.member_epoch, topic_partitions=[]), 1)
            assert b.error_code == 0
    assert trio.current_time() - a_last >= 1.0
    assert set(groups["g"].members) == {"b"}
    again = await c.request(hb("g", "a", 1), 1)
    assert again.error_code == E.UNKNOWN_MEMBER_ID


async def test_classic_and_consumer_groups_side_by_side(run_broker) -> None:  # type: ignore[no-untyped-def]
    """With the online migration off (test_group_migration_wire.py has it on), a consumer
    heartbeat to a classic group with members is GROUP_ID_NOT_FOUND; a classic JoinGroup
    to a consumer group whose metadata is no consumer protocol subscription is
    INCONSISTENT_GROUP_PROTOCOL."""
    broker = await run_broker(
        {
            **FAST,
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.migration.policy": "disabled",
        }
    )
    c = await client_of(broker)
    await make_topic(c, "cg-side")
    await c.request(hb("new", "a", 0, subscribed_topic_names=["cg-side"]), 1)
    classic = await c.request(join_req("old", member="", protocol_type="consumer"), 3)
    assert classic.error_code == 0
    wrong = await c.request(join_req("new", member="", protocol_type="consumer"), 3)
    assert wrong.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    not_consumer = await c.request(hb("old", "z", 0, subscribed_topic_names=["cg-side"]), 1)
    assert not_consumer.error_code == E.GROUP_ID_NOT_FOUND
    listed = (await c.request(ListGroupsRequest(), 5)).groups
    types = {g.group_id: (g.group_type, g.protocol_type, g.group_state) for g in listed}
    assert types["new"] == ("consumer", "consumer", "Stable")
    assert types["old"][0] == "classic"
    only = (await c.request(ListGroupsRequest(types_filter=["consumer"]), 5)).groups
    assert [g.group_id for g in only] == ["new"]
    described = (await c.request(DescribeGroupsRequest(groups=["new"]), 6)).groups[0]
    assert described.error_code == E.GROUP_ID_NOT_FOUND  # not a classic group, as Kafka


async def test_refused_when_the_protocol_is_off(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"group.coordinator.rebalance.protocols": "classic"})
    c = await client_of(broker)
    r = await c.request(hb("g", "a", 0, subscribed_topic_names=["t"]), 1)
    assert r.error_code == E.UNSUPPORTED_VERSION


async def test_regex_subscription_follows_new_topics(run_broker) -> None:  # type: ignore[no-untyped-def]
    """SubscribedTopicRegex (v1), matched with Python's re against whole names. As in
    Kafka, which resolves a new regex in the background, the heartbeat that brings it
    gets the literal topics only, and the topics it matches come with a later one (the
    group epoch bumped); topics created later that match join the subscription too."""
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "re-one")
    await make_topic(c, "lit")
    await make_topic(c, "other")
    a = await c.request(
        hb("g", "a", 0, subscribed_topic_names=["lit"], subscribed_topic_regex="re-.*"), 1
    )
    one, lit = broker.topic("re-one").topic_id, broker.topic("lit").topic_id
    assert owned(a) == {lit: [0, 1, 2, 3]} and a.member_epoch == 1
    a1 = await c.request(hb("g", "a", 1, topic_partitions=as_owned(owned(a))), 1)
    assert a1.member_epoch == 2 and owned(a1) == {lit: [0, 1, 2, 3], one: [0, 1, 2, 3]}
    await make_topic(c, "re-two")
    a2 = await c.request(hb("g", "a", 2, topic_partitions=as_owned(owned(a1))), 1)
    two = broker.topic("re-two").topic_id
    assert a2.member_epoch == 3 and set(owned(a2)) == {lit, one, two}
    d = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 0)).groups[0]
    assert d.members[0].subscribed_topic_regex == "re-.*"
    # once no member uses it, the regex is new again: literal topics first
    assert (await c.request(hb("g", "a", -1), 1)).error_code == 0
    b = await c.request(
        hb("g", "b", 0, subscribed_topic_names=["lit"], subscribed_topic_regex="re-.*"), 1
    )
    assert set(owned(b)) == {lit}


async def test_a_static_member_away_keeps_its_partitions(run_broker) -> None:  # type: ignore[no-untyped-def]
    """Epoch -2: a static member leaves for a while; back under a new member id with the
    same instance id, it gets its partitions again; another instance with that id while
    it is still in is UNRELEASED_INSTANCE_ID."""
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-static")
    a = await c.request(hb("g", "a", 0, subscribed_topic_names=["cg-static"], instance_id="i-1"), 1)
    held = owned(a)
    clash = await c.request(
        hb("g", "x", 0, subscribed_topic_names=["cg-static"], instance_id="i-1"), 1
    )
    assert clash.error_code == E.UNRELEASED_INSTANCE_ID
    away = await c.request(hb("g", "a", -2, instance_id="i-1"), 1)
    assert (away.error_code, away.member_epoch) == (0, -2)
    back = await c.request(
        hb("g", "a2", 0, subscribed_topic_names=["cg-static"], instance_id="i-1"), 1
    )
    assert back.error_code == 0 and owned(back) == held
    assert back.member_epoch == a.member_epoch  # no rebalance for the return


async def test_an_empty_group_goes_with_its_last_offsets(run_broker) -> None:  # type: ignore[no-untyped-def]
    """A consumer group whose members all left is Empty; the retention check removes it
    once it has no committed offsets either (as Kafka removes an empty group)."""
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "cg-empty")
    for group in ("bare", "kept"):
        await c.request(hb(group, "a", 0, subscribed_topic_names=["cg-empty"]), 1)
    T, P = OffsetCommitRequest.Topic, OffsetCommitRequest.Topic.Partition
    commit = OffsetCommitRequest(
        group_id="kept",
        generation_id_or_member_epoch=1,
        member_id="a",
        topics=[T(name="cg-empty", partitions=[P(partition_index=0, committed_offset=3)])],
    )
    assert (await c.request(commit, 9)).topics[0].partitions[0].error_code == 0
    for group in ("bare", "kept"):
        assert (await c.request(hb(group, "a", -1), 1)).error_code == 0
    listed = {g.group_id: g.group_state for g in (await c.request(ListGroupsRequest(), 5)).groups}
    assert listed["bare"] == listed["kept"] == "Empty"
    broker.group_coordinator._on_retention_check()
    assert set(broker.group_coordinator.consumer.groups) == {"kept"}
