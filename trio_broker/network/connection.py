"""One client connection's state: what its owning processor needs to serve it.

Owns: ``Connection`` (the socket, the frame buffer, the mute state, the request in flight,
the client's identity and counters), its ``Mailbox`` of response actions and its
``ResponseOrder`` (the requests in flight, one or a pipelined group, answered in order).
A connection is the ``ResponseSink`` of its requests: ``deliver`` puts an action in the
mailbox, where the processor's work on this connection takes it up, in order; no task
sits in between.

A connection belongs to one processor at a time (``processor``); when the network pool
shrinks, the processor hands it to another one with its state untouched (the buffered
bytes are in ``framer``, the mute state here, the pending action in the mailbox). The
network work itself (framing, parsing, mute transitions, response writes) is the
processor's: see ``network.processor``.
Must not: do I/O, or know the listener, the processor or the request channel.
"""

from __future__ import annotations

import collections
import time
from typing import Protocol

import trio

from ..protocol.framing import FrameDecoder
from .mute import MuteState
from .request import (
    CloseConnectionResponse,
    NoOpResponse,
    Request,
    ResponseAction,
    SendResponse,
)


class Owner(Protocol):
    """The processor that owns a connection, as the connection sees it."""

    id: int

    def add_busy(self, ns: int) -> None: ...


class Mailbox:
    """A FIFO of actions for one waiting task: cheaper per connection than a channel."""

    __slots__ = ("_items", "_lot")

    def __init__(self) -> None:
        self._items: collections.deque[ResponseAction] = collections.deque()
        self._lot = trio.lowlevel.ParkingLot()

    def put(self, item: ResponseAction) -> None:
        self._items.append(item)
        self._lot.unpark()

    async def get(self) -> ResponseAction:
        while not self._items:
            await self._lot.park()
        return self._items.popleft()

    def drain(self) -> list[ResponseAction]:
        items = list(self._items)
        self._items.clear()
        return items

    def __len__(self) -> int:
        return len(self._items)


class ResponseOrder:
    """A connection's requests in flight (one, or a pipelined group) and their answers.

    Response actions (``SendResponse``, ``NoOpResponse``, ``CloseConnectionResponse``) go
    out in the requests' order: one that arrives before those of earlier requests is held
    (a request of the group waiting in a purgatory answers later than the ones behind it).
    Throttles are counted: the connection is throttled from the first start to the last
    end among them."""

    __slots__ = ("error", "held", "next_index", "outstanding", "throttles")

    def __init__(self) -> None:
        self.outstanding: list[Request] = []  # not yet answered, in order
        self.next_index = 0  # the group index whose response may go out next
        self.held: dict[int, ResponseAction] = {}
        self.throttles = 0
        self.error: Exception | None = None  # a follower frame that did not parse

    def begin(self, requests: list[Request]) -> None:
        self.outstanding = requests
        self.next_index = 0
        self.held.clear()

    @property
    def in_flight(self) -> bool:
        return bool(self.outstanding)

    def ready(self, action: ResponseAction) -> list[ResponseAction]:
        """The response actions that may go out now that ``action`` came, in order (none
        if it came early: it is held)."""
        index = action.request.group_index
        if index != self.next_index:
            self.held[index] = action
            return []
        out = [action]
        index += 1
        while index in self.held:
            out.append(self.held.pop(index))
            index += 1
        self.next_index = index
        return out

    def answered(self, request: Request) -> bool:
        """``request``'s response went out; whether its whole group is answered now."""
        if self.outstanding and self.outstanding[0] is request:
            self.outstanding.pop(0)
        else:
            self.outstanding.remove(request)
        return not self.outstanding


def is_response(action: ResponseAction) -> bool:
    """An action that answers its request (the others are the throttles')."""
    return isinstance(action, SendResponse | NoOpResponse | CloseConnectionResponse)


class Connection:
    """One accepted socket and the state of its conversation with the broker."""

    def __init__(
        self,
        conn_id: str,
        stream: trio.abc.Stream,
        remote: tuple,
        owner: Owner,
        *,
        listener: str,
        max_request_size: int,
    ) -> None:
        self.id = conn_id
        self.stream = stream
        self.remote = remote
        self.processor = owner
        self.listener = listener
        self.framer = FrameDecoder(max_request_size)
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
        self.draining = False
        self.scope: trio.CancelScope | None = None  # the task serving it
        self.read_scope: trio.CancelScope | None = None  # a read in progress
        self.in_flight: Request | None = None  # the request handed over (a group's first)
        self.order = ResponseOrder()  # its responses, in order (network.pipelining)
        self.reserved = 0  # memory-pool bytes held for the frame being read
        # Reading the next request while this one is in flight (network.read_ahead): a
        # large frame's own buffer and the bytes in it, the wait an action cuts short,
        # and whether the stream ended meanwhile.
        self.partial: tuple[bytearray, int] | None = None
        self.ahead_scope: trio.CancelScope | None = None
        self.ahead_stopped = False

    @property
    def remote_str(self) -> str:
        host, port = self.remote[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    # ------------------------------------------------------------- from other tasks

    def deliver(self, action: ResponseAction) -> None:
        """Queue an action for this connection (its ``ResponseSink``); never blocks."""
        times = action.request.times
        if not times.response_complete_ns:
            times.response_complete_ns = time.monotonic_ns()
        if self.closed:
            release_action(action)
        else:
            self.mailbox.put(action)
            if self.ahead_scope is not None:  # reading ahead: take the action up now
                self.ahead_scope.cancel()

    def close(self, reason: str) -> None:
        """Close at once (from another task): in-flight work is abandoned."""
        if not self.close_reason:
            self.close_reason = reason
        if self.scope is not None:
            self.scope.cancel()
        else:
            self.draining = True

    def drain(self) -> None:
        """Graceful shutdown: finish the request in flight, read no new ones."""
        self.draining = True
        if self.read_scope is not None:
            self.read_scope.cancel()

    # ----------------------------------------------------------------- reading

    def idle_ms(self, now_ns: int | None = None) -> float:
        return ((now_ns or time.monotonic_ns()) - self.last_active_ns) / 1e6

    def throttle_remaining_ms(self, now_ns: int | None = None) -> float:
        if self.throttle_until_ns == 0:
            return 0.0
        return max(0.0, (self.throttle_until_ns - (now_ns or time.monotonic_ns())) / 1e6)


def release_action(action: ResponseAction) -> None:
    """Give back what an action that will never be sent holds (file regions)."""
    if isinstance(action, SendResponse):
        for p in action.parts:
            release = getattr(p, "release", None)
            if release is not None:
                release()
