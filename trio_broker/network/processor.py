"""A network processor: owner of a set of connections and of their response queue.

Owns: ``Processor``. The acceptor hands it new sockets through its new-connection channel
(capacity 20, as Kafka's); it registers each as a ``Connection`` and starts the
connection's task in the listener's connection nursery. Handlers hand response actions to
the processor that owns the connection (``send_response``); the processor's response task
takes them off its queue in order and passes each to its connection. When the pool
shrinks, ``retire`` moves this processor's connections, with everything they hold, to the
remaining processors; queued actions still reach their connections because an action is
routed by its connection, not by the queue it came through.

Trio runs every task of the broker on one thread, so a "network thread" is a unit of
ownership and accounting here (connections, response queue, busy time), not an OS thread.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

import trio

from ..protocol.errors import RemoteProtocolError
from . import actions as act
from .connection import Connection

if TYPE_CHECKING:
    from .socket_server import ListenerRuntime

log = logging.getLogger("trio_broker.network")

NEW_CONNECTION_QUEUE = 20


class Processor:
    def __init__(self, processor_id: int, listener: ListenerRuntime) -> None:
        self.id = processor_id
        self.listener = listener
        self.connections: set[Connection] = set()
        self.new_connections, self._new_rx = trio.open_memory_channel[trio.SocketStream](
            NEW_CONNECTION_QUEUE
        )
        self._responses_tx, self._responses_rx = trio.open_memory_channel[act.ResponseAction](
            math.inf
        )
        self.retired = False
        self.created_ns = time.monotonic_ns()
        self.retired_ns = 0  # when it left the pool (idle ratios across resizes)
        self.busy_ns = 0

    # ---------------------------------------------------------------- accounting

    def add_busy(self, ns: int) -> None:
        self.busy_ns += ns

    @property
    def response_queue_size(self) -> int:
        return self._responses_rx.statistics().current_buffer_used

    # -------------------------------------------------------------------- tasks

    async def run_new_connections(self) -> None:
        """Register sockets the acceptor hands over; after retiring, forward them."""
        async with self._new_rx:
            async for stream in self._new_rx:
                owner = self if not self.retired else self.listener.pick_processor()
                owner.start_connection(stream)

    async def run_responses(self) -> None:
        """Pass each queued response action to its connection, in queue order."""
        async with self._responses_rx:
            async for action in self._responses_rx:
                action.request.times.response_dequeue_ns = time.monotonic_ns()
                action.request.connection.deliver(action)

    # ---------------------------------------------------------------- ownership

    def start_connection(self, stream: trio.SocketStream) -> None:
        listener = self.listener
        try:
            remote = stream.socket.getpeername()
            local = stream.socket.getsockname()
        except OSError:
            stream.socket.close()
            return
        conn_id = listener.next_connection_id(local, remote)
        conn = Connection(conn_id, stream, listener, self, remote)
        self.connections.add(conn)
        listener.connection_opened(conn)
        listener.connection_nursery.start_soon(conn.serve, name=f"conn {conn_id}")

    def send_response(self, action: act.ResponseAction) -> None:
        """Queue an action for one of this processor's connections (never blocks)."""
        times = action.request.times
        if not times.response_complete_ns:
            times.response_complete_ns = time.monotonic_ns()
        try:
            self._responses_tx.send_nowait(action)
        except trio.ClosedResourceError:
            # Retired between routing and sending: deliver directly, order is kept
            # because a muted connection has at most one response in flight.
            action.request.connection.deliver(action)

    def connection_closed(self, conn: Connection) -> None:
        conn.processor.connections.discard(conn)
        self.connections.discard(conn)

    def bad_request(self, conn: Connection, exc: RemoteProtocolError) -> None:
        self.listener.bad_request(conn, exc)

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
        self._responses_tx.close()

    def close(self) -> None:
        """Shutdown: no more connections or responses will come."""
        self.new_connections.close()
        self._responses_tx.close()
