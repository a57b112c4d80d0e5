"""A network processor (Kafka's Processor): owner of a set of connections and of their
network work.

Owns: ``Processor``. The acceptor hands it new sockets through its new-connection channel
(capacity 20, as Kafka's); it registers each as a ``Connection`` and serves it in a task
of the listener's connection nursery. Serving a connection is the processor's network
work, all of it here: the TLS handshake, framing (reading whole frames under the idle and
request-read clocks and the memory pool), parsing, SASL's admission of each request, the
mute transitions, sending the request into the plane's request channel, and applying the
response actions (writes, no-ops, throttling, closes) in order; while a large request is
in flight, receiving (never parsing) the next one (``network.read_ahead``). Handlers
deliver those actions straight to the connection (its ``deliver``), not through a queue
of the processor, so a response costs no forwarding hop.

Accounting: ``busy_ns`` is the time spent on this processor's network work: the wall time
of the work minus the time it waited for a peer (socket readiness), for the request
channel, the memory pool or a response. A slow reader costs waiting, not busy time.
Trio runs every task of the broker on one thread, so processors share one CPU: their
count groups connections for ownership and accounting and adds no CPU; the pool's busy
time is what the network work costs the event loop.

When the pool shrinks, ``retire`` moves this processor's connections, with everything
they hold, to the remaining processors: a connection's task keeps running and charges its
work to whichever processor owns it at the time.
"""

from __future__ import annotations

import math
import time
from typing import Any

import trio

from ..protocol import header as wire
from ..protocol.errors import (
    RemoteProtocolError,
    TruncatedFrame,
    UnknownApiKey,
    UnsupportedApiVersion,
)
from ..protocol.primitives import parts_length
from .authentication import Outcome, SaslDriver, SaslIo
from .busy import BusyMeter
from .connection import Connection, is_response, release_action
from .context import ListenerContext
from .mute import MuteEvent, MuteState, transition
from .pipelining import PIPELINED, take_followers
from .read_ahead import DIRECT_READ, read_ahead, read_ahead_want
from .request import (
    CloseConnectionResponse,
    EndThrottling,
    NoOpResponse,
    Request,
    RequestTimes,
    ResponseAction,
    SendResponse,
    StartThrottling,
)
from .send import (
    SocketTransport,
    WaitClock,
    receive_into,
    receive_now,
    receive_some,
    send_parts,
)
from .tls import tls_handshake

NEW_CONNECTION_QUEUE = 20
_RECEIVE_SIZE = 65536
_API_VERSIONS = 18


class _CloseRequested(Exception):
    """A CloseConnectionResponse or a SASL outcome ends the connection's task."""


class Processor:
    def __init__(
        self, processor_id: int, context: ListenerContext, nursery: trio.Nursery, conn_ids: Any
    ) -> None:
        self.id = processor_id
        self.context = context
        self._nursery = nursery  # the listener's connection nursery
        self._conn_ids = conn_ids  # the listener's connection counter
        self.connections: set[Connection] = set()
        self.new_connections, self._new_rx = trio.open_memory_channel[trio.SocketStream](
            NEW_CONNECTION_QUEUE
        )
        self.retired = False
        self.successor: Any = None  # picks the processor for sockets arriving after retiring
        self.created_ns = time.monotonic_ns()
        self.retired_ns = 0  # when it left the pool (idle ratios across resizes)
        self.busy_ns = 0

    # ---------------------------------------------------------------- ownership

    def add_busy(self, ns: int) -> None:
        self.busy_ns += ns

    @property
    def response_queue_size(self) -> int:
        """Response actions delivered to its connections and not yet applied."""
        return sum(len(c.mailbox) for c in self.connections)

    async def run_new_connections(self, opened: Any) -> None:
        """Register the sockets the acceptor hands over (``opened(conn)`` tells the
        listener); after retiring, hand them to a processor still in the pool."""
        async with self._new_rx:
            async for stream in self._new_rx:
                owner = self if not self.retired else self.successor()
                conn = owner.start_connection(stream)
                if conn is not None:
                    opened(conn)

    def start_connection(self, stream: trio.SocketStream) -> Connection | None:
        try:
            remote = stream.socket.getpeername()
            local = stream.socket.getsockname()
        except OSError:
            stream.socket.close()
            return None
        ctx = self.context
        conn_id = f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{next(self._conn_ids)}"
        conn = Connection(
            conn_id,
            stream,
            remote,
            self,
            listener=ctx.name,
            max_request_size=ctx.max_request_size,
        )
        self.connections.add(conn)
        self._nursery.start_soon(self.serve, conn, name=f"conn {conn_id}")
        return conn

    def retire(self, survivors: list[Processor]) -> None:
        """Leave the pool: hand every connection to ``survivors``, round robin."""
        self.retired = True
        self.retired_ns = time.monotonic_ns()
        for i, conn in enumerate(sorted(self.connections, key=lambda c: c.id)):
            new_owner = survivors[i % len(survivors)]
            conn.processor = new_owner
            new_owner.connections.add(conn)
        self.connections.clear()
        self.new_connections.close()

    def close(self) -> None:
        """Shutdown: no more connections will come."""
        self.new_connections.close()

    # ------------------------------------------------------------ network work

    async def serve(self, conn: Connection) -> None:
        """Serve one connection until it closes (the connection's task)."""
        ctx = self.context
        clock = WaitClock()
        meter = BusyMeter(conn, clock)
        meter.start()
        sasl: SaslDriver | None = None
        try:
            with trio.CancelScope() as conn.scope:
                if conn.draining:
                    return
                if ctx.security.ssl_context is not None and not await self._start_tls(conn, clock):
                    return
                if ctx.security.sasl:
                    sasl = SaslDriver(self._sasl_io(conn, clock), ctx.security, ctx.auth_counters)
                await self._loop(conn, meter, sasl)
        except RemoteProtocolError as exc:
            ctx.events.bad_request(conn, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            conn.close_reason = conn.close_reason or f"disconnected: {exc}"
        except _CloseRequested:
            if sasl is not None and sasl.close_reason and not conn.close_reason:
                conn.close_reason = sasl.close_reason
        except Exception:
            # A broker bug met on this connection: it costs this connection only (as a
            # Kafka processor closes a channel whose processing threw), never the broker.
            conn.close_reason = "broker error"
            ctx.events.internal_error(conn)
        finally:
            meter.stop()
            conn.closed = True
            if conn.in_flight is not None:
                # ended without their responses reaching the client: report them (metrics
                # count them as errors; their send_complete_ns stays 0)
                conn.in_flight = None
                unanswered, conn.order.outstanding = conn.order.outstanding, []
                for request in unanswered:
                    self._release_memory(request)
                    try:
                        ctx.events.request_completed(request)
                    except Exception:  # a broker bug, on a connection already closing
                        ctx.events.internal_error(conn)
            self._release_reserved(conn)
            for action in [*conn.mailbox.drain(), *conn.order.held.values()]:
                release_action(action)
            conn.order.held.clear()
            await trio.aclose_forcefully(conn.stream)
            owner = conn.processor
            if isinstance(owner, Processor):
                owner.connections.discard(conn)
            self.connections.discard(conn)
            ctx.events.connection_closed(conn)

    async def _start_tls(self, conn: Connection, clock: WaitClock) -> bool:
        ctx = self.context
        assert ctx.security.ssl_context is not None
        transport: trio.abc.Stream = conn.stream
        if isinstance(transport, trio.SocketStream):
            transport = SocketTransport(transport, clock)
        outcome = await tls_handshake(
            transport, ctx.security.ssl_context, ctx.security.tls_handshake_timeout_s
        )
        if isinstance(outcome, str):
            conn.close_reason = f"TLS handshake failed: {outcome}"
            ctx.events.tls_failed(conn, outcome)
            return False
        ctx.auth_counters.tls_handshakes += 1
        conn.stream = outcome.stream
        conn.principal = outcome.principal
        return True

    def _sasl_io(self, conn: Connection, clock: WaitClock) -> SaslIo:
        async def write(parts: Any) -> None:
            await send_parts(conn.stream, parts, clock)
            conn.bytes_out += parts_length(parts)

        return SaslIo(
            write=write,
            release=self._release_memory,
            completed=self.context.events.request_completed,
            peer=conn.remote_str,
            listener=self.context.name,
            connection_id=conn.id,
        )

    async def _loop(self, conn: Connection, meter: BusyMeter, sasl: SaslDriver | None) -> None:
        ctx = self.context
        requests = ctx.requests
        idle_ns = ctx.idle_timeout_ns
        while True:
            frame = await self._read_frame(conn, meter, idle_ns)
            if frame is None:
                return
            if sasl is not None and sasl.raw:  # a raw token after a v0 SaslHandshake
                self._release_reserved(conn)
                meter.stop()  # an authentication exchange: waits on a worker thread
                ok = await sasl.raw_token(frame)
                meter.start()
                if not ok:
                    conn.close_reason = conn.close_reason or sasl.close_reason
                    return
                continue
            request = self._parse(conn, frame)
            if sasl is not None:
                meter.stop()
                outcome = await sasl.intercept(request)
                meter.start()
                if sasl.principal is not None:
                    conn.principal = request.principal = sasl.principal
                if outcome is Outcome.CLOSE:
                    raise _CloseRequested
                if outcome is Outcome.HANDLED:
                    continue
            group = [request]
            if sasl is None and request.spec.key in PIPELINED and ctx.plane == "data":
                # pipelined requests already received go with it (network.pipelining)
                followers = take_followers(
                    conn, request, ctx.api_versions, ctx.memory_pool, self._parse
                )
                if followers:
                    request.followers = followers
                    group += followers
            conn.mute_state = transition(conn.mute_state, MuteEvent.MUTE)
            conn.mute_state = transition(conn.mute_state, MuteEvent.REQUEST_RECEIVED)
            conn.in_flight = request
            conn.order.begin(group)
            meter.stop()
            if not requests.try_send(request):
                await requests.send(request)  # the channel is full: wait for room
            pool = ctx.memory_pool
            while conn.mute_state is not MuteState.NOT_MUTED:
                if sasl is None and not len(conn.mailbox):
                    want = read_ahead_want(conn, pool)
                    if want:
                        await read_ahead(conn, want, meter.clock)
                        continue
                first = await conn.mailbox.get()
                meter.start()
                actions = [first, *conn.mailbox.drain()]  # the others already there
                now = time.monotonic_ns()
                for action in actions:
                    action.request.times.response_dequeue_ns = now
                await self._apply_all(conn, actions, meter.clock)
                meter.stop()
            meter.start()
            if conn.order.error is not None:  # a pipelined frame behind the group was bad
                error, conn.order.error = conn.order.error, None
                raise error

    # ------------------------------------------------------------------ framing

    async def _read_frame(
        self, conn: Connection, meter: BusyMeter, idle_ns: int
    ) -> bytes | bytearray | None:
        """The next request frame, or None when the connection is to end quietly (closed
        by the client, idle, too slow, shutting down).

        Two clocks bound a read: ``connections.max.idle.ms`` from the last byte received,
        and ``request.read.timeout.ms`` from the first byte of the request in progress (a
        client trickling a byte a second never idles, but is closed by the second).
        """
        framer = conn.framer
        clock = meter.clock
        # Bytes of the next request already buffered (pipelined, or read ahead while the
        # previous request was in flight) count from now.
        started = trio.current_time() if framer.buffered or conn.partial else None
        if conn.partial is not None:  # a large frame begun while muted: finish it
            partial, have = conn.partial
            conn.partial = None
            return await self._read_direct(
                conn, clock, len(partial), idle_ns, started, partial, have
            )
        while True:
            if not conn.reserved:
                size = framer.frame_size()
                if size is not None:
                    meter.stop()
                    waited = await self._reserve(conn, size)
                    meter.start()
                    if waited is None:
                        return None
                    if waited:  # it read nothing while muted: restart the request's clock
                        started = trio.current_time()
            frame = framer.next_frame()
            if frame is not None:
                return frame
            if conn.draining:
                return None
            size = framer.frame_size()
            if (
                size is not None
                and size >= DIRECT_READ
                and isinstance(conn.stream, trio.SocketStream)
            ):
                return await self._read_direct(conn, clock, size, idle_ns, started)
            want = max(_RECEIVE_SIZE, framer.wanted())
            data: bytes | bytearray | None = receive_now(conn.stream, want)
            if data is None:  # nothing there yet: wait, under the read deadlines
                with trio.CancelScope() as scope:
                    conn.read_scope = scope
                    scope.deadline = self._read_deadline(idle_ns, started)
                    data = await receive_some(conn.stream, want, clock)
                conn.read_scope = None
                if scope.cancelled_caught:
                    self._read_timed_out(conn, started, framer.buffered)
                    return None
            if not data:
                framer.receive_eof()
                conn.close_reason = "closed by client"
                return None
            if started is None:
                started = trio.current_time()
            conn.bytes_in += len(data)
            conn.last_active_ns = time.monotonic_ns()
            framer.receive_data(data)

    def _read_deadline(self, idle_ns: int, started: float | None) -> float:
        """When the read now starting gives up: idle from now, or the request's own bound."""
        deadline = trio.current_time() + idle_ns / 1e9 if idle_ns else math.inf
        request_ns = self.context.request_read_timeout_ns
        if started is not None and request_ns:
            deadline = min(deadline, started + request_ns / 1e9)
        return deadline

    def _read_timed_out(self, conn: Connection, started: float | None, have: int) -> None:
        """A read's deadline passed (or shutdown cancelled it): say which, and count it."""
        if conn.draining:
            return
        request_ns = self.context.request_read_timeout_ns
        if started is not None and request_ns and trio.current_time() >= started + request_ns / 1e9:
            conn.close_reason = "request read timeout"
            self.context.events.request_read_timed_out(conn, have)
        else:
            conn.close_reason = "idle"
            self.context.events.connection_reaped(conn)

    async def _read_direct(
        self,
        conn: Connection,
        clock: WaitClock,
        size: int,
        idle_ns: int,
        started: float | None,
        frame: bytearray | None = None,
        have: int = 0,
    ) -> bytearray | None:
        """Read a large frame straight into its own buffer (one copy, from the kernel),
        or finish ``frame`` when it already holds ``have`` bytes."""
        if frame is None:
            frame, have = conn.framer.take_frame_start(size)
        view = memoryview(frame)
        assert isinstance(conn.stream, trio.SocketStream)
        sock = conn.stream.socket
        if started is None:
            started = trio.current_time()
        while have < size:
            with trio.CancelScope() as scope:
                conn.read_scope = scope
                scope.deadline = self._read_deadline(idle_ns, started)
                n = await receive_into(sock, view[have:], clock)
            conn.read_scope = None
            if scope.cancelled_caught:
                self._read_timed_out(conn, started, have + 4)
                return None
            if n == 0:
                raise TruncatedFrame(f"connection closed {size - have} bytes before a frame's end")
            have += n
            conn.bytes_in += n
            conn.last_active_ns = time.monotonic_ns()
        return frame

    async def _reserve(self, conn: Connection, size: int) -> bool | None:
        """Reserve the frame's bytes in the memory pool before reading them; while the
        pool is used up, the connection is muted and reads nothing. Whether it had to wait
        for the memory; None: shutting down."""
        pool = self.context.memory_pool
        if pool is None or pool.try_reserve(size):
            conn.reserved = size
            return False
        conn.mute_state = transition(conn.mute_state, MuteEvent.MUTE)
        with trio.CancelScope() as scope:
            conn.read_scope = scope
            await pool.reserve(size)
            conn.reserved = size
        conn.read_scope = None
        conn.mute_state = transition(conn.mute_state, MuteEvent.UNMUTE)
        return None if scope.cancelled_caught else True

    def _release_reserved(self, conn: Connection) -> None:
        if conn.reserved and self.context.memory_pool is not None:
            self.context.memory_pool.release(conn.reserved)
        conn.reserved = 0

    def _release_memory(self, request: Request | None) -> None:
        pool = self.context.memory_pool
        if pool is not None and request is not None and request.memory:
            pool.release(request.memory)
            request.memory = 0

    # ------------------------------------------------------------------ parsing

    def _parse(self, conn: Connection, frame: bytes | bytearray) -> Request:
        start = time.monotonic_ns()
        ctx = self.context
        header, spec, pos = wire.decode_request_header(frame)
        versions = ctx.api_versions.get(spec.key)
        if versions is None:
            raise UnknownApiKey(
                f"api key {spec.key} ({spec.name}) is not served on listener {ctx.name}"
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
        conn.requests += 1
        if header.client_id is not None:
            conn.client_id = header.client_id
        if spec.key == _API_VERSIONS and body is not None and header.api_version >= 3:
            conn.client_software_name = body.client_software_name or None
            conn.client_software_version = body.client_software_version or None
        request = Request(
            sink=conn,
            connection_id=conn.id,
            processor_id=conn.processor.id,
            header=header,
            spec=spec,
            body=body,
            size=len(frame) + 4,
            times=RequestTimes(start_ns=start),
            listener=ctx.name,
            security_protocol=ctx.security_protocol,
            client_host=conn.remote[0],
            client_port=conn.remote[1],
            client_software=(conn.client_software_name, conn.client_software_version),
            principal=conn.principal,
            plane=ctx.plane,
            memory=conn.reserved,
        )
        conn.reserved = 0
        return request

    # ---------------------------------------------------------------- responses

    async def _apply_all(
        self, conn: Connection, actions: list[ResponseAction], clock: WaitClock
    ) -> None:
        """Apply actions in the order received; the responses among them in their
        requests' order (``ResponseOrder``), consecutive writes in one send."""
        ready: list[ResponseAction] = []
        for action in actions:
            if is_response(action):
                ready += conn.order.ready(action)
            else:
                await self._answer(conn, ready, clock)
                ready = []
                self._throttle(conn, action)
        await self._answer(conn, ready, clock)

    async def _answer(
        self, conn: Connection, actions: list[ResponseAction], clock: WaitClock
    ) -> None:
        """Send the response actions given (in order), the writes among them together."""
        writes: list[SendResponse] = []
        for action in actions:
            if isinstance(action, SendResponse):
                writes.append(action)
                continue
            await self._write(conn, writes, clock)
            writes = []
            if isinstance(action, NoOpResponse):
                action.request.times.send_complete_ns = time.monotonic_ns()
                self._response_done(conn, action.request)
            elif isinstance(action, CloseConnectionResponse):
                conn.close_reason = action.reason or "closed by the broker"
                raise _CloseRequested
        await self._write(conn, writes, clock)

    async def _write(self, conn: Connection, writes: list[SendResponse], clock: WaitClock) -> None:
        if not writes:
            return
        parts = writes[0].parts if len(writes) == 1 else [p for w in writes for p in w.parts]
        await send_parts(conn.stream, parts, clock)
        now = time.monotonic_ns()
        conn.last_active_ns = now
        for w in writes:
            conn.bytes_out += w.size
            w.request.times.send_complete_ns = now
            self._response_done(conn, w.request)

    def _throttle(self, conn: Connection, action: ResponseAction) -> None:
        """A throttle starts or ends. Counted: with a pipelined group in flight several may
        overlap, and the connection stays throttled until the last ends."""
        order = conn.order
        if isinstance(action, StartThrottling):
            order.throttles += 1
            if order.throttles == 1:
                conn.mute_state = transition(conn.mute_state, MuteEvent.THROTTLE_STARTED)
            until = time.monotonic_ns() + action.throttle_ms * 1_000_000
            conn.throttle_until_ns = max(conn.throttle_until_ns, until)
        elif isinstance(action, EndThrottling):
            order.throttles -= 1
            if order.throttles == 0:
                conn.mute_state = transition(conn.mute_state, MuteEvent.THROTTLE_ENDED)
                conn.throttle_until_ns = 0
                self._maybe_unmute(conn)

    def _response_done(self, conn: Connection, request: Request) -> None:
        self._release_memory(request)
        answered = conn.order.answered(request)
        self.context.events.request_completed(request)
        if answered:  # the last of its group: the connection may read again
            conn.mute_state = transition(conn.mute_state, MuteEvent.RESPONSE_SENT)
            conn.in_flight = None
            self._maybe_unmute(conn)

    def _maybe_unmute(self, conn: Connection) -> None:
        if conn.mute_state is MuteState.MUTED:
            conn.mute_state = transition(conn.mute_state, MuteEvent.UNMUTE)
