"""The controller's election rules as tables: a round's ``elect`` (deaths and controlled
shutdown), ElectLeaders' preferred and unclean kinds, and the leader imbalance check."""

from __future__ import annotations

import pytest

from trio_broker.protocol.errors import ErrorCode
from trio_broker.server.coordination import elections
from trio_broker.server.coordination.elections import elect
from trio_broker.server.coordination.layout import LeaderIsr

E = 9  # the controller epoch of these rounds


def S(leader: int, epoch: int, *isr: int) -> LeaderIsr:
    return LeaderIsr(leader, epoch, tuple(isr), 1)


LIVE3 = {0: None, 1: None, 2: None}

ELECT_CASES = [
    # (state, live, shutting down, expected)
    ("steady", S(0, 3, 0, 1, 2), LIVE3, (), None),
    ("follower dies", S(0, 3, 0, 1, 2), {0: 0, 1: 0}, (), LeaderIsr(0, 4, (0, 1), E)),
    ("leader dies", S(0, 3, 0, 1, 2), {1: 0, 2: 0}, (), LeaderIsr(1, 4, (1, 2), E)),
    ("all dead", S(0, 3, 0), {1: 0}, (), LeaderIsr(-1, 4, (0,), E)),
    ("leader stops", S(0, 3, 0, 1, 2), LIVE3, {0}, LeaderIsr(1, 4, (1, 2), E)),
    ("follower stops", S(0, 3, 0, 1, 2), LIVE3, {1}, LeaderIsr(0, 4, (0, 2), E)),
    ("stopping, no one in sync", S(0, 3, 0), LIVE3, {0}, None),
    ("stopped one not re-elected", S(-1, 3, 1), LIVE3, {1}, None),
    ("assignment order", S(2, 3, 2, 1, 0), {0: 0, 1: 0}, (), LeaderIsr(0, 4, (1, 0), E)),
]


@pytest.mark.parametrize(
    ("state", "live", "stopping", "expected"),
    [pytest.param(*c[1:], id=c[0]) for c in ELECT_CASES],
)
def test_a_round_elects(state, live, stopping, expected) -> None:  # type: ignore[no-untyped-def]
    assert elect(state, [0, 1, 2], live, E, stopping) == expected


WAIT_CASES = [
    # (state, live, restarted, expected) while the controller waits (a young registration)
    ("leader not back yet", S(0, 3, 0, 1, 2), {1: 0}, (), None),
    ("follower not back yet", S(0, 3, 0, 1, 2), {0: 0, 1: 0}, (), None),
    ("all back", S(0, 3, 0, 1, 2), LIVE3, (), None),
    ("leader restarted", S(0, 3, 0, 1, 2), {1: 0, 2: 0}, {0}, LeaderIsr(1, 4, (1, 2), E)),
    ("new partition", None, {1: 0}, (), LeaderIsr(1, 0, (1,), E)),
]


@pytest.mark.parametrize(
    ("state", "live", "restarted", "expected"),
    [pytest.param(*c[1:], id=c[0]) for c in WAIT_CASES],
)
def test_a_young_controller_waits_for_the_brokers_registered_before_it(  # type: ignore[no-untyped-def]
    state, live, restarted, expected
) -> None:
    assert elect(state, [0, 1, 2], live, E, (), True, restarted) == expected
    if state is not None and expected is None and live != LIVE3:
        assert elect(state, [0, 1, 2], live, E) is not None  # not waiting: it would change


DECIDE_CASES = [
    ("preferred back", 0, S(1, 3, 0, 1), {0, 1, 2}, LeaderIsr(0, 4, (0, 1), E)),
    ("preferred leads", 0, S(0, 3, 0, 1), {0, 1, 2}, ErrorCode.ELECTION_NOT_NEEDED),
    (
        "preferred not in sync",
        0,
        S(1, 3, 1, 2),
        {0, 1, 2},
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    ),
    ("preferred dead", 0, S(1, 3, 0, 1), {1, 2}, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
    ("unclean, leader alive", 1, S(1, 3, 1), {0, 1, 2}, ErrorCode.ELECTION_NOT_NEEDED),
    ("unclean, ISR member", 1, S(-1, 3, 0, 2), {1, 2}, LeaderIsr(2, 4, (2,), E)),
    ("unclean, out of sync", 1, S(-1, 3, 0), {1, 2}, LeaderIsr(1, 4, (1,), E)),
    ("unclean, none alive", 1, S(-1, 3, 0), set(), ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE),
]


@pytest.mark.parametrize(
    ("kind", "state", "eligible", "expected"),
    [pytest.param(*c[1:], id=c[0]) for c in DECIDE_CASES],
)
def test_an_order_decides(kind, state, eligible, expected) -> None:  # type: ignore[no-untyped-def]
    assert elections.decide(kind, state, [0, 1, 2], eligible, E) == expected


def test_the_imbalance_check_elects_above_the_percentage() -> None:
    states = [
        (("t", 0), [0, 1], S(1, 1, 0, 1)),  # broker 0's, led by 1
        (("t", 1), [0, 1], S(0, 1, 0, 1)),
        (("t", 2), [1, 0], S(1, 1, 1, 0)),
        (("t", 3), [0, 1], S(1, 1, 1)),  # broker 0 not in sync: cannot lead
    ]
    assert elections.imbalanced(states, {0, 1}, 10) == {("t", 0)}
    assert elections.imbalanced(states, {0, 1}, 70) == frozenset()  # 2 of 3 = 67 %
    assert elections.remaining(1, states) == [("t", 0), ("t", 2), ("t", 3)]
