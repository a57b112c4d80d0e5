"""Moving bytes between a connection and its socket: reads, and responses written without
copying record data.

Owns: ``receive_some`` and ``send_parts``. On a plain TCP socket both go straight to the
non-blocking descriptor first (``read``, ``writev``) and wait for readiness only when the
socket has nothing to give or no room to take; buffers go out in one gather write (the
header bytes and the producer's or segment's memoryviews) and file regions with
``os.sendfile`` straight from the segment file. On any other stream (TLS, or the in-memory
streams of tests) the stream's own methods are used and file regions are read in chunks.
File regions are released once written or once the send fails.
"""

from __future__ import annotations

import errno
import os

import trio

from ..protocol.primitives import FileRegion, Part

_IOV_MAX = 512
_CHUNK = 1 << 20


async def receive_some(stream: trio.abc.ReceiveStream, max_bytes: int) -> bytes | bytearray:
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
            await trio.lowlevel.wait_readable(sock)


async def send_parts(stream: trio.abc.SendStream, parts: list[Part]) -> None:
    """Write every part, in order. File regions in ``parts`` are released in all cases."""
    try:
        sock = stream.socket if isinstance(stream, trio.SocketStream) else None
        if sock is None:
            await _send_generic(stream, parts)
        else:
            await _send_socket(sock, parts)
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


async def _send_socket(sock: trio.socket.SocketType, parts: list[Part]) -> None:
    pending: list[memoryview] = []
    for p in parts:
        if isinstance(p, FileRegion):
            if pending:
                await _sendmsg_all(sock, pending)
                pending = []
            await _sendfile_all(sock, p)
        else:
            pending.append(p if isinstance(p, memoryview) else memoryview(p))
    if pending:
        await _sendmsg_all(sock, pending)


async def _sendmsg_all(sock: trio.socket.SocketType, bufs: list[memoryview]) -> None:
    # os.writev on the socket's (non-blocking) descriptor first: a response that fits in
    # the socket buffer, the usual case, goes out without trio's per-call checkpoints;
    # only a full buffer waits for the socket to be writable.
    fd = sock.fileno()
    while bufs:
        try:
            sent = os.writev(fd, bufs[:_IOV_MAX])
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
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


async def _sendfile_all(sock: trio.socket.SocketType, region: FileRegion) -> None:
    out_fd = sock.fileno()
    in_fd = region.file.fileno()
    offset, left = region.offset, region.length
    while left > 0:
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            sent = os.sendfile(out_fd, in_fd, offset, left)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if sent == 0:
            raise OSError(errno.EIO, "segment file shorter than its region")
        offset += sent
        left -= sent
