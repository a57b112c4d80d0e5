"""Writing a response's parts to a stream without copying record data.

Owns: ``send_parts``. On a plain TCP socket, buffers go out with ``sendmsg`` (one gather
write for the header bytes and the producer's or segment's memoryviews) and file regions
with ``os.sendfile`` straight from the segment file. On any other stream (TLS, or the
in-memory streams of tests) parts are written one by one and file regions are read in
chunks. File regions are released once written or once the send fails.
"""

from __future__ import annotations

import errno
import os

import trio

from ..protocol.primitives import FileRegion, Part

_IOV_MAX = 512
_CHUNK = 1 << 20


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
    if len(bufs) == 1:
        view = bufs[0]
        while view.nbytes:
            sent = await sock.send(view)
            view = view[sent:]
        return
    while bufs:
        sent = await sock.sendmsg(bufs[:_IOV_MAX])
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
