"""Partition logs on disk in Kafka's layout. Blocking I/O; nothing here imports trio.

The server calls these from worker threads; every public method is thread-safe.
``PartitionLog`` is one partition, ``LogManager`` all of them across log directories.
"""

from .config import LogConfig
from .errors import (
    LogClosed,
    LogError,
    LogStorageError,
    OffsetOutOfRange,
    ReplicaGap,
    ReplicaOverlap,
)
from .handles import FileHandle
from .loader import LoadStats
from .manager import CLEAN_SHUTDOWN_FILE, LogManager, parse_partition_dir, partition_dir_name
from .partition_log import PartitionLog
from .partition_metadata import read_partition_metadata, write_partition_metadata
from .results import AppendInfo, ReadInfo

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "AppendInfo",
    "FileHandle",
    "LoadStats",
    "LogClosed",
    "LogConfig",
    "LogError",
    "LogManager",
    "LogStorageError",
    "OffsetOutOfRange",
    "PartitionLog",
    "ReadInfo",
    "ReplicaGap",
    "ReplicaOverlap",
    "parse_partition_dir",
    "partition_dir_name",
    "read_partition_metadata",
    "write_partition_metadata",
]
