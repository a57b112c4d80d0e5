"""The snapshot's ``groups`` section as Prometheus metric families.

Owns: ``group_families``: the groups this broker coordinates by protocol and state
(``kafka_group_coordinator_groups``, Kafka's group-count / classic-group-count /
consumer-group-count gauges of ``group-coordinator-metrics`` as one family), rebalances
since start by protocol (``kafka_group_coordinator_rebalances_total``: completed ones for
classic groups, group epoch bumps for consumer groups) and the server-side assignor's runs
(``kafka_group_coordinator_consumer_assignments_total``, their time in all and the longest).
Must not: compute figures of its own beyond renaming and relabelling.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric


def group_families(g: dict[str, Any]) -> Iterator[Metric]:
    groups = GaugeMetricFamily(
        "kafka_group_coordinator_groups",
        "Groups this broker coordinates, by protocol (classic, consumer) and state",
        labels=["protocol", "state"],
    )
    rebalances = CounterMetricFamily(
        "kafka_group_coordinator_rebalances",
        "Rebalances since start: classic groups' completed ones, consumer groups' group "
        "epoch bumps",
        labels=["protocol"],
    )
    for protocol in ("classic", "consumer"):
        for state, count in sorted(g[protocol]["groups"].items()):
            groups.add_metric([protocol, state], count)
        rebalances.add_metric([protocol], g[protocol]["rebalances"])
    yield groups
    yield rebalances
    c = g["consumer"]
    yield CounterMetricFamily(
        "kafka_group_coordinator_consumer_assignments",
        "Target assignments computed by the server-side assignor (uniform, range)",
        value=c["assignments"],
    )
    yield CounterMetricFamily(
        "kafka_group_coordinator_consumer_assignment_time_ms",
        "Time the server-side assignor took, all its runs together (ms)",
        value=c["assignment_time_ms"]["total"],
    )
    yield GaugeMetricFamily(
        "kafka_group_coordinator_consumer_assignment_time_ms_max",
        "The longest run of the server-side assignor since start (ms)",
        value=c["assignment_time_ms"]["max"],
    )
