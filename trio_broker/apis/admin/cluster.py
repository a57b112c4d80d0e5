"""DescribeCluster v0-v2 (key 60) and DescribeLogDirs v1-v5 (key 35): the cluster and
this broker's log directories, for admin clients.

DescribeCluster (KIP-700) answers the brokers (their endpoints on the request's listener),
the controller and the cluster id, as Metadata does (waiting as it does, in a ZooKeeper
cluster, for the controller to have described the cluster), and on request the principal's
authorized operations on the cluster; v1's endpoint type 2 (KRaft controllers) is
UNSUPPORTED_ENDPOINT_TYPE, as a ZooKeeper-era or broker listener answers it. v2 (KIP-1073)
says of each broker whether it is fenced, and lists fenced brokers only when asked: a
broker of a ZooKeeper cluster is live once registered and never fenced (KRaft's state), so
every broker is answered unfenced either way.
DescribeLogDirs (KIP-113) answers each log dir with the partitions it holds (all, or those
asked for), their sizes, offset lag 0 (the high watermark is the log end here) and, from
v4, the volume's total and usable bytes; v5's IsCordoned (KIP-1066) is false, as no log
dir is ever cordoned here (there is no cordoning). It needs DESCRIBE on the cluster, else
CLUSTER_AUTHORIZATION_FAILED (v3+) and no dirs, as Kafka.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import item_type
from ..authz import CLUSTER, NOT_REQUESTED_OPERATIONS, Op, authorized_operations, cluster_allowed
from ..context import RequestContext
from ..metadata import park_until_described

_CLUSTER = spec_for(ApiKey.DescribeCluster)
_DIRS = spec_for(ApiKey.DescribeLogDirs)
assert _CLUSTER is not None and _DIRS is not None
ClusterResponse: Any = _CLUSTER.response
Broker: Any = item_type(ClusterResponse, "brokers")
DirsResponse: Any = _DIRS.response
DirResult: Any = item_type(DirsResponse, "results")
DirTopic: Any = item_type(DirResult, "topics")
DirPartition: Any = item_type(DirTopic, "partitions")

BROKERS, CONTROLLERS = 1, 2


async def describe_cluster(ctx: RequestContext, req: Any) -> Any:
    endpoint_type = req.endpoint_type if ctx.api_version >= 1 else BROKERS
    if endpoint_type != BROKERS:
        return ClusterResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"endpoint type {endpoint_type}: this broker describes brokers (1)",
            endpoint_type=endpoint_type,
            cluster_id=ctx.broker.cluster_id,
            brokers=[],
        )
    if not ctx.broker.cluster_described:
        return park_until_described(ctx, lambda: _describe_cluster(ctx, req))
    return await _describe_cluster(ctx, req)


async def _describe_cluster(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    return ClusterResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=ErrorCode.NONE,
        endpoint_type=BROKERS,
        cluster_id=broker.cluster_id,
        controller_id=broker.controller_id,
        brokers=[
            Broker(broker_id=e.node_id, host=e.host, port=e.port, rack=e.rack)
            for e in broker.endpoints(ctx.listener)
        ],
        cluster_authorized_operations=authorized_operations(ctx, CLUSTER, "kafka-cluster")
        if req.include_cluster_authorized_operations
        else NOT_REQUESTED_OPERATIONS,
    )


async def describe_log_dirs(ctx: RequestContext, req: Any) -> Any:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return DirsResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            results=[],
        )
    wanted = None if req.topics is None else {t.topic: t.partitions for t in req.topics}
    results = []
    for d in await ctx.broker.log_dirs(wanted):
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for topic, partition, size in d.partitions:
            by_topic[topic].append(
                DirPartition(
                    partition_index=partition,
                    partition_size=size,
                    offset_lag=0,
                    is_future_key=False,
                )
            )
        results.append(
            DirResult(
                error_code=d.error_code,
                log_dir=d.path,
                topics=[DirTopic(name=t, partitions=ps) for t, ps in sorted(by_topic.items())],
                total_bytes=d.total_bytes,
                usable_bytes=d.usable_bytes,
            )
        )
    return DirsResponse(
        throttle_time_ms=ctx.throttle_time_ms, error_code=ErrorCode.NONE, results=results
    )
