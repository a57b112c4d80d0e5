"""The group APIs at the wire, every version, through a real broker in the test's loop."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import trio

from trio_broker.protocol.errors import ErrorCode as E
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.group_offsets import (
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from trio_broker.protocol.messages.groups import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    SyncGroupRequest,
)
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.topics import CreatePartitionsRequest, DeleteTopicsRequest

from ..support.wire import AsyncWireClient

FAST = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "100"}
GROUP_APIS = {8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5)}
GROUP_APIS |= {15: (0, 6), 16: (0, 5), 42: (0, 2), 47: (0, 0)}
# AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit: (min, max) served
TRANSACTION_APIS = {24: (0, 5), 25: (0, 4), 26: (0, 5), 28: (0, 5)}


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


async def client_of(broker, client_id: str = "wire-test") -> AsyncWireClient:  # type: ignore[no-untyped-def]
    return await AsyncWireClient.connect(address(broker), client_id=client_id)


async def make_topic(client: AsyncWireClient, name: str) -> None:
    req = MetadataRequest(topics=[MetadataRequest.Topic(name=name)], allow_auto_topic_creation=True)
    (t,) = (await client.request(req, 9)).topics
    assert t.error_code == 0


def join_req(
    group: str, member: str = "", instance: str | None = None, **kw: Any
) -> JoinGroupRequest:
    base: dict[str, Any] = dict(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"md-" + member.encode()[:4])],
    )
    base.update(kw)
    return JoinGroupRequest(**base)


async def join(client: AsyncWireClient, group: str, version: int, **kw: Any) -> Any:
    r = await client.request(join_req(group, **kw), version)
    if r.error_code == E.MEMBER_ID_REQUIRED:
        assert version >= 4 and r.member_id
        r = await client.request(join_req(group, member=r.member_id, **kw), version)
    return r


async def test_api_versions_advertise_the_group_and_transaction_apis(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await client_of(broker)
    got = {
        k.api_key: (k.min_version, k.max_version)
        for k in (await c.request(ApiVersionsRequest(), 3)).api_keys
    }
    assert {k: got.get(k) for k in GROUP_APIS} == GROUP_APIS
    assert {k: got.get(k) for k in TRANSACTION_APIS} == TRANSACTION_APIS


@pytest.mark.parametrize("version", range(7))
async def test_find_coordinator_every_version(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await client_of(broker)
    host, port = broker.bound_listeners()["PLAINTEXT"]
    if version < 4:
        r = await c.request(FindCoordinatorRequest(key="g", key_type=0), version)
        assert (r.error_code, r.node_id, r.host, r.port) == (0, 0, host, port)
        if version >= 1:
            # a transactional id's coordinator: this broker, on its own
            t = await c.request(FindCoordinatorRequest(key="tx", key_type=1), version)
            assert (t.error_code, t.node_id, t.host, t.port) == (0, 0, host, port)
            bad = await c.request(FindCoordinatorRequest(key="x", key_type=7), version)
            assert bad.error_code == E.INVALID_REQUEST
        return
    r = await c.request(
        FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b", ""]), version
    )
    assert [(x.key, x.error_code, x.node_id, x.host, x.port) for x in r.coordinators] == [
        (k, 0, 0, host, port) for k in ("a", "b", "")
    ]
    t = await c.request(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]), version)
    assert [(x.error_code, x.node_id, x.port) for x in t.coordinators] == [(0, 0, port)]
    # A share-group key (KIP-932) exists from v6; share groups are not served.
    s = await c.request(FindCoordinatorRequest(key_type=2, coordinator_keys=["g:t:0"]), version)
    share_error = E.COORDINATOR_NOT_AVAILABLE if version >= 6 else E.INVALID_REQUEST
    assert [(x.error_code, x.node_id) for x in s.coordinators] == [(share_error, -1)]


async def test_offsets_v9_for_classic_groups(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "t")

    def commit(group: str, generation: int) -> OffsetCommitRequest:
        part = OffsetCommitRequest.Topic.Partition(partition_index=0, committed_offset=7)
        return OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            topics=[OffsetCommitRequest.Topic(name="t", partitions=[part])],
        )

    def code(r: Any) -> int:
        return int(r.topics[0].partitions[0].error_code)

    # A generation for a group that does not exist: v9 says so, v8 keeps Kafka's old answer.
    assert code(await c.request(commit("gone", 3), 9)) == E.GROUP_ID_NOT_FOUND
    assert code(await c.request(commit("gone", 3), 8)) == E.ILLEGAL_GENERATION
    assert code(await c.request(commit("simple", -1), 9)) == E.NONE
    # OffsetFetch v9 carries a member id and epoch, which classic groups do not check.
    fetch = OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.Group(group_id="simple", member_id="m", member_epoch=5, topics=None)
        ]
    )
    (g,) = (await c.request(fetch, 9)).groups
    assert g.error_code == 0
    assert [(t.name, p.committed_offset) for t in g.topics for p in t.partitions] == [("t", 7)]


async def test_offsets_v10_name_topics_by_id(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "t")
    topic_id = broker.topic("t").topic_id
    nobody = uuid.UUID(int=12345)

    def commit(*ids: uuid.UUID) -> OffsetCommitRequest:
        T = OffsetCommitRequest.Topic
        return OffsetCommitRequest(
            group_id="ids",
            generation_id_or_member_epoch=-1,
            topics=[
                T(topic_id=i, partitions=[T.Partition(partition_index=0, committed_offset=5)])
                for i in ids
            ],
        )

    committed = await c.request(commit(topic_id, nobody), 10)
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in committed.topics] == [
        (topic_id, [E.NONE]),
        (nobody, [E.UNKNOWN_TOPIC_ID]),
    ]
    G = OffsetFetchRequest.Group

    async def fetch(topics: list[G.Topics] | None) -> list[tuple[Any, ...]]:
        (g,) = (
            await c.request(OffsetFetchRequest(groups=[G(group_id="ids", topics=topics)]), 10)
        ).groups
        assert g.error_code == 0
        return [
            (t.topic_id, p.partition_index, p.committed_offset, p.error_code)
            for t in g.topics
            for p in t.partitions
        ]

    assert await fetch(None) == [(topic_id, 0, 5, E.NONE)]  # every offset, by topic id
    asked = [
        G.Topics(topic_id=topic_id, partition_indexes=[0]),
        G.Topics(topic_id=nobody, partition_indexes=[3]),
    ]
    assert await fetch(asked) == [(topic_id, 0, 5, E.NONE), (nobody, 3, -1, E.UNKNOWN_TOPIC_ID)]
    # the same offset, by name, at v9
    (g,) = (
        await c.request(
            OffsetFetchRequest(
                groups=[G(group_id="ids", topics=[G.Topics(name="t", partition_indexes=[0])])]
            ),
            9,
        )
    ).groups
    assert [(t.name, p.committed_offset) for t in g.topics for p in t.partitions] == [("t", 5)]


@pytest.mark.parametrize("version", range(10))
async def test_one_member_through_every_version(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    """JoinGroup v0-9 with SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch
    each at the version a client of that generation would use."""
    broker = await run_broker(FAST)
    c = await client_of(broker, client_id=f"client-v{version}")
    await make_topic(c, "t")
    sync_v, hb_v, leave_v = min(version, 5), min(version, 4), min(version, 5)
    commit_v, fetch_v = max(2, min(version, 8)), max(1, min(version, 8))
    instance = "static-1" if version >= 5 else None

    j = await join(c, "g", version, instance=instance)
    assert j.error_code == 0 and j.generation_id == 1 and j.leader == j.member_id
    assert j.member_id.startswith("static-1-" if instance else f"client-v{version}-")
    assert j.protocol_name == "range" and [m.member_id for m in j.members] == [j.member_id]
    if version >= 7:
        assert j.protocol_type == "consumer"
    if version >= 5:
        assert j.members[0].group_instance_id == instance

    s = await c.request(
        SyncGroupRequest(
            group_id="g",
            generation_id=1,
            member_id=j.member_id,
            group_instance_id=instance,
            protocol_type="consumer",
            protocol_name="range",
            assignments=[SyncGroupRequest.Assignment(member_id=j.member_id, assignment=b"mine")],
        ),
        sync_v,
    )
    assert (s.error_code, s.assignment) == (0, b"mine")
    if sync_v >= 5:
        assert (s.protocol_type, s.protocol_name) == ("consumer", "range")

    hb = HeartbeatRequest(
        group_id="g", generation_id=1, member_id=j.member_id, group_instance_id=instance
    )
    assert (await c.request(hb, hb_v)).error_code == 0

    commit = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=1,
        member_id=j.member_id,
        group_instance_id=instance,
        topics=[
            OffsetCommitRequest.Topic(
                name="t",
                partitions=[
                    OffsetCommitRequest.Topic.Partition(
                        partition_index=0,
                        committed_offset=17,
                        committed_leader_epoch=0,
                        committed_metadata="m",
                    ),
                    OffsetCommitRequest.Topic.Partition(partition_index=9, committed_offset=1),
                ],
            )
        ],
    )
    cr = await c.request(commit, commit_v)
    assert [(p.partition_index, p.error_code) for p in cr.topics[0].partitions] == [
        (0, 0),
        (9, E.UNKNOWN_TOPIC_OR_PARTITION),
    ]

    if fetch_v >= 8:
        fr = await c.request(
            OffsetFetchRequest(
                groups=[
                    OffsetFetchRequest.Group(
                        group_id="g",
                        topics=[
                            OffsetFetchRequest.Group.Topics(name="t", partition_indexes=[0, 1])
                        ],
                    )
                ]
            ),
            fetch_v,
        )
        parts = fr.groups[0].topics[0].partitions
    else:
        fr = await c.request(
            OffsetFetchRequest(
                group_id="g", topics=[OffsetFetchRequest.Topic(name="t", partition_indexes=[0, 1])]
            ),
            fetch_v,
        )
        parts = fr.topics[0].partitions
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in parts] == [
        (0, 17, "m", 0),
        (1, -1, "", 0),
    ]
    if fetch_v >= 5:
        assert parts[0].committed_leader_epoch == (0 if commit_v >= 6 else -1)

    if leave_v >= 3:
        leave = LeaveGroupRequest(
            group_id="g",
            members=[
                LeaveGroupRequest.MemberIdentity(
                    member_id=j.member_id, group_instance_id=instance, reason="bye"
                )
            ],
        )
        lr = await c.request(leave, leave_v)
        assert lr.error_code == 0 and [(m.member_id, m.error_code) for m in lr.members] == [
            (j.member_id, 0)
        ]
    else:
        lr = await c.request(LeaveGroupRequest(group_id="g", member_id=j.member_id), leave_v)
        assert lr.error_code == 0
        again = await c.request(LeaveGroupRequest(group_id="g", member_id=j.member_id), leave_v)
        assert again.error_code == E.UNKNOWN_MEMBER_ID  # its member's error, for v0-v2
    assert (await c.request(hb, hb_v)).error_code == E.UNKNOWN_MEMBER_ID


async def test_two_members_rebalance_over_the_wire(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({**FAST, "group.initial.rebalance.delay.ms": "300"})
    a, b = await client_of(broker, "a"), await client_of(broker, "b")
    results: dict[str, Any] = {}

    async def joiner(name: str, c: AsyncWireClient) -> None:
        results[name] = await join(c, "g", 9)

    async with trio.open_nursery() as n:
        n.start_soon(joiner, "a", a)
        n.start_soon(joiner, "b", b)
    ja, jb = results["a"], results["b"]
    assert ja.generation_id == jb.generation_id == 1
    leader, follower = (ja, jb) if ja.leader == ja.member_id else (jb, ja)
    lc, fc = (a, b) if leader is ja else (b, a)
    assert len(leader.members) == 2 and follower.members == []

    def sync(r: Any, assignments: list[Any]) -> SyncGroupRequest:
        return SyncGroupRequest(
            group_id="g",
            generation_id=1,
            member_id=r.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        )

    got: dict[str, Any] = {}

    async def follower_sync() -> None:
        got["f"] = await fc.request(sync(follower, []), 5)

    async with trio.open_nursery() as n:
        n.start_soon(follower_sync)
        await trio.sleep(0.2)
        assert "f" not in got  # parked until the leader assigns
        assignments = [
            SyncGroupRequest.Assignment(member_id=leader.member_id, assignment=b"L"),
            SyncGroupRequest.Assignment(member_id=follower.member_id, assignment=b"F"),
        ]
        assert (await lc.request(sync(leader, assignments), 5)).assignment == b"L"
    assert got["f"].assignment == b"F"
    assert broker.purgatories["rebalance"].size == 0

    d = await a.request(
        DescribeGroupsRequest(groups=["g", "nope"], include_authorized_operations=True), 5
    )
    g, nope = d.groups
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (
        0,
        "Stable",
        "consumer",
        "range",
    )
    assert sorted((m.client_id, m.client_host, m.member_assignment) for m in g.members) == [
        ("a", "/127.0.0.1", b"L" if leader is ja else b"F"),
        ("b", "/127.0.0.1", b"F" if leader is ja else b"L"),
    ]
    assert g.authorized_operations != -(2**31)
    assert (nope.error_code, nope.group_state) == (0, "Dead")
    # v6 (KIP-1043): a group that does not exist is GROUP_ID_NOT_FOUND, with a message
    g6, nope6 = (await a.request(DescribeGroupsRequest(groups=["g", "nope"]), 6)).groups
    assert (g6.error_code, g6.error_message, g6.group_state) == (0, None, "Stable")
    assert len(g6.members) == 2
    assert (nope6.error_code, nope6.error_message, nope6.group_state, nope6.members) == (
        E.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
        "",
        [],
    )


async def test_list_delete_and_offset_delete(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "t")
    j = await join(c, "active", 9)
    await c.request(
        SyncGroupRequest(
            group_id="active",
            generation_id=1,
            member_id=j.member_id,
            protocol_type="consumer",
            protocol_name="range",
        ),
        5,
    )
    commit = OffsetCommitRequest(
        group_id="idle",
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequest.Topic(
                name="t",
                partitions=[
                    OffsetCommitRequest.Topic.Partition(partition_index=0, committed_offset=3)
                ],
            )
        ],
    )
    assert (await c.request(commit, 8)).topics[0].partitions[0].error_code == 0

    for version in range(6):
        lg = await c.request(ListGroupsRequest(), version)
        assert sorted(g.group_id for g in lg.groups) == ["active", "idle"]
    only = await c.request(ListGroupsRequest(states_filter=["Empty"]), 4)
    assert [(g.group_id, g.group_state) for g in only.groups] == [("idle", "Empty")]
    # v5: every group here is a classic one; a filter on another type lists none.
    classic = await c.request(ListGroupsRequest(types_filter=["Classic"]), 5)
    assert sorted((g.group_id, g.group_type) for g in classic.groups) == [
        ("active", "classic"),
        ("idle", "classic"),
    ]
    assert (await c.request(ListGroupsRequest(types_filter=["consumer"]), 5)).groups == []

    od = await c.request(
        OffsetDeleteRequest(
            group_id="idle",
            topics=[
                OffsetDeleteRequest.Topic(
                    name="t",
                    partitions=[
                        OffsetDeleteRequest.Topic.Partition(partition_index=0),
                        OffsetDeleteRequest.Topic.Partition(partition_index=5),
                    ],
                )
            ],
        ),
        0,
    )
    assert od.error_code == 0
    assert [(p.partition_index, p.error_code) for p in od.topics[0].partitions] == [
        (0, 0),
        (5, E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    fetch_all = await c.request(OffsetFetchRequest(group_id="idle", topics=None), 7)
    assert fetch_all.error_code == 0 and fetch_all.topics == []

    for version in range(3):
        dg = await c.request(
            DeleteGroupsRequest(groups_names=["active", "idle", "missing"]), version
        )
        codes = {r.group_id: r.error_code for r in dg.results}
        if version == 0:
            assert codes == {
                "active": E.NON_EMPTY_GROUP,
                "idle": 0,
                "missing": E.GROUP_ID_NOT_FOUND,
            }
        else:
            assert codes["idle"] == E.GROUP_ID_NOT_FOUND


async def test_offset_fetch_of_several_groups_and_of_everything(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    await make_topic(c, "t")
    await make_topic(c, "u")
    for group, offset in (("g1", 1), ("g2", 2)):
        commit = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            topics=[
                OffsetCommitRequest.Topic(
                    name=name,
                    partitions=[
                        OffsetCommitRequest.Topic.Partition(
                            partition_index=0, committed_offset=offset
                        )
                    ],
                )
                for name in ("u", "t")
            ],
        )
        await c.request(commit, 8)
    r = await c.request(
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequest.Group(group_id="g1", topics=None),
                OffsetFetchRequest.Group(
                    group_id="g2",
                    topics=[OffsetFetchRequest.Group.Topics(name="t", partition_indexes=[0])],
                ),
            ]
        ),
        8,
    )
    assert [
        (g.group_id, [(t.name, [p.committed_offset for p in t.partitions]) for t in g.topics])
        for g in r.groups
    ] == [
        ("g1", [("t", [1]), ("u", [1])]),
        ("g2", [("t", [2])]),
    ]
    everything = await c.request(OffsetFetchRequest(group_id="g2", topics=None), 2)
    assert [t.name for t in everything.topics] == ["t", "u"]


async def test_a_parked_join_is_answered_at_shutdown(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({**FAST, "group.initial.rebalance.delay.ms": "60000"})
    c = await client_of(broker)
    first = await c.request(join_req("g"), 9)
    await c.send(join_req("g", member=first.member_id), 9)
    await trio.sleep(0.1)
    assert broker.purgatories["rebalance"].size == 1
    broker.shutdown()
    _, response = await c.receive()
    assert response.error_code == E.NOT_COORDINATOR


async def test_the_offsets_topic_is_internal_and_kept(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"offsets.topic.num.partitions": "2"})
    c = await client_of(broker)
    md = await c.request(MetadataRequest(topics=None), 12)
    (t,) = [t for t in md.topics if t.name == "__consumer_offsets"]
    assert t.is_internal and len(t.partitions) == 2
    d = await c.request(DeleteTopicsRequest(topic_names=["__consumer_offsets"], timeout_ms=1000), 5)
    assert d.responses[0].error_code == E.INVALID_TOPIC_EXCEPTION
    p = await c.request(
        CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.Topic(name="__consumer_offsets", count=5, assignments=None)
            ],
            timeout_ms=1000,
        ),
        3,
    )
    assert p.results[0].error_code == E.INVALID_TOPIC_EXCEPTION


async def test_deleting_a_topic_deletes_its_committed_offsets(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(FAST)
    c = await client_of(broker)
    for name in ("gone", "kept"):
        await make_topic(c, name)
    commit = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=-1,
        topics=[
            OffsetCommitRequest.Topic(
                name=name,
                partitions=[
                    OffsetCommitRequest.Topic.Partition(partition_index=0, committed_offset=4)
                ],
            )
            for name in ("gone", "kept")
        ],
    )
    await c.request(commit, 8)
    d = await c.request(DeleteTopicsRequest(topic_names=["gone"], timeout_ms=1000), 5)
    assert d.responses[0].error_code == 0
    everything = await c.request(OffsetFetchRequest(group_id="g", topics=None), 7)
    assert [t.name for t in everything.topics] == ["kept"]
