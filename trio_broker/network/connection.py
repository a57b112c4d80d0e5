"""One client connection: framing, parsing, muting, and applying response actions.

Owns: ``Connection``, its task ``serve`` and its small ``Mailbox`` of response actions.
The connection reads only while NOT_MUTED: it frames and parses one request, mutes, sends
the request into its plane's request channel (waiting when the channel is full, so load
pushes back to the client through TCP), and then applies the actions its processor hands
it (send, no-op, close, start/end throttling) until it is NOT_MUTED again. So responses
leave in request order, and a client that pipelines requests has the later ones wait,
unread, in the socket or in the frame buffer.

A connection belongs to one processor at a time (``processor``); when the network pool
shrinks, the processor hands it to another one with its state untouched (the buffered
bytes are in ``framer``, the mute state here, the pending action in the mailbox).
Bad input (a frame size out of bounds, a truncated frame, an unknown api key or version,
an unparsable body) closes this connection only; the processor logs it once and counts it.
On a TLS listener the task first completes the handshake (``tls.start_tls``); on a SASL
listener every frame is first shown to the connection's ``SaslDriver``
(``authentication``), which answers the SASL requests itself and closes the connection on
anything else before authentication.
"""

from __future__ import annotations

import collections
import logging
import math
import time
from typing import TYPE_CHECKING, Any

import trio

from ..protocol import header as wire
from ..protocol.errors import (
    RemoteProtocolError,
    TruncatedFrame,
    UnknownApiKey,
    UnsupportedApiVersion,
)
from ..protocol.framing import FrameDecoder
from . import actions as act
from .authentication import Outcome, SaslDriver
from .mute import MuteEvent, MuteState, transition
from .request import Request, RequestTimes
from .send import receive_some, send_parts
from .tls import start_tls

if TYPE_CHECKING:
    from .processor import Processor
    from .socket_server import ListenerRuntime

log = logging.getLogger("trio_broker.network")

_RECEIVE_SIZE = 65536
# Frames this large are read with recv_into into their own buffer instead of through the
# frame decoder's buffer (which would copy them twice more).
_DIRECT_READ = 128 * 1024
_API_VERSIONS = 18


class Mailbox:
    """A FIFO of actions for one waiting task: cheaper per connection than a channel."""

    __slots__ = ("_items", "_lot")

    def __init__(self) -> None:
        self._items: collections.deque[act.ResponseAction] = collections.deque()
        self._lot = trio.lowlevel.ParkingLot()

    def put(self, item: act.ResponseAction) -> None:
        self._items.append(item)
        self._lot.unpark()

    async def get(self) -> act.ResponseAction:
        while not self._items:
            await self._lot.park()
        return self._items.popleft()

    def drain(self) -> list[act.ResponseAction]:
        items = list(self._items)
        self._items.clear()
        return items


class _CloseRequested(Exception):
    pass


class Connection:
    """State and task of one accepted connection."""

    def __init__(
        self,
        conn_id: str,
        stream: trio.SocketStream | trio.abc.Stream,
        listener: ListenerRuntime,
        processor: Processor,
        remote: tuple[str, int],
    ) -> None:
        self.id = conn_id
        self.stream = stream
        self.listener = listener
        self.processor = processor
        self.remote = remote
        self.framer = FrameDecoder(listener.max_request_size)
        self.mailbox = Mailbox()
        self.mute_state = MuteState.NOT_MUTED
        self.client_id: str | None = None
        self.client_software_name: str | None = None
        self.client_software_version: str | None = None
        self.principal = "User:ANONYMOUS"
        self.requests = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.created_ns = time.monotonic_ns()
        self.last_active_ns = self.created_ns
        self.throttle_until_ns = 0
        self.closed = False
        self.close_reason = ""
        self._draining = False
        self._scope: trio.CancelScope | None = None
        self._read_scope: trio.CancelScope | None = None
        self._in_flight: Request | None = None
        self._reserved = 0  # memory-pool bytes held for the frame being read
        security = listener.security
        # On SASL listeners: the authentication state, consulted for every frame.
        self.sasl = SaslDriver(self, security, listener.auth_counters) if security.sasl else None

    # ------------------------------------------------------------------ control

    @property
    def remote_str(self) -> str:
        host, port = self.remote[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def deliver(self, action: act.ResponseAction) -> None:
        """Called by the owning processor: queue an action for this connection's task."""
        if self.closed:
            _release(action)
        else:
            self.mailbox.put(action)

    def close(self, reason: str) -> None:
        """Close at once (from another task): in-flight work is abandoned."""
        if not self.close_reason:
            self.close_reason = reason
        if self._scope is not None:
            self._scope.cancel()
        else:
            self._draining = True

    def drain(self) -> None:
        """Graceful shutdown: finish the request in flight, read no new ones."""
        self._draining = True
        if self._read_scope is not None:
            self._read_scope.cancel()

    def idle_ms(self, now_ns: int | None = None) -> float:
        return ((now_ns or time.monotonic_ns()) - self.last_active_ns) / 1e6

    def throttle_remaining_ms(self, now_ns: int | None = None) -> float:
        if self.throttle_until_ns == 0:
            return 0.0
        return max(0.0, (self.throttle_until_ns - (now_ns or time.monotonic_ns())) / 1e6)

    # ---------------------------------------------------------------------- task

    async def serve(self) -> None:
        listener = self.listener
        try:
            with trio.CancelScope() as self._scope:
                if self._draining:
                    return
                tls = listener.security.ssl_context
                if tls is not None and not await start_tls(
                    self, tls, listener.security.tls_handshake_timeout_s, listener.auth_counters
                ):
                    return
                await self._loop()
        except RemoteProtocolError as exc:
            self.processor.bad_request(self, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.close_reason = self.close_reason or f"disconnected: {exc}"
        except _CloseRequested:
            pass
        except Exception:
            # A broker bug met on this connection: it costs this connection only (as a
            # Kafka processor closes a channel whose processing threw), never the broker.
            self.close_reason = "broker error"
            listener.internal_error(self)
        finally:
            self.closed = True
            if self._in_flight is not None:
                # ended without a response reaching the client: report it (metrics count
                # it as an error; its send_complete_ns stays 0)
                request, self._in_flight = self._in_flight, None
                self._release_memory(request)
                listener.request_completed(request)
            self._release_reserved()
            for action in self.mailbox.drain():
                _release(action)
            await trio.aclose_forcefully(self.stream)
            self.processor.connection_closed(self)
            listener.connection_closed(self)

    async def _loop(self) -> None:
        channel = self.listener.request_channel
        idle_ns = self.listener.idle_timeout_ns
        while True:
            frame = await self._read_frame(idle_ns)
            if frame is None:
                return
            sasl = self.sasl
            if sasl is not None and sasl.raw:  # a raw token after a v0 SaslHandshake
                self._release_reserved()
                if not await sasl.raw_token(frame):
                    return
                continue
            request = self._parse(frame)
            if sasl is not None:
                outcome = await sasl.intercept(request)
                if outcome is Outcome.CLOSE:
                    return
                if outcome is Outcome.HANDLED:
                    continue
            self.mute_state = transition(self.mute_state, MuteEvent.MUTE)
            self.mute_state = transition(self.mute_state, MuteEvent.REQUEST_RECEIVED)
            self._in_flight = request
            await channel.send(request)
            while self.mute_state is not MuteState.NOT_MUTED:
                action = await self.mailbox.get()
                await self._apply(action)

    async def _read_frame(self, idle_ns: int) -> bytes | bytearray | None:
        """The next request frame, or None when the connection is to end quietly (closed
        by the client, idle, too slow, shutting down).

        Two clocks bound a read: ``connections.max.idle.ms`` from the last byte received,
        and ``request.read.timeout.ms`` from the first byte of the request in progress (a
        client trickling a byte a second never idles, but is closed by the second).
        """
        framer = self.framer
        # Bytes of the next request already buffered (pipelined) count from now: the
        # connection did not read while its previous request was in flight.
        started = trio.current_time() if framer.buffered else None
        while True:
            if not self._reserved:
                size = framer.frame_size()
                if size is not None:
                    waited = await self._reserve(size)
                    if waited is None:
                        return None
                    if waited:  # it read nothing while muted: restart the request's clock
                        started = trio.current_time()
            frame = framer.next_frame()
            if frame is not None:
                return frame
            if self._draining:
                return None
            size = framer.frame_size()
            if (
                size is not None
                and size >= _DIRECT_READ
                and isinstance(self.stream, trio.SocketStream)
            ):
                return await self._read_direct(size, idle_ns, started)
            with trio.CancelScope() as scope:
                self._read_scope = scope
                scope.deadline = self._read_deadline(idle_ns, started)
                data = await receive_some(self.stream, max(_RECEIVE_SIZE, framer.wanted()))
            self._read_scope = None
            if scope.cancelled_caught:
                self._read_timed_out(started, framer.buffered)
                return None
            if not data:
                framer.receive_eof()
                self.close_reason = "closed by client"
                return None
            if started is None:
                started = trio.current_time()
            self.bytes_in += len(data)
            self.last_active_ns = time.monotonic_ns()
            framer.receive_data(data)

    def _read_deadline(self, idle_ns: int, started: float | None) -> float:
        """When the read now starting gives up: idle from now, or the request's own bound."""
        deadline = trio.current_time() + idle_ns / 1e9 if idle_ns else math.inf
        request_ns = self.listener.request_read_timeout_ns
        if started is not None and request_ns:
            deadline = min(deadline, started + request_ns / 1e9)
        return deadline

    def _read_timed_out(self, started: float | None, have: int) -> None:
        """A read's deadline passed (or shutdown cancelled it): say which, and count it."""
        if self._draining:
            return
        request_ns = self.listener.request_read_timeout_ns
        if started is not None and request_ns and trio.current_time() >= started + request_ns / 1e9:
            self.close_reason = "request read timeout"
            self.listener.request_read_timed_out(self, have)
        else:
            self.close_reason = "idle"
            self.listener.connection_reaped(self)

    async def _read_direct(
        self, size: int, idle_ns: int, started: float | None
    ) -> bytearray | None:
        """Read a large frame straight into its own buffer (one copy, from the kernel)."""
        frame, have = self.framer.take_frame_start(size)
        view = memoryview(frame)
        assert isinstance(self.stream, trio.SocketStream)
        sock = self.stream.socket
        if started is None:
            started = trio.current_time()
        while have < size:
            with trio.CancelScope() as scope:
                self._read_scope = scope
                scope.deadline = self._read_deadline(idle_ns, started)
                n = await sock.recv_into(view[have:])
            self._read_scope = None
            if scope.cancelled_caught:
                self._read_timed_out(started, have + 4)
                return None
            if n == 0:
                raise TruncatedFrame(f"connection closed {size - have} bytes before a frame's end")
            have += n
            self.bytes_in += n
            self.last_active_ns = time.monotonic_ns()
        return frame

    async def _reserve(self, size: int) -> bool | None:
        """Reserve the frame's bytes in the memory pool before reading them; while the
        pool is used up, the connection is muted and reads nothing. Whether it had to wait
        for the memory; None: shutting down."""
        pool = self.listener.memory_pool
        if pool is None or pool.try_reserve(size):
            self._reserved = size
            return False
        self.mute_state = transition(self.mute_state, MuteEvent.MUTE)
        with trio.CancelScope() as scope:
            self._read_scope = scope
            await pool.reserve(size)
            self._reserved = size
        self._read_scope = None
        self.mute_state = transition(self.mute_state, MuteEvent.UNMUTE)
        return None if scope.cancelled_caught else True

    def _release_reserved(self) -> None:
        if self._reserved and self.listener.memory_pool is not None:
            self.listener.memory_pool.release(self._reserved)
        self._reserved = 0

    def _release_memory(self, request: Request | None) -> None:
        pool = self.listener.memory_pool
        if pool is None:
            return
        if request is not None and request.memory:
            pool.release(request.memory)
            request.memory = 0

    def _parse(self, frame: bytes | bytearray) -> Request:
        start = time.monotonic_ns()
        processor = self.processor
        header, spec, pos = wire.decode_request_header(frame)
        versions = self.listener.api_versions.get(spec.key)
        if versions is None:
            raise UnknownApiKey(
                f"api key {spec.key} ({spec.name}) is not served on listener {self.listener.name}"
            )
        body: Any = None
        if header.api_version in versions:
            body = wire.decode_request_body(spec, header.api_version, frame, pos)
        elif spec.key != _API_VERSIONS:
            raise UnsupportedApiVersion(
                f"{spec.name} v{header.api_version} is not supported (we answer v{versions})"
            )
        # else KIP-511: an ApiVersions request of a version we do not know is answered
        # (with v0 and UNSUPPORTED_VERSION) so that the client can pick a version.
        self.requests += 1
        if header.client_id is not None:
            self.client_id = header.client_id
        if spec.key == _API_VERSIONS and body is not None and header.api_version >= 3:
            self.client_software_name = body.client_software_name or None
            self.client_software_version = body.client_software_version or None
        request = Request(
            connection=self,
            processor_id=processor.id,
            header=header,
            spec=spec,
            body=body,
            size=len(frame) + 4,
            times=RequestTimes(start_ns=start),
            plane=self.listener.plane,
            memory=self._reserved,
        )
        self._reserved = 0
        processor.add_busy(time.monotonic_ns() - start)
        return request

    async def _apply(self, action: act.ResponseAction) -> None:
        if isinstance(action, act.SendResponse):
            start = time.monotonic_ns()
            await send_parts(self.stream, action.parts)
            now = time.monotonic_ns()
            self.processor.add_busy(now - start)
            self.bytes_out += action.size
            self.last_active_ns = now
            action.request.times.send_complete_ns = now
            self._response_done(action.request)
        elif isinstance(action, act.NoOpResponse):
            now = time.monotonic_ns()
            action.request.times.send_complete_ns = now
            self._response_done(action.request)
        elif isinstance(action, act.StartThrottling):
            self.mute_state = transition(self.mute_state, MuteEvent.THROTTLE_STARTED)
            self.throttle_until_ns = time.monotonic_ns() + action.throttle_ms * 1_000_000
        elif isinstance(action, act.EndThrottling):
            self.mute_state = transition(self.mute_state, MuteEvent.THROTTLE_ENDED)
            self.throttle_until_ns = 0
            self._maybe_unmute()
        elif isinstance(action, act.CloseConnectionResponse):
            self.close_reason = action.reason or "closed by the broker"
            raise _CloseRequested

    def _response_done(self, request: Request) -> None:
        self._release_memory(request)
        self.mute_state = transition(self.mute_state, MuteEvent.RESPONSE_SENT)
        self._in_flight = None
        self.listener.request_completed(request)
        self._maybe_unmute()

    def _maybe_unmute(self) -> None:
        if self.mute_state is MuteState.MUTED:
            self.mute_state = transition(self.mute_state, MuteEvent.UNMUTE)


def _release(action: act.ResponseAction) -> None:
    if isinstance(action, act.SendResponse):
        for p in action.parts:
            release = getattr(p, "release", None)
            if release is not None:
                release()
