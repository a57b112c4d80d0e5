"""The state table and the error codes per state, table-driven against Kafka's behaviour.

The expected tables here are written out from Kafka's GroupCoordinator, independently of
``state.py``; each state is reached for real, by driving a coordinator on the mock clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from trio_broker.apis.group_services import MemberIdentity, Pending
from trio_broker.protocol.errors import ErrorCode as E
from trio_broker.server.groups import GroupState
from trio_broker.server.groups.group import Group
from trio_broker.server.groups.state import InvalidTransition, can_enter

from .harness import Harness, Member, start

S = GroupState

KAFKA_VALID_PREVIOUS = {
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.DEAD: set(S),
}


@pytest.mark.parametrize("target", list(S))
@pytest.mark.parametrize("current", list(S))
def test_the_transition_table_is_kafkas(current: GroupState, target: GroupState) -> None:
    assert can_enter(target, current) == (current in KAFKA_VALID_PREVIOUS[target])


def test_a_transition_outside_the_table_is_a_bug() -> None:
    g = Group("g")
    with pytest.raises(InvalidTransition, match="cannot go from Empty to Stable"):
        g.transition_to(S.STABLE, 0)
    g.transition_to(S.PREPARING_REBALANCE, 1)
    assert (g.state, g.state_timestamp_ms) == (S.PREPARING_REBALANCE, 1)


async def reach(h: Harness, state: GroupState) -> Member:
    """A group ``g`` in ``state``, and a member of its current generation (for Empty: the
    member that was in it)."""
    a, b = h.member("a"), h.member("b")
    if state is S.COMPLETING_REBALANCE:
        pa, pb = a.join(), b.join()
        await a.joined(pa)
        await b.joined(pb)
    else:
        await h.stable_group(a, b)
    if state is S.PREPARING_REBALANCE:
        h.member("c").join()
    if state is S.EMPTY:
        h.coordinator.leave_group("g", [MemberIdentity(a.member_id), MemberIdentity(b.member_id)])
    assert h.groups["g"].state is state
    return b


PARKS = "parks"

# What a member of the current generation gets, per state (Kafka's GroupCoordinator).
PER_STATE: dict[GroupState, dict[str, Any]] = {
    S.EMPTY: {
        "heartbeat": E.UNKNOWN_MEMBER_ID,
        "sync": E.UNKNOWN_MEMBER_ID,
        "commit": E.UNKNOWN_MEMBER_ID,
        "rejoin": E.UNKNOWN_MEMBER_ID,
        "delete_group": E.NONE,
    },
    S.PREPARING_REBALANCE: {
        "heartbeat": E.REBALANCE_IN_PROGRESS,
        "sync": E.REBALANCE_IN_PROGRESS,
        "commit": E.NONE,
        "rejoin": PARKS,
        "delete_group": E.NON_EMPTY_GROUP,
    },
    S.COMPLETING_REBALANCE: {
        "heartbeat": E.NONE,
        "sync": PARKS,
        "commit": E.REBALANCE_IN_PROGRESS,
        "rejoin": E.NONE,  # same metadata: the current generation again
        "delete_group": E.NON_EMPTY_GROUP,
    },
    S.STABLE: {
        "heartbeat": E.NONE,
        "sync": E.NONE,
        "commit": E.NONE,
        "rejoin": E.NONE,  # a follower with the same metadata
        "delete_group": E.NON_EMPTY_GROUP,
    },
}


def code(outcome: Any) -> Any:
    if isinstance(outcome, Pending):
        return PARKS if not outcome.done else outcome.result.error_code
    if isinstance(outcome, dict):
        (value,) = set(outcome.values())
        return value
    return getattr(outcome, "error_code", outcome)


@pytest.mark.parametrize("state", list(PER_STATE))
@pytest.mark.parametrize("request_kind", ["heartbeat", "sync", "commit", "rejoin", "delete_group"])
async def test_error_codes_per_state(
    nursery, autojump_clock, state: GroupState, request_kind: str
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    m = await reach(h, state)
    if request_kind == "heartbeat":
        got = m.heartbeat()
    elif request_kind == "sync":
        got = m.sync()
    elif request_kind == "commit":
        got = await m.commit({("t", 0): 5})
    elif request_kind == "rejoin":
        got = m.join()
    else:
        got = (await h.coordinator.delete_groups(["g"]))["g"]
    assert code(got) == PER_STATE[state][request_kind]


# (description, request) -> expected, for a Stable group g with members a (static "i-a",
# the leader) and b, generation 1.
async def stable(h: Harness) -> tuple[Member, Member]:
    a, b = h.member("a", instance="i-a"), h.member("b")
    await h.stable_group(a, b)
    return a, b


CHECKS = [
    # the group id comes first; only the offset and admin APIs accept ""
    (
        "join with empty group id",
        lambda a, b, c: c.join_group(b.params(group_id="")),
        E.INVALID_GROUP_ID,
    ),
    ("sync with empty group id", lambda a, b, c: b.sync(group=""), E.INVALID_GROUP_ID),
    ("heartbeat with empty group id", lambda a, b, c: b.heartbeat(group=""), E.INVALID_GROUP_ID),
    (
        "leave with empty group id",
        lambda a, b, c: c.leave_group("", [MemberIdentity("x")]),
        E.INVALID_GROUP_ID,
    ),
    ("fetch with empty group id", lambda a, b, c: c.fetch_offsets("", None, False)[0], E.NONE),
    ("describe empty group id", lambda a, b, c: c.describe_group(""), E.NONE),
    # unknown groups
    ("heartbeat unknown group", lambda a, b, c: b.heartbeat(group="zz"), E.UNKNOWN_MEMBER_ID),
    ("sync unknown group", lambda a, b, c: b.sync(group="zz"), E.UNKNOWN_MEMBER_ID),
    (
        "rejoin unknown group",
        lambda a, b, c: c.join_group(b.params(group_id="zz")),
        E.UNKNOWN_MEMBER_ID,
    ),
    # members and generations
    (
        "heartbeat unknown member",
        lambda a, b, c: b.heartbeat(member_id="nobody"),
        E.UNKNOWN_MEMBER_ID,
    ),
    ("sync unknown member", lambda a, b, c: b.sync(member_id="nobody"), E.UNKNOWN_MEMBER_ID),
    (
        "rejoin unknown member",
        lambda a, b, c: c.join_group(b.params(member_id="nobody")),
        E.UNKNOWN_MEMBER_ID,
    ),
    ("heartbeat old generation", lambda a, b, c: b.heartbeat(generation=0), E.ILLEGAL_GENERATION),
    ("sync old generation", lambda a, b, c: b.sync(generation=0), E.ILLEGAL_GENERATION),
    (
        "heartbeat future generation",
        lambda a, b, c: b.heartbeat(generation=7),
        E.ILLEGAL_GENERATION,
    ),
    # static members: a stale member id for a known instance is fenced
    ("heartbeat fenced", lambda a, b, c: a.heartbeat(member_id="old"), E.FENCED_INSTANCE_ID),
    ("sync fenced", lambda a, b, c: a.sync(member_id="old"), E.FENCED_INSTANCE_ID),
    (
        "rejoin fenced",
        lambda a, b, c: c.join_group(a.params(member_id="old")),
        E.FENCED_INSTANCE_ID,
    ),
    (
        "leave fenced",
        lambda a, b, c: c.leave_group("g", [MemberIdentity("old", "i-a")]).members[0][1],
        E.FENCED_INSTANCE_ID,
    ),
    (
        "heartbeat unknown instance",
        lambda a, b, c: b.heartbeat(instance="i-z"),
        E.UNKNOWN_MEMBER_ID,
    ),
    # protocol checks of SyncGroup v5
    (
        "sync other protocol type",
        lambda a, b, c: b.sync(protocol_type="connect"),
        E.INCONSISTENT_GROUP_PROTOCOL,
    ),
    (
        "sync other protocol name",
        lambda a, b, c: b.sync(protocol_name="rr"),
        E.INCONSISTENT_GROUP_PROTOCOL,
    ),
    (
        "sync same protocol",
        lambda a, b, c: b.sync(protocol_type="consumer", protocol_name="range"),
        E.NONE,
    ),
    # a new member of a stable group starts a rebalance
    (
        "join new member",
        lambda a, b, c: c.join_group(b.params(member_id="", require_known_member_id=False)),
        PARKS,
    ),
    ("leader rejoins", lambda a, b, c: a.join(), PARKS),
]


@pytest.mark.parametrize(("what", "request_fn", "expected"), CHECKS, ids=[c[0] for c in CHECKS])
async def test_checks_and_their_order(
    nursery, autojump_clock, what: str, request_fn: Any, expected: Any
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = await stable(h)
    assert code(request_fn(a, b, h.coordinator)) == expected


COMMITS = [
    # (generation, member, instance) -> code, for the Stable group of ``stable``
    ((1, "b", None), E.NONE),
    ((0, "b", None), E.ILLEGAL_GENERATION),
    ((1, "nobody", None), E.UNKNOWN_MEMBER_ID),
    ((-1, "", None), E.UNKNOWN_MEMBER_ID),  # not a member, and the group is not empty
    ((1, "old", "i-a"), E.FENCED_INSTANCE_ID),
    ((1, "a", "i-a"), E.NONE),
]


@pytest.mark.parametrize(("who", "expected"), COMMITS)
async def test_offset_commit_checks(nursery, autojump_clock, who: Any, expected: int) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    a, b = await stable(h)
    generation, member, instance = who
    member_id = {"a": a.member_id, "b": b.member_id}.get(member, member)
    got = await b.commit(
        {("t", 0): 1}, generation=generation, member_id=member_id, instance=instance
    )
    assert code(got) == expected


async def test_commits_without_group_management(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    m = h.member("simple", group="offsets-only")
    assert code(await m.commit({("t", 0): 1}, generation=-1)) == E.NONE
    assert h.groups["offsets-only"].state is S.EMPTY
    # a generation for a group that does not exist: an older generation of a gone group
    late = h.member("late", group="gone")
    assert (
        code(await late.commit({("t", 0): 1}, generation=3, member_id="x")) == E.ILLEGAL_GENERATION
    )
    assert "gone" not in h.groups


async def test_a_stopped_coordinator_answers_coordinator_not_available(
    nursery, autojump_clock
) -> None:  # type: ignore[no-untyped-def]
    h = await start(nursery)
    _, b = await stable(h)
    c = h.coordinator
    c.stop()
    assert code(b.heartbeat()) == E.COORDINATOR_NOT_AVAILABLE
    assert code(b.sync()) == E.COORDINATOR_NOT_AVAILABLE
    assert code(c.join_group(b.params())) == E.COORDINATOR_NOT_AVAILABLE
    assert code(await b.commit({("t", 0): 1})) == E.COORDINATOR_NOT_AVAILABLE
    assert c.fetch_offsets("g", None, False)[0] == E.COORDINATOR_NOT_AVAILABLE
    assert c.list_groups([])[0] == E.COORDINATOR_NOT_AVAILABLE
    assert c.leave_group("g", []).error_code == E.COORDINATOR_NOT_AVAILABLE
