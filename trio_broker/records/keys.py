"""The produce-time rule of compacted topics: every record has a key.

Owns: ``check_keys``: the records of each data batch are decoded (decompressed with the
batch's codec) and a record with a null key refuses the whole produce with
INVALID_RECORD and one per-record error for each such record (its index in the batch),
Kafka 3.x's ``LogValidator.validateKey`` answer. Control batches are not checked.
CPU-bound: an io thread's work, never the event loop's.
"""

from __future__ import annotations

from trio_broker.protocol.errors import ErrorCode

from .errors import RecordsError
from .reader import iter_records
from .validation import ValidatedRecords


def check_keys(records: ValidatedRecords, partition_name: str) -> None:
    """Raise ``RecordsError(INVALID_RECORD)`` if a record of ``records`` has no key."""
    message = (
        f"Compacted topic cannot accept message without key in topic partition {partition_name}."
    )
    errors: list[tuple[int, str | None]] = []
    data = records.data
    for batch in records.batches:
        h = batch.header
        if h.is_control:
            continue
        body = data[batch.position : batch.position + h.size]
        for index, record in enumerate(iter_records(body)):
            if record.key is None:
                errors.append((index, message))
    if errors:
        raise RecordsError(ErrorCode.INVALID_RECORD, message, errors)
