"""Recompressing a producer's batches into a topic's ``compression.type`` (Kafka's
"broker-side compression").

Owns: ``recompress``: each batch of validated records whose codec differs from the
target gets its records section decompressed and compressed again; the header keeps
everything else (base offset, leader epoch, timestamps, producer id, epoch and base
sequence, record count, transactional bit), its length, codec bits and CRC are rewritten.
Control batches are never compressed and stay as they are. Blocking and CPU-bound: an io
thread's work, never the event loop's.
"""

from __future__ import annotations

import struct

from .codec import compress, decompress
from .header import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CRC_OFFSET,
    HEADER_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    Compression,
    batch_crc,
)
from .validation import ValidatedRecords

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")

TARGETS = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


def recompress(records: ValidatedRecords, codec: str, level: int | None) -> bytes | None:
    """The records with every batch in ``codec`` (a ``compression.type`` other than
    ``producer``), or None when every batch already is."""
    target = TARGETS[codec]
    if all(b.header.compression is target or b.header.is_control for b in records.batches):
        return None
    data = records.data
    out = bytearray()
    for batch in records.batches:
        h = batch.header
        start, end = batch.position, batch.position + h.size
        if h.compression is target or h.is_control:
            out += data[start:end]
            continue
        body = decompress(h.compression, data[start + HEADER_SIZE : end])
        packed = compress(target, body, level)
        head = bytearray(data[start : start + HEADER_SIZE])
        _INT32.pack_into(head, LENGTH_OFFSET, HEADER_SIZE - LOG_OVERHEAD + len(packed))
        attributes = (h.attributes & ~COMPRESSION_MASK) | int(target)
        _INT16.pack_into(head, ATTRIBUTES_OFFSET, attributes)
        whole = head + packed
        _UINT32.pack_into(whole, CRC_OFFSET, batch_crc(whole))
        out += whole
    return bytes(out)
