"""Size-prefixed framing of the Kafka protocol, sans-I/O.

Owns: ``FrameDecoder``, which takes bytes as they arrive (``receive_data``) and hands out
whole frames (``next_frame``, or ``None`` when it needs more bytes), enforcing
``socket.request.max.bytes``. It never reads a socket: the network layer feeds it, as
h11's ``Connection`` is fed. A bad size prefix raises a ``RemoteProtocolError``; end of
input inside a frame raises ``TruncatedFrame``.
"""

from __future__ import annotations

import struct

from .errors import FrameTooLarge, InvalidFrameSize, TruncatedFrame

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")  # a request header's first fields


class FrameDecoder:
    """Splits a byte stream into frames (the bytes after each 4-byte size prefix)."""

    __slots__ = ("_buf", "max_frame_size")

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet handed out as frames."""
        return len(self._buf)

    def wanted(self) -> int:
        """How many more bytes complete the frame in progress (at least 1 if unknown)."""
        buf = self._buf
        if len(buf) < 4:
            return 4 - len(buf)
        (size,) = _SIZE.unpack_from(buf, 0)
        return max(1, 4 + size - len(buf))

    def frame_size(self) -> int | None:
        """The size of the frame in progress once its prefix is in (checked), else None."""
        buf = self._buf
        if len(buf) < 4:
            return None
        (size,) = _SIZE.unpack_from(buf, 0)
        if size <= 0:
            raise InvalidFrameSize(f"frame size {size} is not positive")
        if size > self.max_frame_size:
            raise FrameTooLarge(
                f"frame size {size} is larger than socket.request.max.bytes ({self.max_frame_size})"
            )
        return size

    def next_frame(self) -> bytes | None:
        """The next whole frame, or ``None`` if more bytes are needed."""
        size = self.frame_size()
        if size is None:
            return None
        buf = self._buf
        end = 4 + size
        if len(buf) < end:
            return None
        frame = bytes(buf[4:end])
        del buf[:end]
        return frame

    def whole_frame_key(self) -> tuple[int, int] | None:
        """The api key and version of the next frame if it is wholly buffered (a pipelined
        request already received), else None; nothing is consumed. A bad size prefix
        raises, as ``frame_size``."""
        size = self.frame_size()
        if size is None or size < 4 or len(self._buf) < 4 + size:
            return None
        key, version = _KEY_VERSION.unpack_from(self._buf, 4)
        return key, version

    def take_frame_start(self, size: int) -> tuple[bytearray, int]:
        """Hand over the frame in progress: a buffer of its ``size`` with the bytes already
        received copied in, and how many those are. The caller fills the rest itself (with
        ``recv_into``, so a large frame is copied once, from the kernel into its buffer)."""
        buf = self._buf
        have = min(len(buf) - 4, size)
        frame = bytearray(size)
        frame[:have] = buf[4 : 4 + have]
        del buf[: 4 + have]
        return frame, have

    def receive_eof(self) -> None:
        """The peer closed its side: fine between frames, an error inside one.

        Whole frames still buffered are not truncation: ``next_frame`` hands them out
        after this as before. A bad size prefix is left for ``next_frame`` to report.
        """
        buf = self._buf
        start = 0  # where the first frame not wholly buffered starts
        while len(buf) - start >= 4:
            (size,) = _SIZE.unpack_from(buf, start)
            if size <= 0 or size > self.max_frame_size:
                return
            if start + 4 + size > len(buf):
                break
            start += 4 + size
        if start != len(buf):
            raise TruncatedFrame(f"connection closed with {len(buf) - start} bytes of a frame")

    def take_buffer(self) -> bytearray:
        """Hand the unparsed bytes to a new owner (a connection moving processors)."""
        buf, self._buf = self._buf, bytearray()
        return buf
