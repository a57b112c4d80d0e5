"""Receiving a connection's next request while its current one is in flight.

Owns: ``read_ahead_want`` (whether, and how many bytes, a muted connection may take from
its socket now) and ``read_ahead`` (one wait for those bytes, cut short by a response
action arriving). The mute rule keeps one request per connection in flight and its
responses in order: the next request is not parsed, validated or queued before the
response of the current one is sent. It does not forbid *receiving* it: a producer that
pipelines (librdkafka keeps up to five requests in flight) has its next request in the
socket already, and copying it into the frame buffer while an io thread appends the
current one takes the copy out of the strictly serial cycle (read, append, answer).

Bounded like a normal read: only the frame in progress is read, at most to its end; its
bytes are reserved in the memory pool before they are read (a pool used up ends the read
ahead, it does not wait), and frames of ``DIRECT_READ`` bytes or more go straight into
their own buffer (``Connection.partial``), which the processor's next read finishes.
Only large in-flight requests (``READ_AHEAD_MIN``) read ahead: for a small request the
extra readiness registration would cost more than the overlap gains.
Must not: parse or validate a frame, or read while the connection is throttled.
"""

from __future__ import annotations

import os
import time

import trio

from ..protocol.errors import RemoteProtocolError
from .connection import Connection
from .memory_pool import MemoryPool
from .mute import MuteState
from .send import WaitClock

# Frames this large are read into their own buffer instead of through the frame
# decoder's buffer (which would copy them twice more).
DIRECT_READ = 128 * 1024
# In-flight requests at least this large let their connection read ahead.
READ_AHEAD_MIN = 64 * 1024
_CHUNK = 65536


def read_ahead_want(conn: Connection, pool: MemoryPool | None) -> int:
    """Bytes ``conn`` may read ahead now (0: none). Reserves the next frame's memory and
    starts its own buffer when that is what a normal read would do."""
    request = conn.in_flight
    if (
        conn.ahead_stopped
        or conn.draining
        or request is None
        or request.size < READ_AHEAD_MIN
        or conn.mute_state is not MuteState.MUTED_AND_RESPONSE_PENDING
        or not isinstance(conn.stream, trio.SocketStream)
    ):
        return 0
    if conn.partial is not None:
        frame, have = conn.partial
        return len(frame) - have
    framer = conn.framer
    try:
        size = framer.frame_size()
    except RemoteProtocolError:
        return 0  # a bad prefix: the processor's next read reports it, in order
    if size is None:
        return _CHUNK
    if framer.buffered >= 4 + size:
        return 0
    if not conn.reserved:
        if pool is not None and not pool.try_reserve(size):
            return 0
        conn.reserved = size
    if size >= DIRECT_READ:
        conn.partial = framer.take_frame_start(size)
        frame, have = conn.partial
        return size - have
    return 4 + size - framer.buffered


async def read_ahead(conn: Connection, want: int, clock: WaitClock) -> None:
    """Wait for the socket to have bytes, then take up to ``want`` of them; returns early
    (having read nothing) when an action is delivered to the connection meanwhile."""
    assert isinstance(conn.stream, trio.SocketStream)
    sock = conn.stream.socket
    if not len(conn.mailbox):
        with trio.CancelScope() as scope:
            conn.ahead_scope = scope
            start = time.perf_counter_ns()
            try:
                await trio.lowlevel.wait_readable(sock)
            finally:
                clock.waited_ns += time.perf_counter_ns() - start
        conn.ahead_scope = None
        if scope.cancelled_caught:
            return
    fd = sock.fileno()
    try:
        if conn.partial is not None:
            frame, have = conn.partial
            n = os.readv(fd, [memoryview(frame)[have : have + want]])
            if n:
                conn.partial = (frame, have + n)
        else:
            data = os.read(fd, want)
            n = len(data)
            if n:
                conn.framer.receive_data(data)
    except BlockingIOError:
        return
    if n == 0:  # end of stream: the processor's next read sees it too, and reports it
        conn.ahead_stopped = True
        return
    conn.bytes_in += n
    conn.last_active_ns = time.monotonic_ns()
