"""The snapshot's ``partitions`` and ``log_dirs`` sections as Prometheus metric families.

Owns: ``partition_families`` (one series per partition replica held, labels ``topic`` and
``partition``: Kafka's ``kafka.log:type=Log`` gauges as the JMX exporter names them,
``kafka_log_log_size``, ``kafka_log_log_start_offset``, ``kafka_log_log_end_offset``;
per-partition BrokerTopicMetrics-style counters, ``kafka_server_partition_*_total``; a
follower's lag, Kafka's ``kafka_server_fetcherlagmetrics_consumerlag``; and the rest under
``trio_broker_partition_*``), ``log_dir_families`` (per log dir, label ``path``) and
``open_files_families`` (``log.open_files``, the LRU of ``log.open.files.max``, named as if
Kafka's ``kafka.log:type=LogManager`` had them: ``kafka_log_logmanager_*``; Kafka keeps
every segment open and has no such MBean).
Whether the partition series are exposed is ``metrics.partition.prometheus.enable``
(``SnapshotCollector`` asks at every scrape); the log dirs' always are.
Must not: compute figures of its own beyond renaming and relabelling.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

_LABELS = ["topic", "partition"]
_GAUGES = (
    ("kafka_log_log_size", "log_size_bytes", "Bytes of the partition's log (kafka.log Log Size)"),
    ("kafka_log_log_start_offset", "log_start_offset", "The log's first offset (LogStartOffset)"),
    ("kafka_log_log_end_offset", "log_end_offset", "The log's end offset (LogEndOffset)"),
    ("trio_broker_partition_high_watermark", "high_watermark", "The partition's high watermark"),
    (
        "kafka_server_fetcherlagmetrics_consumerlag",
        "lag_messages",
        "Follower: messages behind the leader's high watermark as last fetched (ConsumerLag); "
        "leader: 0",
    ),
)
_COUNTERS = (
    ("messages_in", "Messages produced to the partition while led here"),
    ("bytes_in", "Bytes produced to the partition while led here"),
    ("bytes_out", "Bytes fetched from the partition by consumers while led here"),
    ("produce_requests", "Produce requests that appended to the partition while led here"),
    ("fetch_requests", "Consumer fetch requests answered for the partition while led here"),
    ("replication_bytes_in", "Bytes fetched from the partition's leader, as follower"),
    ("replication_bytes_out", "Bytes sent to the partition's followers, as leader"),
)


def partition_families(partitions: list[dict[str, Any]]) -> Iterator[Metric]:
    gauges = [(GaugeMetricFamily(name, doc, labels=_LABELS), key) for name, key, doc in _GAUGES]
    counters = [
        (CounterMetricFamily(f"kafka_server_partition_{key}", doc, labels=_LABELS), key)
        for key, doc in _COUNTERS
    ]
    families: list[tuple[GaugeMetricFamily | CounterMetricFamily, str]] = [*gauges, *counters]
    leader = GaugeMetricFamily(
        "trio_broker_partition_is_leader",
        "1 where this broker leads the partition, 0 where it follows",
        labels=_LABELS,
    )
    follower_lag = GaugeMetricFamily(
        "trio_broker_partition_follower_lag_messages",
        "Leader: messages a follower is behind the log end (its last fetch offset)",
        labels=[*_LABELS, "follower"],
    )
    for p in partitions:
        labels = [p["topic"], str(p["partition"])]
        for family, key in families:
            family.add_metric(labels, p[key])
        leader.add_metric(labels, 1 if p["role"] == "leader" else 0)
        for follower, lag in p["follower_lag_messages"].items():
            follower_lag.add_metric([*labels, follower], lag)
    yield from (family for family, _ in gauges)
    yield from (family for family, _ in counters)
    yield leader
    yield follower_lag


def log_dir_families(log_dirs: list[dict[str, Any]]) -> Iterator[Metric]:
    for key, doc in (
        ("size_bytes", "Bytes of the partition logs in a log dir"),
        ("total_bytes", "Bytes of the log dir's volume (statvfs, as last surveyed)"),
        ("free_bytes", "Bytes free for the broker on the log dir's volume (as last surveyed)"),
    ):
        family = GaugeMetricFamily(f"trio_broker_log_dir_{key}", doc, labels=["path"])
        for d in log_dirs:
            family.add_metric([d["path"]], d[key])
        yield family


def open_files_families(f: dict[str, Any]) -> Iterator[Metric]:
    prefix = "kafka_log_logmanager"
    yield GaugeMetricFamily(
        f"{prefix}_open_segment_files",
        "Segment file descriptors the logs hold now (counted against log.open.files.max)",
        value=f["held"],
    )
    if f["max"] is not None:  # (no series when log.open.files.max is -1: no bound)
        yield GaugeMetricFamily(
            f"{prefix}_open_segment_files_max", "log.open.files.max in force", value=f["max"]
        )
    yield GaugeMetricFamily(
        f"{prefix}_open_segments", "Segments with files open now", value=f["segments_open"]
    )
    yield CounterMetricFamily(
        f"{prefix}_segment_evictions",
        "Segments whose files log.open.files.max closed (least recently used)",
        value=f["evictions"],
    )
    yield CounterMetricFamily(
        f"{prefix}_segment_reopens",
        "Segments whose files were opened again after log.open.files.max closed them",
        value=f["reopens"],
    )
