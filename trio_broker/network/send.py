"""Moving bytes between a connection and its socket: reads, and responses written without
copying record data.

Owns: ``receive_some``, ``receive_now`` and ``send_parts``, ``WaitClock`` and
``SocketTransport``. On a plain TCP socket reads and writes go straight to the
non-blocking descriptor first (``read``, ``writev``) and wait for readiness only when the
socket has nothing to give or no room to take; buffers go out in one gather write (the
header bytes and the producer's or segment's memoryviews) and file regions with
``os.sendfile`` straight from the segment file. On any other stream (TLS, or the in-memory
streams of tests) the stream's own methods are used and file regions are read in chunks.
File regions are released once written or once the send fails.

Every wait for the peer (the socket readable or writable) is added to the caller's
``WaitClock``, so that the caller can tell the time its own work took (the wall time of a
send or receive minus the waits) from the time a slow peer cost: a processor's busy time
is the former. Under TLS, ``SocketTransport`` is the TLS stream's transport, so that its
waits are counted too.
"""

from __future__ import annotations

import errno
import os
from time import perf_counter_ns

import trio

from ..protocol.primitives import FileRegion, Part

_IOV_MAX = 512
_CHUNK = 1 << 20


class WaitClock:
    """Nanoseconds spent waiting for a peer's socket to be readable or writable."""

    __slots__ = ("waited_ns",)

    def __init__(self) -> None:
        self.waited_ns = 0


_NO_CLOCK = WaitClock()  # for callers that do not ask


async def _wait_readable(sock: trio.socket.SocketType, clock: WaitClock) -> None:
    start = perf_counter_ns()
    try:
        await trio.lowlevel.wait_readable(sock)
    finally:
        clock.waited_ns += perf_counter_ns() - start


async def _wait_writable(sock: trio.socket.SocketType, clock: WaitClock) -> None:
    start = perf_counter_ns()
    try:
        await trio.lowlevel.wait_writable(sock)
    finally:
        clock.waited_ns += perf_counter_ns() - start


async def receive_some(
    stream: trio.abc.ReceiveStream, max_bytes: int, clock: WaitClock = _NO_CLOCK
) -> bytes | bytearray:
    """``stream.receive_some``, but on a plain TCP socket a ``read`` on its non-blocking
    descriptor first: data already there is taken without trio's two checkpoints per call;
    only an empty socket waits (cancellably) for more."""
    if not isinstance(stream, trio.SocketStream):
        return await stream.receive_some(max_bytes)
    sock = stream.socket
    fd = sock.fileno()
    while True:
        try:
            return os.read(fd, max_bytes)
        except BlockingIOError:
            await _wait_readable(sock, clock)


def receive_now(stream: trio.abc.ReceiveStream, max_bytes: int) -> bytes | None:
    """What a plain TCP socket has ready now (b"": end of stream), without waiting; None
    when it has nothing yet, or when the stream is not a plain socket (then the caller
    waits through ``receive_some``). Lets a caller set up its wait (a cancel scope with
    the read deadlines) only when there is something to wait for."""
    if not isinstance(stream, trio.SocketStream):
        return None
    try:
        return os.read(stream.socket.fileno(), max_bytes)
    except BlockingIOError:
        return None


async def receive_into(
    sock: trio.socket.SocketType, view: memoryview, clock: WaitClock = _NO_CLOCK
) -> int:
    """Read into ``view`` from a TCP socket's non-blocking descriptor (0: end of stream)."""
    fd = sock.fileno()
    while True:
        try:
            return os.readv(fd, [view])
        except BlockingIOError:
            await _wait_readable(sock, clock)


class SocketTransport(trio.abc.Stream):
    """The TCP socket under a TLS stream, read and written on its non-blocking descriptor
    (as above), its waits for the peer counted in ``clock``."""

    def __init__(self, stream: trio.SocketStream, clock: WaitClock) -> None:
        self.socket_stream = stream
        self.clock = clock

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await _sendmsg_all(self.socket_stream.socket, [memoryview(data)], self.clock)

    async def wait_send_all_might_not_block(self) -> None:
        await self.socket_stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await receive_some(self.socket_stream, max_bytes or 65536, self.clock)

    async def aclose(self) -> None:
        await self.socket_stream.aclose()


async def send_parts(
    stream: trio.abc.SendStream, parts: list[Part], clock: WaitClock = _NO_CLOCK
) -> None:
    """Write every part, in order. File regions in ``parts`` are released in all cases."""
    try:
        sock = stream.socket if isinstance(stream, trio.SocketStream) else None
        if sock is None:
            await _send_generic(stream, parts)
        else:
            await _send_socket(sock, parts, clock)
    finally:
        for p in parts:
            if isinstance(p, FileRegion):
                p.release()


async def _send_generic(stream: trio.abc.SendStream, parts: list[Part]) -> None:
    small = bytearray()
    for p in parts:
        if isinstance(p, FileRegion):
            if small:
                await stream.send_all(small)
                small = bytearray()
            offset, left = p.offset, p.length
            while left > 0:
                chunk = os.pread(p.file.fileno(), min(left, _CHUNK), offset)
                if not chunk:
                    raise OSError(errno.EIO, "segment file shorter than its region")
                await stream.send_all(chunk)
                offset += len(chunk)
                left -= len(chunk)
        elif len(p) < 65536:
            small += p
        else:
            if small:
                await stream.send_all(small)
                small = bytearray()
            await stream.send_all(p)
    if small:
        await stream.send_all(small)


async def _send_socket(sock: trio.socket.SocketType, parts: list[Part], clock: WaitClock) -> None:
    pending: list[memoryview] = []
    for p in parts:
        if isinstance(p, FileRegion):
            if pending:
                await _sendmsg_all(sock, pending, clock)
                pending = []
            await _sendfile_all(sock, p, clock)
        else:
            pending.append(p if isinstance(p, memoryview) else memoryview(p))
    if pending:
        await _sendmsg_all(sock, pending, clock)


async def _sendmsg_all(
    sock: trio.socket.SocketType, bufs: list[memoryview], clock: WaitClock
) -> None:
    # os.writev on the socket's (non-blocking) descriptor first: a response that fits in
    # the socket buffer, the usual case, goes out without trio's per-call checkpoints;
    # only a full buffer waits for the socket to be writable.
    fd = sock.fileno()
    while bufs:
        try:
            sent = os.writev(fd, bufs[:_IOV_MAX])
        except BlockingIOError:
            await _wait_writable(sock, clock)
            continue
        while sent:
            first = bufs[0]
            if sent >= first.nbytes:
                sent -= first.nbytes
                bufs.pop(0)
            else:
                bufs[0] = first[sent:]
                sent = 0
        while bufs and not bufs[0].nbytes:
            bufs.pop(0)


async def _sendfile_all(sock: trio.socket.SocketType, region: FileRegion, clock: WaitClock) -> None:
    out_fd = sock.fileno()
    in_fd = region.file.fileno()
    offset, left = region.offset, region.length
    while left > 0:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            sent = os.sendfile(out_fd, in_fd, offset, left)
        except BlockingIOError:
            await _wait_writable(sock, clock)
            continue
        if sent == 0:
            raise OSError(errno.EIO, "segment file shorter than its region")
        offset += sent
        left -= sent
