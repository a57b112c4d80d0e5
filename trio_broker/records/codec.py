"""The compression codecs of record batches, as Kafka frames them.

Owns: ``compress`` and ``decompress`` of a batch's records section for every codec of the
v2 format, with the libraries made for them: gzip (stdlib), snappy (``python-snappy``),
LZ4 (``lz4``'s frame format, which Kafka's v2 batches use) and zstd (``zstandard``), and
the compression levels of KIP-390 (``None``: the codec's default). Snappy comes two ways:
librdkafka sends a plain snappy block, Kafka's Java client the xerial framing
(``\\x82SNAPPY\\x00``, a version pair, then length-prefixed blocks); both are read, and the
broker writes the xerial framing, as Kafka's broker does, which every client reads.
The broker decompresses to find a record inside a batch (ListOffsets by timestamp) and to
recompress a producer's batch into a topic's ``compression.type``; always off the event
loop. Corrupt data raises ``RecordsError(CORRUPT_MESSAGE)``. ``decompress_at_most`` stops
past a limit (a client's KIP-714 telemetry: a few kilobytes of zstd or gzip can stand for
gigabytes), for gzip, lz4 and zstd by streaming; a snappy block (at most ~21x its size)
is decompressed whole.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib

import lz4.frame
import snappy
import zstandard

from trio_broker.protocol.errors import ErrorCode

from .errors import RecordsError
from .header import Compression

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_BLOCK_LENGTH = struct.Struct(">i")


def compress(compression: Compression, data: bytes | memoryview, level: int | None = None) -> bytes:
    """``data`` compressed with ``compression`` at ``level`` (``None``: the default)."""
    if compression is Compression.NONE:
        return bytes(data)
    if compression is Compression.GZIP:
        return gzip.compress(data, compresslevel=6 if level is None else level, mtime=0)
    if compression is Compression.SNAPPY:
        out = bytearray(_XERIAL_HEADER)
        view = memoryview(data)
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = snappy.compress(bytes(view[start : start + _XERIAL_BLOCK]))
            out += _BLOCK_LENGTH.pack(len(block))
            out += block
        return bytes(out)
    if compression is Compression.LZ4:
        return bytes(lz4.frame.compress(data, compression_level=0 if level is None else level))
    if compression is Compression.ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    raise RecordsError(
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {compression!r}"
    )


def _snappy(data: bytes | memoryview) -> bytes:
    raw = bytes(data)
    if not raw.startswith(_XERIAL_MAGIC):
        return bytes(snappy.decompress(raw))
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise ValueError("truncated xerial block length")
        (length,) = _BLOCK_LENGTH.unpack_from(raw, pos)
        pos += 4
        if length < 0 or pos + length > len(raw):
            raise ValueError("xerial block runs past the data")
        out += snappy.decompress(raw[pos : pos + length])
        pos += length
    return bytes(out)


def decompress(compression: Compression, data: bytes | memoryview) -> bytes | memoryview:
    if compression is Compression.NONE:
        return data
    try:
        if compression is Compression.GZIP:
            return gzip.decompress(data)
        if compression is Compression.SNAPPY:
            return _snappy(data)
        if compression is Compression.LZ4:
            return bytes(lz4.frame.decompress(bytes(data)))
        if compression is Compression.ZSTD:
            # A frame may not record its content size: decompress as a stream.
            return zstandard.ZstdDecompressor().decompressobj().decompress(bytes(data))
    except (OSError, EOFError, ValueError, RuntimeError, zlib.error, zstandard.ZstdError) as exc:
        raise RecordsError(
            ErrorCode.CORRUPT_MESSAGE, f"bad {compression.name.lower()} data: {exc}"
        ) from None
    raise RecordsError(
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {compression!r}"
    )


_STEP = 64 << 10


def decompress_at_most(
    compression: Compression, data: bytes | memoryview, limit: int
) -> bytes | memoryview:
    """``data`` decompressed, but no more than ``limit + 1`` bytes of it: a result longer
    than ``limit`` means the whole is over it (what follows was never made)."""
    if compression not in (Compression.GZIP, Compression.LZ4, Compression.ZSTD):
        return decompress(compression, data)
    try:
        if compression is Compression.GZIP:
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(data, limit + 1)
        if compression is Compression.LZ4:
            frame = lz4.frame.LZ4FrameDecompressor()
            return bytes(frame.decompress(bytes(data), max_length=limit + 1))
        # read in steps: ``read(limit + 1)`` would allocate the whole limit for every call
        # (48 us for a 230-byte payload against a 1 MiB limit, 8 us in steps)
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data)))
        out = bytearray()
        while len(out) <= limit:
            chunk = reader.read(min(_STEP, limit + 1 - len(out)))
            if not chunk:
                break
            out += chunk
        return bytes(out)
    except (OSError, EOFError, ValueError, RuntimeError, zlib.error, zstandard.ZstdError) as exc:
        raise RecordsError(
            ErrorCode.CORRUPT_MESSAGE, f"bad {compression.name.lower()} data: {exc}"
        ) from None
