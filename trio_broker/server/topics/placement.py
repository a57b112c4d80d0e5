"""Where a topic's replicas go: Kafka's replica placement (``AdminUtils.assignReplicasToBrokers``).

Owns: ``place_replicas``, a pure function of the brokers (id -> rack or None), the
partition count, the replication factor and where to start, and ``rack_alternated``. Its
three goals are Kafka's: spread the replicas evenly over the brokers; spread the followers
of one broker's partitions over the other brokers; and, when every broker has a rack, put
each partition's replicas on as many racks as it can.

- Rack-unaware (no broker has a rack): each partition's first replica round robin from a
  start index, its followers at a shift that grows by one every full round of brokers.
- Rack-aware (every broker has one): the same round robin over the brokers listed rack by
  rack in turn (``rack_alternated``); a follower skips a broker whose rack already holds a
  replica while some rack holds none, and a broker holding one while some broker holds none.
- Some brokers with a rack and some without: refused, as Kafka refuses it
  (``AdminOperationException``, which a Kafka 3.x broker answers UNKNOWN_SERVER_ERROR).

``start`` fixes the start index and the first shift (Kafka's ``fixedStartIndex``), for new
partitions of an existing topic and for tests; None draws both at random, as Kafka does.
``first_partition`` numbers the partitions placed (new ones follow the existing ones, and
the shift grows at the same partition ids as if the topic had been placed in one go).
No I/O, no trio.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from ...apis.services import TopicError
from ...protocol.errors import ErrorCode


def place_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    factor: int,
    *,
    start: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition id -> its replicas (the first one the preferred leader)."""
    n = len(brokers)
    if partitions <= 0:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "the number of partitions must be above 0")
    if factor <= 0 or factor > n:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {factor} is not between 1 and the {n} available brokers",
        )
    racks = check_racks(brokers)
    if not racks:
        order = sorted(brokers)
        return _round_robin(order, None, partitions, factor, start, first_partition, rng)
    order = rack_alternated(racks)
    return _round_robin(order, racks, partitions, factor, start, first_partition, rng)


def check_racks(brokers: Mapping[int, str | None]) -> dict[int, str]:
    """The brokers' racks: all of them or none (``TopicError`` when only some have one)."""
    racks = {b: r for b, r in brokers.items() if r is not None}
    if racks and len(racks) < len(brokers):
        missing = sorted(b for b in brokers if b not in racks)
        raise TopicError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            "Not all brokers have rack information for replica rack aware assignment "
            f"(brokers {missing} have no broker.rack)",
        )
    return racks


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """The brokers rack by rack in turn (racks in name order, brokers of a rack by id):
    {0: a, 1: a, 2: b, 3: c} -> [0, 2, 3, 1]."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    order: list[int] = []
    for i in range(max(len(q) for q in queues)):
        order.extend(q[i] for q in queues if i < len(q))
    return order


def replica_index(first: int, shift: int, j: int, n: int) -> int:
    """The index of a partition's follower ``j`` (0-based) in a list of ``n`` brokers."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def _round_robin(
    order: list[int],
    racks: Mapping[int, str] | None,
    partitions: int,
    factor: int,
    start: int | None,
    first_partition: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    n = len(order)
    draw = rng if rng is not None else random.Random()
    start_index = start if start is not None and start >= 0 else draw.randrange(n)
    shift = start if start is not None and start >= 0 else draw.randrange(n)
    placement: dict[int, list[int]] = {}
    for p in range(max(0, first_partition), max(0, first_partition) + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        if racks is None:
            followers = [order[replica_index(first, shift, j, n)] for j in range(factor - 1)]
        else:
            followers = _rack_aware_followers(order, racks, first, shift, factor)
        placement[p] = [order[first], *followers]
    return placement


def _rack_aware_followers(
    order: list[int], racks: Mapping[int, str], first: int, shift: int, factor: int
) -> list[int]:
    n, rack_count = len(order), len(set(racks.values()))
    leader = order[first]
    used_racks, used = {racks[leader]}, {leader}
    followers: list[int] = []
    k = 0
    while len(followers) < factor - 1:
        broker = order[replica_index(first, shift * rack_count, k, n)]
        k += 1
        rack = racks[broker]
        if rack in used_racks and len(used_racks) < rack_count:
            continue  # a rack without a replica is still to come
        if broker in used and len(used) < n:
            continue
        followers.append(broker)
        used_racks.add(rack)
        used.add(broker)
    return followers


def new_partitions(
    existing: Mapping[int, list[int]],
    count: int,
    brokers: Mapping[int, str | None],
    replicas: Sequence[Sequence[int]] | None,
    *,
    start: int | None = None,
) -> dict[int, list[int]]:
    """The replicas of the partitions that grow a topic from ``existing`` to ``count``,
    as Kafka's ``AdminZkClient.createNewPartitionsAssignment``; ``start`` overrides the
    start index (tests)."""
    check_racks(brokers)  # Kafka's getBrokerMetadatas refuses half-racked clusters first
    current = len(existing)
    if count < current:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{count}.",
        )
    if count == current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    first = existing.get(0)
    if not first:
        raise TopicError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"the topic's partition 0 has no replicas: {existing}"
        )
    if replicas is not None:
        if len(replicas) != count - current:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {count - current} but "
                f"{len(replicas)} assignments provided.",
            )
        added = {current + i: list(ids) for i, ids in enumerate(replicas)}
        check_assignment(added, brokers, factor=len(first))
        return added
    ids = list(brokers)
    if start is None:
        start = next((i for i, b in enumerate(ids) if b >= first[0]), 0)
    return place_replicas(
        brokers, count - current, len(first), start=start, first_partition=current
    )


def check_assignment(
    placement: Mapping[int, list[int]],
    live: Mapping[int, object],
    *,
    factor: int | None = None,
) -> None:
    """Registered brokers, no repeats, and one size (``factor``, when given)."""
    sizes = {len(ids) for ids in placement.values()} | ({factor} if factor else set())
    for p, ids in placement.items():
        problem = None
        if not ids or len(set(ids)) != len(ids):
            problem = f"partition {p}: replicas {ids} are empty or repeat a broker"
        elif unknown := [b for b in ids if b not in live]:
            problem = f"partition {p}: brokers {unknown} are not registered"
        elif len(sizes) > 1:
            problem = "every partition must have the same number of replicas" + (
                f" as partition 0 ({factor})" if factor else ""
            )
        if problem is not None:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
