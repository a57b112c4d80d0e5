"""Kafka record batches v2 (magic 2), handled without decoding records one by one.

Nothing in this package imports trio or does I/O: the log and the handlers call it with
buffers they hold. ``header`` is the batch layout, ``validation`` checks what producers
send, ``stamping`` assigns offsets without copying, ``builder`` / ``reader`` encode and
decode records for the broker's own logs.
"""

from .builder import Record, build_batch
from .errors import RecordsError
from .header import HEADER_SIZE, BatchHeader, Compression, TimestampType, batch_crc
from .reader import DecodedRecord, iter_batches, iter_records
from .stamping import StampedRecords, assign_offsets, rewrite_timestamps
from .validation import BatchSlice, ValidatedRecords, validate_batches

__all__ = [
    "HEADER_SIZE",
    "BatchHeader",
    "BatchSlice",
    "Compression",
    "DecodedRecord",
    "Record",
    "RecordsError",
    "StampedRecords",
    "TimestampType",
    "ValidatedRecords",
    "assign_offsets",
    "batch_crc",
    "build_batch",
    "iter_batches",
    "iter_records",
    "rewrite_timestamps",
    "validate_batches",
]
