"""DescribeCluster (key 60): brokers, controller and cluster id, for admin clients (KIP-700)."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class DescribeClusterRequest(Request, api_key=60, versions="0-2", flexible="0+"):
    include_cluster_authorized_operations: bool = field("bool")
    endpoint_type: int = field("int8", "1+", default=1)
    include_fenced_brokers: bool = field("bool", "2+")  # KIP-1073


class DescribeClusterResponse(Response, api_key=60, versions="0-2", flexible="0+"):
    class Broker(Struct):
        broker_id: int = field("int32")
        host: str = field("string")
        port: int = field("int32")
        rack: str | None = field("string", nullable="0+", default=None)
        is_fenced: bool = field("bool", "2+")  # KIP-1073

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    endpoint_type: int = field("int8", "1+", default=1)
    cluster_id: str = field("string")
    controller_id: int = field("int32", default=-1)
    brokers: list[Broker] = field(array(Broker))
    cluster_authorized_operations: int = field("int32", default=-(2**31))


DESCRIBE_CLUSTER = register(DescribeClusterRequest, DescribeClusterResponse)
