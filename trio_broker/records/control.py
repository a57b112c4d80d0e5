"""Transaction markers: the control records that end a transaction in a partition.

Owns: ``EndTxnMarker`` (commit or abort, and the coordinator epoch that wrote it),
``marker_batch`` (the bytes of the control batch a leader appends: attributes bits 4 and 5
set, one record whose key is version int16 0 + type int16, 0 abort, 1 commit, and whose
value is version int16 0 + coordinator epoch int32) and ``read_marker`` / ``markers_of``
(the marker a stored control batch holds; None for any other control record, such as
KRaft's). No I/O, no trio.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from .builder import Record, build_batch
from .errors import RecordsError
from .reader import Buffer, iter_records
from .validation import BatchSlice

CONTROL_KEY = struct.Struct(">hh")  # version, type
MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch
ABORT, COMMIT = 0, 1


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    commit: bool
    coordinator_epoch: int


def marker_batch(
    producer_id: int,
    producer_epoch: int,
    marker: EndTxnMarker,
    timestamp_ms: int,
) -> bytes:
    """One control batch holding ``marker`` (offsets are assigned when it is appended)."""
    key = CONTROL_KEY.pack(0, COMMIT if marker.commit else ABORT)
    value = MARKER_VALUE.pack(0, marker.coordinator_epoch)
    return build_batch(
        [Record(key, value)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        timestamp_ms=timestamp_ms,
        is_transactional=True,
        is_control=True,
    )


def read_marker(batch: Buffer) -> EndTxnMarker | None:
    """The transaction marker of a control batch (whole batch bytes), None if its first
    record is not one (or is malformed)."""
    try:
        for record in iter_records(batch):
            key, value = record.key, record.value
            if key is None or len(key) < CONTROL_KEY.size:
                return None
            _, kind = CONTROL_KEY.unpack_from(key)
            if kind not in (ABORT, COMMIT):
                return None
            epoch = -1
            if value is not None and len(value) >= MARKER_VALUE.size:
                epoch = MARKER_VALUE.unpack_from(value)[1]
            return EndTxnMarker(kind == COMMIT, epoch)
    except (RecordsError, ValueError, struct.error):
        return None
    return None


def markers_of(data: memoryview, batches: Sequence[BatchSlice]) -> list[EndTxnMarker | None] | None:
    """Per batch, its marker (None for data batches); None when no batch is a control one."""
    if not any(b.header.is_control for b in batches):
        return None
    return [
        read_marker(data[b.position : b.position + b.header.size]) if b.header.is_control else None
        for b in batches
    ]
