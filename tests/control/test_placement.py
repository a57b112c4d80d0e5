"""Replica placement, as Kafka's AdminUtils.assignReplicasToBrokers places replicas: the
examples of its documentation and of its AdminRackAwareTest (fixed start index), the
properties it promises with a random one, and AdminZkClient.addPartitions' continuation of
an existing assignment (CreatePartitions in a ZooKeeper cluster). Pure functions."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from trio_broker.apis.services import TopicError
from trio_broker.protocol.errors import ErrorCode
from trio_broker.server.topics.placement import new_partitions, place_replicas, rack_alternated

DOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
SIX_ON_THREE = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def no_racks(*ids: int) -> dict[int, str | None]:
    return dict.fromkeys(ids)


def test_the_rack_alternated_list_of_kafkas_documentation() -> None:
    assert rack_alternated(DOC_RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated({k: v for k, v in DOC_RACKS.items() if k != 5}) == [0, 3, 1, 4, 2]
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}  # rack1: 0,1,2  rack2: 3,4,5 ...
    assert rack_alternated(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_the_rack_aware_example_of_kafkas_documentation() -> None:
    # 6 partitions round robin on the alternated list, then partition 6 with the
    # followers shifted (0,4,2 rather than 0,3,1 again).
    assert place_replicas(DOC_RACKS, 7, 3, start=0) == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_the_rack_unaware_example_of_kafkas_tests() -> None:
    assert place_replicas(no_racks(0, 1, 2, 3, 4), 10, 3, start=0) == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def check_distribution(
    placement: dict[int, list[int]], racks: dict[int, str], factor: int, *, even: bool = True
) -> None:
    """Kafka's RackAwareTest.checkReplicaDistribution: each partition on min(factor,
    racks) racks and distinct brokers; leaders and replicas even over the brokers."""
    rack_count = len(set(racks.values()))
    for ids in placement.values():
        assert len(ids) == factor and len(set(ids)) == factor
        assert len({racks[b] for b in ids}) == min(factor, rack_count)
    if even:
        leaders = Counter(ids[0] for ids in placement.values())
        replicas = Counter(b for ids in placement.values() for b in ids)
        assert len(set(leaders.values())) == 1 and set(leaders) == set(racks)
        assert len(set(replicas.values())) == 1 and set(replicas) == set(racks)


@pytest.mark.parametrize(
    ("racks", "partitions", "factor"),
    [
        (SIX_ON_THREE, 6, 3),
        (SIX_ON_THREE, 12, 2),
        (SIX_ON_THREE, 6, 2),
        ({0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2),
        ({0: "a", 1: "b", 2: "c"}, 3, 3),
    ],
)
def test_rack_aware_placement_spreads_racks_leaders_and_replicas(
    racks: dict[int, str], partitions: int, factor: int
) -> None:
    for seed in range(20):  # random start indexes and shifts
        placed = place_replicas(racks, partitions, factor, rng=random.Random(seed))
        check_distribution(placed, racks, factor)
    check_distribution(place_replicas(racks, partitions, factor, start=2), racks, factor)


def test_more_or_fewer_replicas_than_racks() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for ids in place_replicas(racks, 6, 5).values():
        assert len({racks[b] for b in ids}) == 3 and len(set(ids)) == 5
    for ids in place_replicas(racks, 6, 2).values():
        assert len({racks[b] for b in ids}) == 2
    one_rack = dict.fromkeys(range(6), "rack1")
    placed = place_replicas(one_rack, 6, 3)
    assert Counter(ids[0] for ids in placed.values()) == Counter(range(6))


def test_invalid_parameters_are_kafkas_errors() -> None:
    brokers = no_racks(0, 1, 2)
    with pytest.raises(TopicError) as err:
        place_replicas(brokers, 0, 1)
    assert err.value.error_code == ErrorCode.INVALID_PARTITIONS
    for factor in (0, 4):
        with pytest.raises(TopicError) as err:
            place_replicas(brokers, 3, factor)
        assert err.value.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_some_brokers_without_a_rack_are_refused_as_kafka_refuses_them() -> None:
    with pytest.raises(TopicError) as err:
        place_replicas({0: "rack1", 1: None, 2: "rack2"}, 3, 2)
    assert err.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "Not all brokers have rack information" in err.value.message
    assert "[1]" in err.value.message


def test_new_partitions_continue_the_existing_assignment() -> None:
    brokers = no_racks(0, 1, 2, 3, 4)
    whole = place_replicas(brokers, 10, 3, start=0)
    existing = {p: whole[p] for p in range(4)}
    # Partition 0 leads on broker 0: start index 0, and the ids follow on, so the new
    # partitions are those a 10-partition topic would have had.
    assert new_partitions(existing, 10, brokers, None) == {p: whole[p] for p in range(4, 10)}
    # The start index is that of the first broker with an id >= partition 0's leader.
    shifted = {0: [2, 3], 1: [3, 4]}
    added = new_partitions(shifted, 4, no_racks(0, 2, 5), None)
    assert added == place_replicas(no_racks(0, 2, 5), 2, 2, start=1, first_partition=2)
    assert all(len(ids) == 2 for ids in added.values())  # partition 0's factor


@pytest.mark.parametrize(
    ("count", "replicas", "code"),
    [
        (2, None, ErrorCode.INVALID_PARTITIONS),
        (1, None, ErrorCode.INVALID_PARTITIONS),
        (4, [[0, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # one list short
        (4, [[0, 1], [9, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # not registered
        (4, [[0, 1], [1, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # a repeat
        (4, [[0, 1], [2]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # not partition 0's size
        (4, [[0], [2]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (4, [[0, 1], []], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ],
)
def test_growing_checks_count_and_assignments(
    count: int, replicas: list[list[int]] | None, code: ErrorCode
) -> None:
    with pytest.raises(TopicError) as err:
        new_partitions({0: [0, 1], 1: [1, 2]}, count, no_racks(0, 1, 2), replicas)
    assert err.value.error_code == code


def test_a_manual_assignment_for_new_partitions_is_taken_as_given() -> None:
    added = new_partitions({0: [0, 1], 1: [1, 2]}, 4, no_racks(0, 1, 2), [[2, 0], [0, 2]])
    assert added == {2: [2, 0], 3: [0, 2]}
