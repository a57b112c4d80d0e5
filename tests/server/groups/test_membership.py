"""The rebalance protocol on trio's mock clock: joins, the join and sync phases, sessions,
static members, protocol votes and the group size limit, as Kafka's coordinator does them."""

from __future__ import annotations

import pytest
import trio

from trio_broker.apis.group_services import JoinResult, MemberIdentity, Pending
from trio_broker.protocol.errors import ErrorCode
from trio_broker.server.groups import GroupState

from .harness import start


async def test_a_first_join_gets_member_id_required_then_waits_the_initial_delay(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a = h.member("app")
    first = h.coordinator.join_group(a.params())
    assert isinstance(first, JoinResult)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("app-") and first.generation_id == -1
    assert h.groups["g"].state is GroupState.EMPTY  # pending members do not start a rebalance
    a.member_id = first.member_id
    parked = h.coordinator.join_group(a.params())
    assert isinstance(parked, Pending) and not parked.done
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE
    r = await a.joined(parked)
    assert trio.current_time() == 3.0  # group.initial.rebalance.delay.ms, no earlier
    assert (r.error_code, r.generation_id, r.leader, r.protocol_name) == (
        0,
        1,
        a.member_id,
        "range",
    )
    assert [(m.member_id, m.metadata) for m in r.members] == [(a.member_id, b"meta")]
    assert h.groups["g"].state is GroupState.COMPLETING_REBALANCE


async def test_before_v4_a_new_member_is_added_at_once(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    a = h.member("old-client")
    r = await a.joined(a.join(require_known_member_id=False))
    assert r.error_code == 0 and r.generation_id == 1 and r.member_id.startswith("old-client-")


async def test_a_pending_member_that_never_comes_back_is_forgotten(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a = h.member("app", session_ms=6000)
    first = h.coordinator.join_group(a.params())
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED  # type: ignore[union-attr]
    assert "g" in h.groups
    await trio.sleep(6.001)
    assert "g" not in h.groups  # nothing was ever stored for it
    a.member_id = first.member_id  # type: ignore[union-attr]
    late = h.coordinator.join_group(a.params())
    assert late.error_code == ErrorCode.UNKNOWN_MEMBER_ID  # type: ignore[union-attr]


async def test_newcomers_extend_the_initial_delay_within_the_rebalance_timeout(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=3000)
    a, b, c = h.member("a", rebalance_ms=7000), h.member("b", rebalance_ms=7000), h.member("c")
    pa = a.join()
    await trio.sleep(2.9)
    pb = b.join()
    await trio.sleep(2.9)  # t=5.8: the first extension (to 6.0) runs
    pc = c.join()  # c's rebalance timeout is 30 s now: the budget was fixed at 7 - 3 = 4 s
    ra = await a.joined(pa)
    assert trio.current_time() == 7.0  # 3 + 3 + the remaining 1 s, not 9
    rb, rc = await b.joined(pb), await c.joined(pc)
    assert ra.generation_id == rb.generation_id == rc.generation_id == 1
    assert ra.leader == a.member_id and {m.member_id for m in ra.members} == {
        a.member_id,
        b.member_id,
        c.member_id,
    }
    assert rb.members == [] and rc.members == []  # only the leader gets the members


async def test_a_rebalance_ends_as_soon_as_everyone_rejoined(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a"), h.member("b")
    await h.stable_group(a, b)
    t0 = trio.current_time()
    c = h.member("c")
    pc = c.join()
    group = h.groups["g"]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert a.heartbeat() == b.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    pa, pb = a.join(), b.join()
    ra, rb, rc = await a.joined(pa), await b.joined(pb), await c.joined(pc)
    assert trio.current_time() == t0  # no timeout waited for
    assert ra.generation_id == rb.generation_id == rc.generation_id == 2
    assert ra.leader == a.member_id and len(ra.members) == 3


async def test_members_that_do_not_rejoin_are_dropped_at_the_rebalance_timeout(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a", rebalance_ms=20_000, session_ms=60_000), h.member("b", session_ms=60_000)
    await h.stable_group(a, b)
    t0 = trio.current_time()
    pa = a.join()  # the leader rejoins: a new rebalance
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE
    ra = await a.joined(pa)
    assert trio.current_time() - t0 == pytest.approx(30.0)  # the largest rebalance timeout
    assert ra.generation_id == 2 and [m.member_id for m in ra.members] == [a.member_id]
    assert b.heartbeat() == ErrorCode.UNKNOWN_MEMBER_ID


async def test_a_silent_member_is_removed_after_its_session_timeout(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a", session_ms=10_000), h.member("b", session_ms=10_000)
    await h.stable_group(a, b)  # sessions start when the assignment is given
    for _ in range(2):  # a heartbeats, b went away
        await trio.sleep(4)
        assert a.heartbeat() == ErrorCode.NONE
    await trio.sleep(2.001)  # 10 s since b's last sign of life
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert b.member_id not in h.groups["g"].members
    assert a.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    r = await a.joined(a.join())
    assert r.generation_id == 2 and [m.member_id for m in r.members] == [a.member_id]


async def test_a_member_that_never_syncs_is_removed_at_the_rebalance_timeout(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    a, b = h.member("a", rebalance_ms=5000), h.member("b", rebalance_ms=5000)
    pa, pb = a.join(), b.join()
    await a.joined(pa)
    await b.joined(pb)
    leader_sync = a.sync({a.member_id: b"x", b.member_id: b"y"})
    r = await a.synced(leader_sync)
    assert r.assignment == b"x" and h.groups["g"].state is GroupState.STABLE
    await trio.sleep(5.001)  # b never sent SyncGroup
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert b.member_id not in h.groups["g"].members


async def test_followers_wait_for_the_leaders_assignment(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    a, b = h.member("a"), h.member("b")
    pa, pb = a.join(), b.join()
    await a.joined(pa)
    await b.joined(pb)
    follower = b.sync()
    assert isinstance(follower, Pending)
    await trio.sleep(1)
    assert not follower.done
    a.sync({a.member_id: b"for-a", b.member_id: b"for-b"})
    r = await b.synced(follower)
    assert (r.error_code, r.assignment, r.protocol_type, r.protocol_name) == (
        0,
        b"for-b",
        "consumer",
        "range",
    )
    # the assignment is written before anyone hears it
    assert h.topic.records(h.coordinator.partition_for("g"))
    # once stable, a SyncGroup is answered at once with the same assignment
    assert b.sync() == r


async def test_a_leader_missing_a_member_gives_it_an_empty_assignment(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    a, b = h.member("a"), h.member("b")
    pa, pb = a.join(), b.join()
    await a.joined(pa)
    await b.joined(pb)
    pending = b.sync()
    a.sync({a.member_id: b"all"})
    assert (await b.synced(pending)).assignment == b""


async def test_a_new_join_during_sync_sends_followers_back_to_join(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    a, b = h.member("a"), h.member("b")
    pa, pb = a.join(), b.join()
    await a.joined(pa)
    await b.joined(pb)
    follower = b.sync()
    c = h.member("c")
    c.join()
    r = await h.result(follower)
    assert r.error_code == ErrorCode.REBALANCE_IN_PROGRESS and r.assignment == b""
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE


async def test_the_protocol_is_chosen_by_vote_among_those_all_support(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    members = [
        h.member("a", protocols=(("range", b"1"), ("sticky", b"2"), ("rr", b"3"))),
        h.member("b", protocols=(("sticky", b"4"), ("range", b"5"))),
        h.member("c", protocols=(("sticky", b"6"), ("rr", b"7"), ("range", b"8"))),
    ]
    outs = [m.join() for m in members]
    results = [await m.joined(o) for m, o in zip(members, outs, strict=True)]
    assert {r.protocol_name for r in results} == {"sticky"}  # 2 votes to 1; rr not common
    leader = results[0]
    assert [m.metadata for m in leader.members] == [b"2", b"4", b"6"]


async def test_a_member_sharing_no_protocol_is_refused(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, initial_rebalance_delay_ms=0)
    a = h.member("a")
    await a.joined(a.join())
    other = h.member("b", protocols=(("roundrobin", b""),))
    assert other.join().error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL  # type: ignore[union-attr]
    connect = h.member("k")
    out = h.coordinator.join_group(connect.params(protocol_type="connect"))
    assert out.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL  # type: ignore[union-attr]
    empty = h.coordinator.join_group(h.member("e", group="new").params(protocols=()))
    assert empty.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL  # type: ignore[union-attr]
    assert "new" not in h.groups


async def test_session_timeouts_outside_the_broker_bounds_are_invalid(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, min_session_timeout_ms=6000, max_session_timeout_ms=30_000)
    for session, expected in [
        (5999, ErrorCode.INVALID_SESSION_TIMEOUT),
        (30_001, ErrorCode.INVALID_SESSION_TIMEOUT),
        (6000, ErrorCode.MEMBER_ID_REQUIRED),
        (30_000, ErrorCode.MEMBER_ID_REQUIRED),
    ]:
        out = h.coordinator.join_group(h.member("a").params(session_timeout_ms=session))
        assert out.error_code == expected, session  # type: ignore[union-attr]


async def test_group_max_size(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery, max_group_size=2, initial_rebalance_delay_ms=0)
    a, b = h.member("a"), h.member("b")
    await h.stable_group(a, b)
    c = h.member("c")
    r = c.join()
    assert isinstance(r, JoinResult) and r.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert r.member_id == ""
    # the members already in may rejoin
    assert isinstance(a.join(), Pending)


async def test_a_static_member_that_restarts_takes_its_place_without_a_rebalance(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    s = h.member("s", instance="instance-1")
    d = h.member("d")
    await h.stable_group(s, d)
    group = h.groups["g"]
    old_id, generation, leader = s.member_id, group.generation_id, group.leader_id
    assert leader == old_id

    again = h.member("s", instance="instance-1")  # the restarted process: no member id
    out = again.join()
    r = await again.joined(out)
    assert r.error_code == 0 and r.member_id != old_id and r.generation_id == generation
    # the old leader id: the returning member must not run an assignment (before v9)
    assert r.leader == old_id and r.members == []
    assert group.state is GroupState.STABLE and group.generation_id == generation
    assert d.heartbeat() == ErrorCode.NONE  # nobody else noticed
    assert (await again.synced(again.sync())).assignment == b"assigned-s"
    # the old incarnation is fenced
    assert s.heartbeat() == ErrorCode.FENCED_INSTANCE_ID
    assert s.heartbeat(instance=None) == ErrorCode.UNKNOWN_MEMBER_ID


async def test_a_static_leader_on_v9_is_told_to_skip_the_assignment(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    s, d = h.member("s", instance="i1"), h.member("d")
    await h.stable_group(s, d)
    again = h.member("s", instance="i1")
    r = await again.joined(again.join(supports_skip_assignment=True))
    assert r.skip_assignment and r.leader == r.member_id and len(r.members) == 2


async def test_a_static_member_changing_protocol_triggers_a_rebalance(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    s, d = h.member("s", instance="i1"), h.member("d", protocols=(("range", b""), ("rr", b"")))
    s.protocols = (("range", b""), ("rr", b""))
    await h.stable_group(s, d)
    again = h.member("s", instance="i1", protocols=(("rr", b""),))
    out = again.join()
    assert isinstance(out, Pending)
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE


async def test_a_parked_join_of_a_replaced_static_member_is_fenced(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    s, d = h.member("s", instance="i1"), h.member("d")
    await h.stable_group(s, d)
    d.join()  # a rebalance: s is asked to rejoin
    parked = s.join()
    again = h.member("s", instance="i1")
    again.join()
    r = await h.result(parked)
    assert r.error_code == ErrorCode.FENCED_INSTANCE_ID


async def test_a_static_member_gone_past_its_session_is_removed(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    s, d = h.member("s", instance="i1", session_ms=10_000), h.member("d", session_ms=60_000)
    await h.stable_group(s, d)
    await trio.sleep(10.001)
    assert s.member_id not in h.groups["g"].members
    assert h.groups["g"].static_members == {}
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE


async def test_leave_group_in_batches_by_member_or_instance(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    s, d, e = h.member("s", instance="i1"), h.member("d"), h.member("e")
    await h.stable_group(s, d, e)
    result = h.coordinator.leave_group(
        "g",
        [
            MemberIdentity("", "i1"),  # an admin removing a static member by instance id
            MemberIdentity(d.member_id),
            MemberIdentity("nobody"),
            MemberIdentity(e.member_id, "not-e"),
        ],
    )
    assert result.error_code == 0
    assert [code for _, code in result.members] == [0, 0, 25, 25]
    assert list(h.groups["g"].members) == [e.member_id]
    assert h.groups["g"].state is GroupState.PREPARING_REBALANCE
    unknown = h.coordinator.leave_group("no-such-group", [MemberIdentity("x")])
    assert unknown.error_code == 0 and unknown.members[0][1] == ErrorCode.UNKNOWN_MEMBER_ID


async def test_when_the_last_member_leaves_the_group_is_empty_and_stored(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a = h.member("a")
    await h.stable_group(a)
    writes = len(h.topic.records())
    assert h.coordinator.leave_group("g", [MemberIdentity(a.member_id)]).members[0][1] == 0
    group = h.groups["g"]
    assert group.state is GroupState.EMPTY and group.generation_id == 2
    await h.settle()
    assert len(h.topic.records()) == writes + 1


async def test_a_member_parked_in_join_is_answered_when_removed(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a"), h.member("b")
    await h.stable_group(a, b)
    parked = a.join()
    h.coordinator.leave_group("g", [MemberIdentity(a.member_id)])
    r = await h.result(parked)
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID and r.member_id == ""


async def test_a_new_member_parked_too_long_is_dropped(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a", rebalance_ms=600_000, session_ms=600_000), h.member("b")
    await h.stable_group(a, b)
    t0 = trio.current_time()
    c = h.member("c")
    pc = c.join()  # a rebalance; b rejoins, a (with a 10-minute rebalance timeout) does not
    pb = b.join()
    rc = await h.result(pc)
    # c's first join stays parked at most the new-member join timeout (5 minutes)
    assert trio.current_time() - t0 == pytest.approx(300)
    assert rc.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert isinstance(pb, Pending) and not pb.done
    rb = await h.result(pb)
    assert trio.current_time() - t0 == pytest.approx(600) and rb.generation_id == 2


async def test_the_same_member_joining_twice_answers_the_older_request(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = h.member("a"), h.member("b")
    await h.stable_group(a, b)
    first = a.join()
    second = a.join()
    assert (await h.result(first)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    b.join()
    assert (await h.result(second)).generation_id == 2
