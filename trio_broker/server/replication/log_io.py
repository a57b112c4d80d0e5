"""The blocking halves of the data path, run on io threads by ``ReplicaManager``.

Owns: ``append`` (validate a producer's batches, recompress to the topic's codec, check
keys of a compacted topic, append), ``diverging`` (KIP-595's epoch check at the leader)
and ``read`` (whole batches up to the high watermark, the last stable offset for
read_committed, with the aborted transactions overlapping what was read, or the log end
for a follower, made resident in the page cache). Producers may not write control batches
(INVALID_RECORD): the broker writes transaction markers itself. Each works on one
partition and hands its failure back as a value, so one partition's error never costs the
others theirs.
"""

from __future__ import annotations

import dataclasses
import time

from ...log.errors import LogError, LogStorageError
from ...log.page_cache import make_resident
from ...log.partition_log import PartitionLog
from ...log.producer_state import ProducerStateError
from ...log.results import AppendInfo, ReadInfo
from ...log.storage_hook import before_storage_operation
from ...protocol.errors import ErrorCode
from ...records.errors import RecordsError
from ...records.keys import check_keys
from ...records.recompress import recompress
from ...records.validation import validate_batches


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def append(
    plog: PartitionLog, records: memoryview, epoch: int, *, one_batch: bool = False
) -> AppendInfo | Exception:
    """Validate and append; ``one_batch``: a producer's records, which Kafka takes as
    exactly one batch per partition (Produce v3+), INVALID_RECORD otherwise."""
    before_storage_operation()
    try:
        config = plog.config
        validated = validate_batches(records, max_batch_bytes=config.max_message_bytes)
        if one_batch and validated.has_control_batch:
            raise RecordsError(
                ErrorCode.INVALID_RECORD, "clients are not allowed to write control records"
            )
        if one_batch and len(validated.batches) != 1:
            raise RecordsError(
                ErrorCode.INVALID_RECORD,
                f"a produce request must hold exactly one record batch per partition; "
                f"it has {len(validated.batches)}",
            )
        if config.compression_type != "producer":
            changed = recompress(validated, config.compression_type, config.compression_level)
            if changed is not None:
                validated = validate_batches(
                    memoryview(changed), max_batch_bytes=config.max_message_bytes
                )
        if config.compact:
            check_keys(validated, plog.directory.name)
        return plog.append(validated, leader_epoch=epoch, now_ms=now_ms())
    except (RecordsError, ProducerStateError, LogError) as exc:
        return exc


def diverging(plog: PartitionLog, last_fetched_epoch: int, offset: int) -> tuple[int, int] | None:
    """(epoch, end offset) if the fetcher's log, which reached ``offset`` in
    ``last_fetched_epoch``, diverges from this one (KIP-595's check, as Kafka's leader)."""
    epoch, end = plog.end_offset_for_epoch(last_fetched_epoch)
    return (epoch, end) if epoch < last_fetched_epoch or end < offset else None


def read(
    plog: PartitionLog, offset: int, max_bytes: int, min_one: bool, committed_only: bool | None
) -> ReadInfo | Exception:
    """``committed_only`` None: a follower's read, up to the log end."""
    before_storage_operation()
    try:
        if committed_only is None:
            limit = None
        else:
            limit = plog.last_stable_offset if committed_only else plog.high_watermark
        info = plog.read(offset, max_bytes, min_one_batch=min_one, max_offset=limit)
    except LogError as exc:
        return exc
    if committed_only:
        aborted = plog.aborted_between(offset, info.next_fetch_offset) if info.size_bytes else []
        info = dataclasses.replace(info, aborted_transactions=aborted)
    try:
        make_resident(info.regions)
    except OSError as exc:
        info.release()
        return LogStorageError(f"{plog.directory.name}: read failed: {exc}")
    return info
