"""KIP-848's server-side assignors and the reconciliation of one member, as pure
functions: tables of cases, each checked against what Kafka's UniformAssignor,
RangeAssignor and CurrentAssignmentBuilder do (their documentation's examples)."""

from __future__ import annotations

import uuid

import pytest

from trio_broker.server.groups.consumer.assignors import MemberSpec, range_, uniform
from trio_broker.server.groups.consumer.model import ConsumerMember, MemberState, reconcile

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(targets: dict[str, set[tuple[uuid.UUID, int]]]) -> dict[str, int]:
    return {m: len(tps) for m, tps in targets.items()}


def test_uniform_one_member_gets_everything_then_shares_stickily() -> None:
    alone = uniform({"a": MemberSpec(frozenset({T1}))}, {T1: 6})
    assert alone == {"a": {(T1, p) for p in range(6)}}
    both = uniform(
        {
            "a": MemberSpec(frozenset({T1}), current=frozenset(alone["a"])),
            "b": MemberSpec(frozenset({T1})),
        },
        {T1: 6},
    )
    assert counts(both) == {"a": 3, "b": 3}
    assert both["a"] <= alone["a"]  # a keeps what it keeps, only gives away
    assert not both["a"] & both["b"]


@pytest.mark.parametrize(("members", "partitions"), [(3, 7), (4, 4), (5, 3), (7, 120)])
def test_uniform_is_balanced_to_within_one(members: int, partitions: int) -> None:
    specs = {f"m{i}": MemberSpec(frozenset({T1})) for i in range(members)}
    out = uniform(specs, {T1: partitions})
    sizes = sorted(len(v) for v in out.values())
    assert sizes[-1] - sizes[0] <= 1 and sum(sizes) == partitions
    assert set().union(*out.values()) == {(T1, p) for p in range(partitions)}


def test_uniform_different_subscriptions_balance_over_what_each_may_take() -> None:
    out = uniform(
        {"a": MemberSpec(frozenset({T1})), "b": MemberSpec(frozenset({T1, T2}))},
        {T1: 4, T2: 2},
    )
    assert counts(out) == {"a": 3, "b": 3}
    assert all(t == T1 for t, _ in out["a"])
    assert {tp for tp in out["b"] if tp[0] == T2} == {(T2, 0), (T2, 1)}


def test_uniform_drops_what_a_member_no_longer_may_hold() -> None:
    out = uniform(
        {"a": MemberSpec(frozenset({T2}), current=frozenset({(T1, 0), (T1, 1)}))},
        {T1: 2, T2: 1},
    )
    assert out == {"a": {(T2, 0)}}


def test_range_co_partitions_as_kafkas_example() -> None:
    """RangeAssignor's documentation: M0 [T1P0, T1P1, T2P0, T2P1], M1 [T1P2, T2P2]."""
    both = frozenset({T1, T2})
    out = range_({"M0": MemberSpec(both), "M1": MemberSpec(both)}, {T1: 3, T2: 3})
    assert out == {"M0": {(T1, 0), (T1, 1), (T2, 0), (T2, 1)}, "M1": {(T1, 2), (T2, 2)}}


def test_range_orders_by_instance_id_first() -> None:
    out = range_(
        {"z": MemberSpec(frozenset({T1}), "i0"), "a": MemberSpec(frozenset({T1}), "i1")},
        {T1: 2},
    )
    assert out == {"z": {(T1, 0)}, "a": {(T1, 1)}}


P = {(T1, p) for p in range(4)}


def member(epoch: int, assigned: set[tuple[uuid.UUID, int]], **kw: object) -> ConsumerMember:
    return ConsumerMember("m", member_epoch=epoch, assigned=frozenset(assigned), **kw)  # type: ignore[arg-type]


def test_a_member_revokes_before_it_moves_on() -> None:
    m = member(1, P)
    target = frozenset({(T1, 0), (T1, 1)})
    asked = reconcile(m, 2, target, {tp: 1 for tp in P}, owned=P)
    assert asked.state is MemberState.UNREVOKED_PARTITIONS
    assert asked.member_epoch == 1  # not bumped until it revokes
    assert asked.assigned == target and asked.pending_revocation == {(T1, 2), (T1, 3)}
    still = reconcile(asked, 2, target, {}, owned=P)
    assert still is asked  # still owns what it must give up
    done = reconcile(asked, 2, target, {}, owned=target)
    assert (done.state, done.member_epoch, done.assigned) == (MemberState.STABLE, 2, target)


def test_a_member_waits_for_partitions_others_still_hold() -> None:
    m = member(1, set())
    target = frozenset({(T1, 2), (T1, 3)})
    waiting = reconcile(m, 2, target, {(T1, 3): 1}, owned=set())
    assert waiting.state is MemberState.UNRELEASED_PARTITIONS
    assert (waiting.member_epoch, waiting.assigned) == (2, {(T1, 2)})
    released = reconcile(waiting, 2, target, {}, owned={(T1, 2)})
    assert (released.state, released.assigned) == (MemberState.STABLE, target)


def test_a_reconciled_member_is_left_alone() -> None:
    m = member(3, P)
    assert reconcile(m, 3, frozenset(), {}, owned=P) is m
