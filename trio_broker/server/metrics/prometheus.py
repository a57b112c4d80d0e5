"""The metrics snapshot in Prometheus' text format, with Kafka-style names.

Owns: ``SnapshotCollector`` (a ``prometheus_client`` custom collector that turns one
snapshot dict into metric families on every scrape: no second bookkeeping) and
``prometheus_text``. Names follow Kafka's MBeans as the JMX exporter spells them:
``kafka_network_*`` for request and processor metrics, ``kafka_server_*`` for handler
pools, connections, purgatories and topics, ``kafka_log_*`` for the log (the partitions'
and log dirs' series are ``prometheus_partitions``', the group coordinator's
``prometheus_groups``'). Distributions are
summaries (window quantiles, cumulative ``_count`` and ``_sum``, in ms). The list of names
is in docs/metrics.md.
Must not: compute figures of its own beyond renaming and relabelling.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .prometheus_clients import ClientSeries, ClientSeriesCollector, client_telemetry_families
from .prometheus_groups import group_families
from .prometheus_partitions import log_dir_families, open_files_families, partition_families
from .requests import PHASES

Figures = Callable[[], dict[str, Any]]

_QUANTILES = (("0.5", "p50"), ("0.75", "p75"), ("0.95", "p95"), ("0.99", "p99"), ("0.999", "p999"))
_TOPIC_COUNTERS = (
    ("messages_in", "Messages appended (MessagesInPerSec)"),
    ("bytes_in", "Bytes appended by producers (BytesInPerSec)"),
    ("bytes_out", "Bytes read by fetches (BytesOutPerSec)"),
    ("failed_produce_requests", "Failed produce requests (FailedProduceRequestsPerSec)"),
    ("failed_fetch_requests", "Failed fetch requests (FailedFetchRequestsPerSec)"),
)


def _summary(name: str, doc: str) -> Metric:
    return Metric(name, doc, "summary")


def _add_distribution(metric: Metric, labels: dict[str, str], dist: dict[str, Any]) -> None:
    empty = not dist["window_count"]
    for quantile, key in _QUANTILES:
        value = math.nan if empty else float(dist[key])
        metric.add_sample(metric.name, {**labels, "quantile": quantile}, value)
    metric.add_sample(metric.name + "_count", labels, float(dist["count"]))
    metric.add_sample(metric.name + "_sum", labels, float(dist["sum"]))


class SnapshotCollector(Collector):
    def __init__(self, figures: Figures, partition_series: Callable[[], bool]) -> None:
        self._figures = figures
        self._partition_series = partition_series

    def collect(self) -> Iterator[Metric]:
        s = self._figures()
        yield from _requests(s["requests"])
        yield from _pools(s["pools"])
        yield from _queues(s)
        yield from _connections(s["connections"])
        yield from _authentication(s["authentication"])
        yield from _topics(s["topics"])
        yield from _misc(s)
        if self._partition_series():
            yield from partition_families(s["partitions"])
        yield from log_dir_families(s["log_dirs"])
        yield from open_files_families(s["log"]["open_files"])


def _requests(requests: dict[str, Any]) -> Iterator[Metric]:
    total = CounterMetricFamily(
        "kafka_network_requests", "Requests (RequestsPerSec)", labels=["request", "version"]
    )
    errors = CounterMetricFamily(
        "kafka_network_request_errors",
        "Error codes in responses, NONE included (ErrorsPerSec)",
        labels=["request", "error"],
    )
    closed = CounterMetricFamily(
        "kafka_network_request_closed",
        "Requests that ended in a closed connection (counted as errors)",
        labels=["request"],
    )
    nbytes = CounterMetricFamily(
        "kafka_network_request_bytes", "Request bytes (RequestBytes)", labels=["request"]
    )
    handler = CounterMetricFamily(
        "kafka_network_request_handler_time_ms",
        "Handler time spent on a request type",
        labels=["request"],
    )
    rate = GaugeMetricFamily(
        "kafka_network_request_rate_per_second",
        "Requests per second over the window",
        labels=["request"],
    )
    phases = {
        phase: _summary(
            f"kafka_network_request_{phase}_time_ms",
            f"{_phase_title(phase)} of requests, ms (window quantiles)",
        )
        for phase in PHASES
    }
    for name, rt in requests.items():
        for version, n in rt["versions"].items():
            total.add_metric([name, version], n)
        for error, n in rt["errors_by_code"].items():
            errors.add_metric([name, error], n)
        closed.add_metric([name], rt["closed"])
        nbytes.add_metric([name], rt["bytes"])
        handler.add_metric([name], rt["handler_time_ms"])
        rate.add_metric([name], rt["rate_per_s"])
        for phase, metric in phases.items():
            _add_distribution(metric, {"request": name}, rt[f"{phase}_time_ms"])
    yield from (total, errors, closed, nbytes, handler, rate, *phases.values())


def _phase_title(phase: str) -> str:
    return "".join(w.capitalize() for w in phase.split("_")) + "Time"


def _pools(pools: dict[str, Any]) -> Iterator[Metric]:
    avg = GaugeMetricFamily(
        "kafka_server_request_handler_avg_idle_ratio",
        "Idle share of a handler pool over the window (RequestHandlerAvgIdlePercent)",
        labels=["plane"],
    )
    each = GaugeMetricFamily(
        "kafka_server_request_handler_idle_ratio",
        "Idle share of one handler over the window",
        labels=["plane", "handler"],
    )
    size = GaugeMetricFamily(
        "kafka_server_request_handler_pool_size", "Handlers in a pool", labels=["plane"]
    )
    busy = GaugeMetricFamily(
        "kafka_server_request_handler_busy", "Handlers running a request now", labels=["plane"]
    )
    usage = GaugeMetricFamily(
        "kafka_server_request_handler_pool_usage_ratio",
        "Share of a handler pool's time spent on a request type over the window (KIP-410)",
        labels=["plane", "request"],
    )
    for name, pool in pools.items():
        if name == "network":
            continue
        plane = pool["plane"]
        avg.add_metric([plane], pool["idle_ratio"])
        size.add_metric([plane], pool["size"])
        busy.add_metric([plane], pool["busy"])
        for h in pool["handlers"]:
            each.add_metric([plane, str(h["id"])], h["idle_ratio"])
        for request, share in pool["request_share"].items():
            usage.add_metric([plane, request], share)
    p_avg = GaugeMetricFamily(
        "kafka_network_processor_avg_idle_ratio",
        "Idle share of a listener's processors over the window (NetworkProcessorAvgIdlePercent)",
        labels=["listener"],
    )
    p_each = GaugeMetricFamily(
        "kafka_network_processor_idle_ratio",
        "Idle share of one processor over the window",
        labels=["listener", "processor"],
    )
    p_size = GaugeMetricFamily(
        "kafka_network_processor_pool_size", "Processors of a listener", labels=["listener"]
    )
    p_conns = GaugeMetricFamily(
        "kafka_network_processor_connections",
        "Connections a processor owns",
        labels=["listener", "processor"],
    )
    p_queue = GaugeMetricFamily(
        "kafka_network_processor_response_queue_size",
        "Response actions waiting in a processor's queue",
        labels=["listener", "processor"],
    )
    for listener, lp in pools["network"].items():
        p_avg.add_metric([listener], lp["idle_ratio"])
        p_size.add_metric([listener], lp["size"])
        for p in lp["processors"]:
            labels = [listener, str(p["id"])]
            p_each.add_metric(labels, p["idle_ratio"])
            p_conns.add_metric(labels, p["connections"])
            p_queue.add_metric(labels, p["response_queue_size"])
    yield from (avg, each, size, busy, usage, p_avg, p_each, p_size, p_conns, p_queue)


def _queues(s: dict[str, Any]) -> Iterator[Metric]:
    size = GaugeMetricFamily(
        "kafka_network_request_queue_size", "Requests queued (RequestQueueSize)", labels=["plane"]
    )
    capacity = GaugeMetricFamily(
        "kafka_network_request_queue_capacity", "queued.max.requests", labels=["plane"]
    )
    for plane, q in s["request_queue"].items():
        size.add_metric([plane], q["size"])
        capacity.add_metric([plane], q["capacity"])
    yield size
    yield capacity
    yield GaugeMetricFamily(
        "kafka_network_response_queue_size",
        "Response actions queued in all processors (ResponseQueueSize)",
        value=s["response_queue"]["size"],
    )
    purgatory = GaugeMetricFamily(
        "kafka_server_purgatory_size",
        "Delayed operations waiting (PurgatorySize)",
        labels=["purgatory"],
    )
    for name, p in s["purgatories"].items():
        purgatory.add_metric([name], p["size"])
    yield purgatory


def _connections(c: dict[str, Any]) -> Iterator[Metric]:
    count = GaugeMetricFamily(
        "kafka_server_connection_count", "Open connections", labels=["listener"]
    )
    for listener, n in c["by_listener"].items():
        count.add_metric([listener], n)
    yield count
    for key, doc in (
        ("created", "Connections accepted (connection-creation)"),
        ("closed", "Connections closed (connection-close)"),
        ("rejected", "Connections refused by limits"),
        ("reaped", "Idle connections closed (connections.max.idle.ms)"),
        ("evicted", "Least recently used connections closed over max.connections"),
        ("read_timeouts", "Requests too slow to arrive (request.read.timeout.ms)"),
        ("throttled_accepts", "Accepts delayed by max.connection.creation.rate"),
    ):
        yield CounterMetricFamily(f"kafka_server_connections_{key}", doc, value=c[key])
    yield GaugeMetricFamily(
        "kafka_server_connections_muted", "Connections muted now", value=c["muted"]
    )
    yield GaugeMetricFamily(
        "kafka_server_connections_throttled", "Connections throttled now", value=c["throttled"]
    )
    bad = CounterMetricFamily(
        "kafka_network_bad_requests", "Connections closed for bad input", labels=["kind"]
    )
    for kind, n in c["bad_requests"].items():
        bad.add_metric([kind], n)
    yield bad


def _authentication(a: dict[str, Any]) -> Iterator[Metric]:
    for key, name, doc in (
        ("successful", "successful_authentication", "Successful SASL authentications"),
        ("failed", "failed_authentication", "Failed SASL authentications"),
    ):
        family = CounterMetricFamily(
            f"kafka_server_{name}", doc + ", by mechanism", labels=["mechanism"]
        )
        for mechanism, n in a[f"{key}_by_mechanism"].items():
            family.add_metric([mechanism], n)
        yield family
    for key, doc in (
        ("reauthentications", "Successful SASL re-authentications (KIP-368)"),
        ("unauthenticated_requests", "Connections closed for a request before authentication"),
        ("expired_sessions", "Connections closed for a request after their session expired"),
        ("tls_handshakes", "Completed TLS handshakes"),
        ("tls_handshake_failures", "Failed TLS handshakes"),
    ):
        yield CounterMetricFamily(f"kafka_server_{key}", doc, value=a[key])


def _topics(t: dict[str, Any]) -> Iterator[Metric]:
    for key, doc in _TOPIC_COUNTERS:
        yield CounterMetricFamily(f"kafka_server_{key}", doc + ", all topics", value=t["all"][key])
        per_topic = CounterMetricFamily(f"kafka_server_topic_{key}", doc, labels=["topic"])
        for topic, counters in t["by_topic"].items():
            per_topic.add_metric([topic], counters[key])
        yield per_topic


def _misc(s: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily("kafka_server_uptime_seconds", "Uptime", value=s["uptime_s"])
    pool = s["memory_pool"]
    for key, name in (("available_bytes", "available"), ("used_bytes", "used")):
        if pool[key] is not None:
            yield GaugeMetricFamily(
                f"kafka_network_memory_pool_{name}_bytes",
                f"Request memory pool, bytes {name} (MemoryPool{name.capitalize()})",
                value=pool[key],
            )
    flush = _summary("kafka_log_flush_time_ms", "Log flush time, ms (LogFlushRateAndTimeMs)")
    _add_distribution(flush, {}, s["log"]["flush_time_ms"])
    yield flush
    yield from _event_loop(s["event_loop"])
    for phase in ("queue", "total"):
        every = _summary(
            f"trio_broker_all_requests_{phase}_time_ms",
            f"{_phase_title(phase)} of all requests together, ms (window quantiles)",
        )
        _add_distribution(every, {}, s["all_requests"][f"{phase}_time_ms"])
        yield every
    io = s["pools"].get("io", {})
    if "storage_threads" in io:
        yield from _io_threads(io)
    auth = s["authorization"]
    yield GaugeMetricFamily("kafka_server_acls", "ACL bindings stored", value=auth["acls"])
    denied = CounterMetricFamily(
        "kafka_server_authorization_denied",
        "Requests (or parts of requests) denied by the ACL authorizer",
        labels=["resource_type", "operation"],
    )
    for resource_type, by_op in auth["denied_by_resource"].items():
        for operation, count in by_op.items():
            denied.add_metric([resource_type, operation], count)
    yield denied
    failed = CounterMetricFamily(
        "kafka_server_broker_errors",
        "Requests the broker failed on (answered UNKNOWN_SERVER_ERROR, or closed), by type",
        labels=["request"],
    )
    for request, count in s["broker_errors"]["by_request"].items():
        failed.add_metric([request], count)
    yield failed
    fs = s["fetch_sessions"]
    yield GaugeMetricFamily(
        "kafka_server_fetch_session_cache_num_incremental_fetch_sessions",
        "Fetch sessions cached (FetchSessionCache NumIncrementalFetchSessions)",
        value=fs["sessions"],
    )
    yield GaugeMetricFamily(
        "kafka_server_fetch_session_cache_num_incremental_fetch_partitions_cached",
        "Partitions in cached fetch sessions (NumIncrementalFetchPartitionsCached)",
        value=fs["partitions"],
    )
    yield CounterMetricFamily(
        "kafka_server_fetch_session_cache_incremental_fetch_session_evictions",
        "Fetch sessions evicted for new ones (IncrementalFetchSessionEvictionsPerSec)",
        value=fs["evictions"],
    )
    fetches = CounterMetricFamily(
        "kafka_server_fetches", "Fetch requests by kind (KIP-227)", labels=["kind"]
    )
    for kind in ("incremental", "full", "sessionless"):
        fetches.add_metric([kind], fs[f"{kind}_fetches"])
    yield fetches
    yield from _log_cleaner(s["log_cleaner"])
    if s.get("cluster") is not None:
        yield from _cluster(s["cluster"])
    if s.get("transactions") is not None:
        yield from _transactions(s["transactions"])
    if s.get("groups") is not None:
        yield from group_families(s["groups"])
    yield from client_telemetry_families(s.get("client_telemetry"))


def _transactions(t: dict[str, Any]) -> Iterator[Metric]:
    lag = GaugeMetricFamily(
        "kafka_log_last_stable_offset_lag",
        "High watermark minus last stable offset of a led partition an open transaction holds back",
        labels=["topic", "partition"],
    )
    for name, value in sorted(t["lso_lag"].items()):
        topic, _, partition = name.rpartition("-")
        lag.add_metric([topic, partition], value)
    yield lag
    c = t.get("coordinator")
    if c is None:
        return
    yield GaugeMetricFamily(
        "kafka_transaction_coordinator_transactional_ids",
        "Transactional ids this broker's transaction coordinator holds",
        value=c["transactional_ids"],
    )
    yield GaugeMetricFamily(
        "kafka_transaction_coordinator_ongoing", "Ongoing transactions", value=c["ongoing"]
    )
    yield CounterMetricFamily(
        "kafka_transaction_coordinator_commits", "Transactions committed", value=c["commits"]
    )
    aborts = CounterMetricFamily(
        "kafka_transaction_coordinator_aborts",
        "Transactions aborted, by reason (client, timeout, fenced)",
        labels=["reason"],
    )
    for reason, count in sorted(c["aborts"].items()):
        aborts.add_metric([reason], count)
    yield aborts
    yield CounterMetricFamily(
        "kafka_transaction_coordinator_markers_written",
        "Transaction markers written to partitions",
        value=c["markers_written"],
    )
    given_up = CounterMetricFamily(
        "kafka_transaction_coordinator_marker_sends_given_up",
        "WriteTxnMarkers given up and sent again to the current leaders, by reason "
        "(timeout: request.timeout.ms, moved: the leadership moved)",
        labels=["reason"],
    )
    for reason, count in sorted(c.get("marker_sends_given_up", {}).items()):
        given_up.add_metric([reason], count)
    yield given_up


def _cluster(c: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "kafka_controller_active_controller_count",
        "1 on the broker that is the cluster's controller (ActiveControllerCount)",
        value=1 if c["active_controller"] else 0,
    )
    yield GaugeMetricFamily(
        "kafka_controller_offline_partitions_count",
        "Partitions without a leader (OfflinePartitionsCount)",
        value=c["offline_partitions"],
    )
    r = c["replication"]
    yield GaugeMetricFamily(
        "kafka_server_replica_manager_under_replicated_partitions",
        "Partitions led here whose ISR lacks a replica (UnderReplicatedPartitions)",
        value=r["under_replicated_partitions"],
    )
    yield CounterMetricFamily(
        "kafka_server_replica_manager_isr_shrinks",
        "ISR shrinks by this broker as leader since start (IsrShrinksPerSec)",
        value=r["isr_shrinks"],
    )
    yield CounterMetricFamily(
        "kafka_server_replica_manager_isr_expands",
        "ISR expansions by this broker as leader since start (IsrExpandsPerSec)",
        value=r["isr_expands"],
    )
    yield GaugeMetricFamily(
        "kafka_server_replica_fetcher_manager_max_lag",
        "Largest lag of a follower of a partition led here, in messages",
        value=r["max_follower_lag"],
    )
    yield from _throttles(r["throttles"])


def _throttles(t: dict[str, Any]) -> Iterator[Metric]:
    """The replication throttles (KIP-73), per side: leader and follower."""
    for side, what in (("leader", "sent as leader"), ("follower", "fetched as follower")):
        yield GaugeMetricFamily(
            f"kafka_server_{side}_replication_byte_rate",
            f"Bytes/s of throttled partitions {what} ({side.title()}Replication byte-rate)",
            value=t[side]["byte_rate"],
        )
    partitions = GaugeMetricFamily(
        "kafka_server_replication_throttled_partitions",
        "Partitions led (leader) or followed (follower) here that a throttle names",
        labels=["side"],
    )
    held = CounterMetricFamily(
        "kafka_server_replication_throttle_held_back",
        "Times a throttled partition's data was left out of a replica fetch",
        labels=["side"],
    )
    limit = GaugeMetricFamily(
        "kafka_server_replication_throttled_rate",
        "The throttle's bytes/s ({leader,follower}.replication.throttled.rate), if set",
        labels=["side"],
    )
    for side in ("leader", "follower"):
        partitions.add_metric([side], t[side]["throttled_partitions"])
        held.add_metric([side], t[side]["held_back"])
        if t[side]["rate_limit"] is not None:
            limit.add_metric([side], t[side]["rate_limit"])
    yield partitions
    yield held
    yield limit


def _log_cleaner(lc: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "kafka_log_cleaner_max_dirty_percent",
        "Largest dirty share of a compacted log's cleanable bytes, % (max-dirty-percent)",
        value=100 * lc["max_dirty_ratio"],
    )
    yield CounterMetricFamily(
        "kafka_log_cleaner_passes", "Cleaning passes finished since start", value=lc["passes"]
    )
    yield CounterMetricFamily(
        "kafka_log_cleaner_bytes_cleaned",
        "Bytes read by cleaning passes since start",
        value=lc["bytes_cleaned"],
    )
    if lc["last_duration_ms"] is not None:
        yield GaugeMetricFamily(
            "kafka_log_cleaner_last_duration_ms",
            "How long the last cleaning pass took, ms",
            value=lc["last_duration_ms"],
        )
        yield GaugeMetricFamily(
            "kafka_log_cleaner_last_run_timestamp_ms",
            "When the last cleaning pass ended (epoch ms)",
            value=lc["last_run_ms"],
        )
    ratio = GaugeMetricFamily(
        "kafka_log_cleaner_partition_dirty_ratio",
        "Dirty share of the partition's cleanable bytes",
        labels=["topic", "partition"],
    )
    cleaned = CounterMetricFamily(
        "kafka_log_cleaner_partition_bytes_cleaned",
        "Bytes read by the partition's cleaning passes since start",
        labels=["topic", "partition"],
    )
    for name, p in lc["partitions"].items():
        topic, _, partition = name.rpartition("-")
        ratio.add_metric([topic, partition], p["dirty_ratio"])
        cleaned.add_metric([topic, partition], p["bytes_cleaned"])
    yield ratio
    yield cleaned


def _event_loop(loop: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "trio_broker_event_loop_busy_ratio",
        "Share of wall time the event loop ran tasks instead of waiting for I/O, over the "
        "window (1: CPU-bound, one CPU)",
        value=loop["busy_ratio"],
    )
    yield GaugeMetricFamily(
        "trio_broker_event_loop_last_second_busy_ratio",
        "The event loop's busy ratio over the last second",
        value=loop["last_second"]["busy_ratio"],
    )
    stall = _summary(
        "trio_broker_event_loop_stall_ms",
        "Time the event loop ran without looking at its sockets (one scheduler run), ms",
    )
    _add_distribution(stall, {}, loop["stall_ms"])
    yield stall
    for key in ("stall_p99_ms", "stall_max_ms"):
        yield GaugeMetricFamily(
            f"trio_broker_event_loop_last_second_{key}",
            f"Event loop stall over the last second, {key[6:9]}, ms",
            value=loop["last_second"][key],
        )


def _io_threads(io: dict[str, Any]) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "trio_broker_io_threads", "Storage worker threads (num.io.threads)", value=io["size"]
    )
    yield GaugeMetricFamily(
        "trio_broker_io_storage_busy", "Storage jobs on an io thread now", value=io["storage_busy"]
    )
    yield GaugeMetricFamily(
        "trio_broker_io_storage_waiting",
        "Storage jobs waiting for an io thread now",
        value=io["storage_waiting"],
    )
    yield GaugeMetricFamily(
        "trio_broker_io_storage_idle_ratio",
        "Share of the io threads' time not spent on storage work, over the window",
        value=io["storage_idle_ratio"],
    )
    for key, doc in (
        ("storage_queue_time_ms", "Time a request's storage job waited for an io thread, ms"),
        ("storage_time_ms", "Time a request's storage job ran on an io thread, ms"),
    ):
        metric = _summary(f"trio_broker_io_{key}", doc)
        _add_distribution(metric, {}, io[key])
        yield metric


def registry_for(
    figures: Figures,
    partition_series: Callable[[], bool] = lambda: True,
    client_series: ClientSeries = list,
) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(figures, partition_series))
    registry.register(ClientSeriesCollector(client_series))
    return registry


def prometheus_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
