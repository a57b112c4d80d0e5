"""The reassignment rules as tables (``server.coordination.reassignment``) and the topic node's
KIP-455 fields (``layout``)."""

from __future__ import annotations

import uuid

import pytest

from trio_broker.server.coordination import layout
from trio_broker.server.coordination.layout import LeaderIsr
from trio_broker.server.coordination.reassignment import check_target, finished, plan, retold

E = 9  # the controller epoch


def S(leader: int, epoch: int, *isr: int) -> LeaderIsr:
    return LeaderIsr(leader, epoch, tuple(isr), 1)


@pytest.mark.parametrize(
    ("original", "target", "expected"),
    [
        ([0, 1], [1, 2], ([1, 2, 0], [2], [0])),
        ([0, 1], [2, 3], ([2, 3, 0, 1], [2, 3], [0, 1])),
        ([0, 1, 2], [0, 1], ([0, 1, 2], [], [2])),  # a smaller replication factor
        ([0, 1], [1, 0], ([1, 0], [], [])),  # a new order only
    ],
)
def test_plan(original, target, expected) -> None:  # type: ignore[no-untyped-def]
    assert plan(original, target) == expected


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ([], "Empty replica list"),
        ([1, 1], "Duplicate replica ids"),
        ([1, -1], "Invalid broker id"),
        ([1, 7], "not alive"),
        ([1, 2], None),
    ],
)
def test_check_target(target, problem) -> None:  # type: ignore[no-untyped-def]
    found = check_target(target, {0, 1, 2})
    assert (found is None) if problem is None else (problem in (found or ""))


@pytest.mark.parametrize(
    ("state", "target", "expected"),
    [
        pytest.param(S(0, 3, 0, 1), [1, 2], None, id="not caught up"),
        pytest.param(S(1, 3, 0, 1, 2), [1, 2], LeaderIsr(1, 4, (1, 2), E), id="leader stays"),
        pytest.param(S(0, 3, 0, 1, 2), [1, 2], LeaderIsr(1, 4, (1, 2), E), id="leader moves"),
        pytest.param(S(0, 3, 0, 2, 1), [2, 1], LeaderIsr(2, 4, (2, 1), E), id="target order"),
    ],
)
def test_finished(state, target, expected) -> None:  # type: ignore[no-untyped-def]
    assert finished(state, target, {0, 1, 2}, E) == expected


def test_a_dead_leader_outside_the_target_gives_way_to_a_live_one() -> None:
    assert finished(S(1, 3, 1, 2), [1, 2], {2}, E) == LeaderIsr(2, 4, (1, 2), E)
    assert finished(S(0, 3, 0, 1, 2), [1, 2], {0}, E) is None  # none of the target can lead


def test_retold_keeps_the_leader_and_the_isr_within_the_replicas() -> None:
    assert retold(S(0, 3, 0, 1), [1, 2, 0], {0, 1, 2}, E) == LeaderIsr(0, 4, (0, 1), E)
    # A cancel drops an adding replica that had joined the ISR.
    assert retold(S(0, 3, 0, 1, 2), [1, 0], {0, 1, 2}, E) == LeaderIsr(0, 4, (0, 1), E)


def test_the_topic_node_keeps_adding_and_removing_replicas() -> None:
    tid = uuid.uuid4()
    data = layout.assignment_data(tid, {0: [1, 2, 0], 1: [0, 1]}, {0: [2]}, {0: [0], 1: []})
    assert layout.assignment_of(data) == (tid, {0: [1, 2, 0], 1: [0, 1]})
    assert layout.reassignment_of(data) == ({0: [2]}, {0: [0]})
    old = b'{"version": 2, "topic_id": "%s", "partitions": {"0": [0]}}' % (
        layout.kafka_uuid(tid).encode()
    )
    assert layout.reassignment_of(old) == ({}, {})  # a node written before KIP-455
