"""The sampler's arithmetic on two hand-made readings of a two-broker cluster (the live
sampler itself runs against real clusters in tests/control/test_balance_apply.py): rates
from counter increases over the uptime between the readings; a partition's rates from
the snapshot's per-partition counters when it has them (issue 32's ``partitions``
section), else shared out of its leader's topic counters by the growth of its offsets;
a counter that went down (a restart) counted from zero."""

from __future__ import annotations

from typing import Any

from spark_jobs.balance.live import BrokerInfo, ClusterView
from spark_jobs.balance.sample import Reading, rows_between


def view() -> ClusterView:
    brokers = {i: BrokerInfo(i, "127.0.0.1", 9092 + i, None, f"http://a{i}") for i in (0, 1)}
    partitions = {
        ("t", 0): {"topic": "t", "partition": 0, "leader": 0, "replicas": [0, 1], "isr": [0, 1]},
        ("t", 1): {"topic": "t", "partition": 1, "leader": 0, "replicas": [0, 1], "isr": [0]},
    }
    return ClusterView(brokers, partitions, 0)


def snapshot(uptime: float, bytes_in: int, produce: int, **more: Any) -> dict[str, Any]:
    return {
        "uptime_s": uptime,
        "event_loop": {"busy_ratio": 0.25},
        "pools": {"io": {"idle_ratio": 0.75}, "network": {"PLAINTEXT": {"idle_ratio": 0.5}}},
        "requests": {
            "Produce": {"count": produce, "queue_time_ms": {"p99": 3.0}},
            "FetchConsumer": {"count": 0, "queue_time_ms": {"p99": 7.0}},
        },
        "topics": {
            "all": {"bytes_in": bytes_in, "bytes_out": 0, "messages_in": bytes_in // 100},
            "by_topic": {
                "t": {"bytes_in": bytes_in, "bytes_out": 0, "messages_in": bytes_in // 100}
            },
        },
        **more,
    }


def disks(sizes: dict[int, int]) -> dict[int, dict[str, Any]]:
    return {
        b: {"sizes": {("t", 0): s, ("t", 1): s}, "used": 2 * s, "total": 1000, "usable": 10}
        for b, s in sizes.items()
    }


def test_partition_rates_are_shared_out_of_the_topic_counters_by_offset_growth() -> None:
    a = Reading(100.0, view(), {0: snapshot(10, 0, 0), 1: snapshot(10, 0, 0)}, disks({0: 0}), {})
    a.offsets = {("t", 0): 0, ("t", 1): 0}
    b = Reading(
        110.0,
        view(),
        {0: snapshot(20, 40_000, 400), 1: snapshot(20, 0, 0)},
        disks({0: 300, 1: 200}),
        {("t", 0): 300, ("t", 1): 100},
    )
    brokers, partitions = rows_between(a, b)
    by = {(r["broker_id"], r["partition"]): r for r in partitions}
    lead0, lead1 = by[(0, 0)], by[(0, 1)]
    assert lead0["role"] == "leader" and lead0["bytes_in_per_s"] == 3000.0  # 3/4 of 4000
    assert lead1["bytes_in_per_s"] == 1000.0 and lead0["produce_requests_per_s"] == 30.0
    # Followers in sync copy what came in; partition 1's follower is out of the ISR.
    assert lead0["replication_bytes_out_per_s"] == 3000.0 and by[(1, 0)]["role"] == "follower"
    assert by[(1, 0)]["replication_bytes_in_per_s"] == 3000.0
    assert lead1["replication_bytes_out_per_s"] == 0.0
    assert lead0["log_end_offset"] == 300 and by[(1, 0)]["log_size_bytes"] == 200
    b0 = next(r for r in brokers if r["broker_id"] == 0)
    assert b0["bytes_in_per_s"] == 4000.0 and b0["leaders"] == 2 and b0["replicas"] == 2
    assert b0["loop_busy_ratio"] == 0.25 and b0["io_idle_ratio"] == 0.75
    assert b0["request_queue_p99_ms"] == 7.0 and b0["network_idle_ratio"] == 0.5
    assert b0["disk_used_bytes"] == 600 and b0["disk_total_bytes"] == 1000
    b1 = next(r for r in brokers if r["broker_id"] == 1)
    assert b1["replication_bytes_in_per_s"] == 3000.0 and b1["leaders"] == 0


def per_partition(bytes_in: int, produce: int) -> list[dict[str, Any]]:
    return [
        {"topic": "t", "partition": 0, "bytes_in": bytes_in, "produce_requests": produce},
        {"topic": "t", "partition": 1, "bytes_in": 7, "replication_bytes_out": 14},
    ]


def test_per_partition_counters_are_used_as_they_are_and_a_restart_counts_from_zero() -> None:
    before = snapshot(10, 0, 0, partitions=per_partition(5_000, 50))
    after = snapshot(20, 0, 0, partitions=per_partition(25_000, 250))
    a = Reading(100.0, view(), {0: before}, disks({0: 0}), {})
    b = Reading(110.0, view(), {0: after}, disks({0: 0}), {})
    _, partitions = rows_between(a, b)
    by = {(r["broker_id"], r["partition"]): r for r in partitions}
    assert by[(0, 0)]["bytes_in_per_s"] == 2000.0 and by[(0, 0)]["produce_requests_per_s"] == 20.0
    assert by[(0, 1)]["bytes_in_per_s"] == 0.0

    restarted = snapshot(4, 0, 0, partitions=per_partition(400, 4))  # uptime went down
    _, partitions = rows_between(b, Reading(111.0, view(), {0: restarted}, disks({0: 0}), {}))
    by = {(r["broker_id"], r["partition"]): r for r in partitions}
    assert by[(0, 0)]["bytes_in_per_s"] == 100.0  # 400 bytes over the 4 s since the restart
