"""DescribeLogDirs (key 35): the log directories, their partitions and sizes (KIP-113)."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class DescribeLogDirsRequest(Request, api_key=35, versions="1-5", flexible="2+"):
    class DescribableLogDirTopic(Struct):
        topic: str = field("string")
        partitions: list[int] = field("[]int32")

    topics: list[DescribableLogDirTopic] | None = field(
        array(DescribableLogDirTopic), nullable="0+"
    )


class DescribeLogDirsResponse(Response, api_key=35, versions="1-5", flexible="2+"):
    class DescribeLogDirsResult(Struct):
        class DescribeLogDirsTopic(Struct):
            class DescribeLogDirsPartition(Struct):
                partition_index: int = field("int32")
                partition_size: int = field("int64")
                offset_lag: int = field("int64")
                is_future_key: bool = field("bool")

            name: str = field("string")
            partitions: list[DescribeLogDirsPartition] = field(array(DescribeLogDirsPartition))

        error_code: int = field("int16")
        log_dir: str = field("string")
        topics: list[DescribeLogDirsTopic] = field(array(DescribeLogDirsTopic))
        total_bytes: int = field("int64", "4+", default=-1, ignorable=True)
        usable_bytes: int = field("int64", "4+", default=-1, ignorable=True)
        is_cordoned: bool = field("bool", "5+", default=False, ignorable=True)  # KIP-1066

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16", "3+", ignorable=True)
    results: list[DescribeLogDirsResult] = field(array(DescribeLogDirsResult))


DESCRIBE_LOG_DIRS = register(DescribeLogDirsRequest, DescribeLogDirsResponse)
