"""Compression codecs the broker itself can write and read: none and gzip (stdlib).

Owns: compressing and decompressing the records section of a batch the broker builds or
decodes for its own use (internal logs, tests). Producers' batches are never recompressed;
the log stores them as they came. Snappy, LZ4 and zstd are stored and served untouched but
not decoded here: asking for them raises ``RecordsError(UNSUPPORTED_COMPRESSION_TYPE)``.
"""

from __future__ import annotations

import gzip
import zlib

from trio_broker.protocol.errors import ErrorCode

from .errors import RecordsError
from .header import Compression


def compress(compression: Compression, data: bytes) -> bytes:
    if compression is Compression.NONE:
        return data
    if compression is Compression.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    raise RecordsError(
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"cannot write {compression.name} batches"
    )


def decompress(compression: Compression, data: bytes | memoryview) -> bytes | memoryview:
    if compression is Compression.NONE:
        return data
    if compression is Compression.GZIP:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise RecordsError(ErrorCode.CORRUPT_MESSAGE, f"bad gzip data: {exc}") from None
    raise RecordsError(
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"cannot decode {compression.name} batches"
    )
