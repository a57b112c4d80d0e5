"""Wire primitives shared by the compiled codecs: varints and output buffers.

Owns: unsigned/signed varint encoding and decoding as Kafka writes them, and the
``FileRegion`` output part (a byte range of an open file, sent with ``sendfile``). Encoders
produce a list of buffers (``Parts``): small fields gathered in bytearrays, record data
appended as the caller's own bytes, memoryviews or file regions, never copied. No I/O here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import CorruptRequest


class HasFileno(Protocol):
    def fileno(self) -> int: ...


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes of ``file`` from ``offset``: record data sent without copying.

    The owner of ``file`` keeps it open until the region is sent (the log hands out
    duplicated descriptors for this). ``release`` is called once the region is done with.
    """

    file: Any
    offset: int
    length: int

    def __len__(self) -> int:
        return self.length

    def release(self) -> None:
        close = getattr(self.file, "close", None)
        if close is not None:
            close()


Buffer = bytes | bytearray | memoryview
Part = bytes | bytearray | memoryview | FileRegion
Parts = list[Part]

# Records given to an encoder: None, one buffer, or several buffers / file regions.
RecordsValue = Buffer | FileRegion | Sequence[Buffer | FileRegion] | None


def _make_uvarint_table(limit: int) -> list[bytes]:
    table = []
    for n in range(limit):
        out = bytearray()
        v = n
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        table.append(bytes(out))
    return table


_UVARINT_TABLE = _make_uvarint_table(1 << 14)


def uvarint(n: int) -> bytes:
    """The unsigned varint encoding of ``n`` (0 <= n < 2**32)."""
    if n < 16384:
        return _UVARINT_TABLE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    """The zig-zag varint encoding of a signed 32-bit ``n``."""
    return uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def varlong(n: int) -> bytes:
    """The zig-zag varint encoding of a signed 64-bit ``n``."""
    return uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def read_uvarint(data: Buffer, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; returns (value, new position)."""
    try:
        first = data[pos]
    except IndexError:
        raise CorruptRequest("buffer ends inside a varint") from None
    if first < 0x80:
        return first, pos + 1
    return uvarint_rest(data, pos + 1, first)


def uvarint_rest(data: Buffer, pos: int, first: int) -> tuple[int, int]:
    """Finish an unsigned varint whose first byte ``first`` (>= 0x80) was already read."""
    result = first & 0x7F
    shift = 7
    try:
        while True:
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift > 35:
                raise CorruptRequest("varint is too long")
    except IndexError:
        raise CorruptRequest("buffer ends inside a varint") from None


def read_varint(data: Buffer, pos: int) -> tuple[int, int]:
    """Decode a zig-zag signed varint at ``pos``."""
    raw, pos = read_uvarint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def records_length(value: RecordsValue) -> int:
    """The byte length of a records value (None counts as 0)."""
    if value is None:
        return 0
    if isinstance(value, bytes | bytearray | memoryview):
        return value.nbytes if isinstance(value, memoryview) else len(value)
    if isinstance(value, FileRegion):
        return value.length
    return sum(records_length(p) for p in value)


# Record data shorter than this is copied into the surrounding buffer: a separate part
# costs more than a small copy.
INLINE_RECORDS_LIMIT = 1024


def append_records(parts: Parts, value: RecordsValue) -> bytearray:
    """Append record data to ``parts`` without copying; returns the new current buffer."""
    if isinstance(value, bytes | bytearray | memoryview | FileRegion):
        parts.append(value)
    elif value is not None:
        parts.extend(value)
    current = bytearray()
    parts.append(current)
    return current


def parts_length(parts: Parts) -> int:
    total = 0
    for p in parts:
        total += p.nbytes if isinstance(p, memoryview) else len(p)
    return total


def join_parts(parts: Parts) -> bytes:
    """Copy parts into one bytes object (for tests and small messages; file regions are read)."""
    out = bytearray()
    for p in parts:
        if isinstance(p, FileRegion):
            import os

            out += os.pread(p.file.fileno(), p.length, p.offset)
        else:
            out += p
    return bytes(out)
