"""The JSON metrics snapshot, schema ``trio-broker.metrics/1`` (docs/metrics.md).

Owns: ``build_snapshot``, which reads every figure of a ``BrokerMetrics`` (and the live
state of the parts it watches: pools, queues, connections, purgatories) into one plain,
JSON-ready dict. The shape is a contract with readers outside this package (the admin
API, the Spark jobs): fields may be added, never renamed or removed; the JSON Schema
``docs/metrics.schema.json`` checks it. Counters are cumulative since start; a reader
derives rates from two snapshots. Times are in milliseconds, distributions carry window
percentiles and max plus window and cumulative counts and sums.
Must not: change any figure (except through ``BrokerMetrics.snapshot``'s ``seq``).
"""

from __future__ import annotations

import collections
import datetime
from typing import TYPE_CHECKING, Any

from ...network.mute import MuteState
from ...protocol.errors import ErrorCode
from .requests import PHASES, RequestTypeMetrics
from .window import read_merged

if TYPE_CHECKING:
    from .broker_metrics import BrokerMetrics

SCHEMA = "trio-broker.metrics/1"
_US_TO_MS = 1e-3
_THROTTLED = frozenset(
    {MuteState.MUTED_AND_THROTTLED, MuteState.MUTED_AND_THROTTLED_AND_RESPONSE_PENDING}
)


def build_snapshot(metrics: BrokerMetrics, seq: int) -> dict[str, Any]:
    window = metrics.window
    now = window.clock()
    epoch = window.epoch(now)
    server = metrics.socket_server
    uptime_s = max(0.0, (now - metrics.started_ns) / 1e9)
    # the span the window figures cover: the live slots, and no more than the uptime
    window_s = min(window.span_ns, max(0, now - window.start_ns(epoch))) / 1e9
    window_s = min(window_s, uptime_s)
    rate_span_s = max(1e-3, window_s)
    by_listener = {
        name: sum(p.response_queue_size for p in lr.processors)
        for name, lr in server.listeners.items()
    }
    partitions, log_dirs = metrics.partition_figures()
    return {
        "schema": SCHEMA,
        "broker_id": metrics.broker_id,
        "seq": seq,
        "ts": _iso_now(metrics),
        "uptime_s": uptime_s,
        "window_s": window_s,
        "metrics_enabled": metrics.enabled,
        "pools": _pools(metrics, now, epoch),
        "request_queue": {
            plane: {"size": channel.size, "capacity": channel.capacity}
            for plane, channel in _request_channels(server).items()
        },
        "response_queue": {"size": sum(by_listener.values()), "by_listener": by_listener},
        "connections": _connections(metrics),
        "authentication": _authentication(metrics),
        "requests": {
            name: _request_type(rt, epoch, rate_span_s)
            for name, rt in sorted(metrics.requests.by_name.items())
        },
        "all_requests": _all_requests(metrics, epoch),
        "topics": {
            "all": metrics.topics.total.as_dict(),
            "by_topic": {name: c.as_dict() for name, c in sorted(metrics.topics.by_topic.items())},
        },
        "purgatories": {
            name: {
                "size": p.size,
                "completed": p.completed_count,
                "expired": p.expired_count,
            }
            for name, p in sorted(metrics.purgatories().items())
        },
        "memory_pool": metrics.memory_pool(),
        "log": {
            "flush_time_ms": metrics.log_flush.read(epoch).scaled(_US_TO_MS),
            "open_files": metrics.open_files(),
        },
        "event_loop": metrics.event_loop.figures(now),
        "authorization": metrics.authorization(),
        "broker_errors": _broker_errors(metrics),
        "fetch_sessions": _fetch_sessions(metrics),
        "log_cleaner": metrics.log_cleaner(),
        "cluster": metrics.cluster(),
        "transactions": metrics.transactions(),
        "groups": metrics.groups(),
        "client_telemetry": metrics.client_telemetry(),
        "partitions": partitions,
        "log_dirs": log_dirs,
    }


def _all_requests(metrics: BrokerMetrics, epoch: int) -> dict[str, Any]:
    """Every request type's queue and total time read as one distribution (the request
    channel's wait whatever the request: an exact window percentile, not a mean of the
    types' percentiles)."""
    types = list(metrics.requests.by_name.values())
    return {
        "count": sum(rt.count for rt in types),
        "queue_time_ms": read_merged([rt.queue for rt in types], epoch).scaled(_US_TO_MS),
        "total_time_ms": read_merged([rt.total for rt in types], epoch).scaled(_US_TO_MS),
    }


def _fetch_sessions(metrics: BrokerMetrics) -> dict[str, Any]:
    """KIP-227's cache (Kafka's FetchSessionCache metrics) and the fetches by kind."""
    cache = metrics.fetch_sessions
    if cache is None:
        return {
            "sessions": 0,
            "partitions": 0,
            "slots": 0,
            "evictions": 0,
            "incremental_fetches": 0,
            "full_fetches": 0,
            "sessionless_fetches": 0,
        }
    return {
        "sessions": len(cache.sessions),
        "partitions": cache.partitions,
        "slots": cache.slots(),
        "evictions": cache.evictions,
        "incremental_fetches": cache.incremental_fetches,
        "full_fetches": cache.full_fetches,
        "sessionless_fetches": cache.sessionless_fetches,
    }


def _broker_errors(metrics: BrokerMetrics) -> dict[str, Any]:
    """Requests the broker failed on (answered UNKNOWN_SERVER_ERROR or closed), since start."""
    handler = metrics.request_handler
    failures = dict(sorted(handler.failures.items())) if handler is not None else {}
    return {"total": sum(failures.values()), "by_request": failures}


def _iso_now(metrics: BrokerMetrics) -> str:
    ts = datetime.datetime.fromtimestamp(metrics.wall_clock(), datetime.UTC)
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _request_channels(server: Any) -> dict[str, Any]:
    channels = {"data": server.data_requests}
    if server.control_requests is not None:
        channels["control"] = server.control_requests
    return channels


def _pools(metrics: BrokerMetrics, now: int, epoch: int) -> dict[str, Any]:
    pools: dict[str, Any] = {}
    usage = _handler_usage(metrics, epoch)
    for name, sampler in metrics.handler_samplers.items():
        pool = sampler.pool
        figures = sampler.idle(now)
        plane = metrics.pool_planes[name]
        exist = figures.existence_ns
        pools[name] = {
            "plane": plane,
            "size": pool.size,
            "busy": pool.busy,
            "idle_ratio": figures.idle_ratio,
            "handlers": [
                {
                    "id": h.id,
                    "idle_ratio": figures.units.get(h.id, 1.0),
                    "busy": h.current is not None,
                }
                for h in pool.handlers
            ],
            "request_share": {
                request: min(1.0, used_ns / exist) if exist else 0.0
                for request, used_ns in sorted(usage.get(plane, {}).items())
            },
        }
        if name == "io" and metrics.io_sampler is not None:
            pools[name].update(_io_threads(metrics, now, epoch, figures.idle_ratio))
    network: dict[str, Any] = {}
    for name, processors in metrics.processor_samplers.items():
        lr = processors.listener
        figures = processors.idle(now)
        network[name] = {
            "plane": lr.plane,
            "size": len(lr.processors),
            "idle_ratio": figures.idle_ratio,
            "processors": [
                {
                    "id": p.id,
                    "idle_ratio": figures.units.get(p.id, 1.0),
                    "connections": len(p.connections),
                    "response_queue_size": p.response_queue_size,
                }
                for p in lr.processors
            ],
        }
    pools["network"] = network
    return pools


def _io_threads(
    metrics: BrokerMetrics, now: int, epoch: int, handler_idle: float
) -> dict[str, Any]:
    """The io pool's worker threads: its idle ratio is theirs (time not spent on storage
    work), the handler tasks' own ratio stays beside it as ``handler_idle_ratio``."""
    io = metrics.io_pool
    assert io is not None and metrics.io_sampler is not None
    idle = metrics.io_sampler.idle(now)
    return {
        "size": io.size,
        "handler_tasks": len(metrics.handler_samplers["io"].pool.handlers),
        "idle_ratio": idle,
        "handler_idle_ratio": handler_idle,
        "storage_threads": io.size,
        "storage_busy": io.busy,
        "storage_waiting": io.waiting,
        "storage_idle_ratio": idle,
        "storage_queue_time_ms": metrics.storage_queue_time.read(epoch).scaled(_US_TO_MS),
        "storage_time_ms": metrics.storage_time.read(epoch).scaled(_US_TO_MS),
    }


def _handler_usage(metrics: BrokerMetrics, epoch: int) -> dict[str, dict[str, int]]:
    """Handler ns per plane and request type in the window (KIP-410's pool usage)."""
    usage: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for name, rt in metrics.requests.by_name.items():
        for plane, handler in rt.handler.items():
            usage[plane][name] = handler.read(epoch) * 1000
    return usage


def _connections(metrics: BrokerMetrics) -> dict[str, Any]:
    server = metrics.socket_server
    counters = server.counters
    conns = server.all_connections()
    states = collections.Counter(c.mute_state.value for c in conns)
    return {
        "count": len(conns),
        "created": counters.connections_opened,
        "closed": counters.connections_closed,
        "rejected": counters.connections_rejected,
        "reaped": counters.connections_reaped,
        "evicted": counters.connections_evicted,
        "read_timeouts": counters.request_read_timeouts,
        "throttled_accepts": server.quotas.throttled_accepts,
        "muted": sum(1 for c in conns if c.mute_state is not MuteState.NOT_MUTED),
        "throttled": sum(1 for c in conns if c.mute_state in _THROTTLED),
        "by_mute_state": {s.value: states.get(s.value, 0) for s in MuteState},
        "by_listener": {name: len(lr.connections) for name, lr in server.listeners.items()},
        "bad_requests": dict(sorted(counters.bad_requests.items())),
    }


def _authentication(metrics: BrokerMetrics) -> dict[str, Any]:
    """SASL authentications (Kafka's successful/failed-authentication-total) and TLS
    handshakes, since start."""
    a = metrics.socket_server.auth_counters
    return {
        "successful": sum(a.successful.values()),
        "failed": sum(a.failed.values()),
        "successful_by_mechanism": dict(sorted(a.successful.items())),
        "failed_by_mechanism": dict(sorted(a.failed.items())),
        "reauthentications": a.reauthentications,
        "unauthenticated_requests": a.unauthenticated_requests,
        "expired_sessions": a.expired_sessions,
        "tls_handshakes": a.tls_handshakes,
        "tls_handshake_failures": a.tls_handshake_failures,
    }


def _request_type(rt: RequestTypeMetrics, epoch: int, rate_span_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "count": rt.count,
        "errors": rt.error_count,
        "closed": rt.closed,
        "bytes": rt.bytes,
        "handler_time_ms": round(rt.handler_time_us * _US_TO_MS, 3),
        "versions": {str(v): n for v, n in sorted(rt.versions.items())},
        "errors_by_code": {ErrorCode.name_of(code): n for code, n in sorted(rt.errors.items())},
    }
    for phase in PHASES:
        out[f"{phase}_time_ms"] = rt.phase(phase).read(epoch).scaled(_US_TO_MS)
    out["rate_per_s"] = out["total_time_ms"]["window_count"] / rate_span_s
    return out
