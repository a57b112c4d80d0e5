"""A ZooKeeper session on kazoo that never blocks the broker's event loop.

Owns: ``ZkSession``: it opens the session (``zookeeper.connect``, optional chroot
included, ``zookeeper.session.timeout.ms``, ``zookeeper.connection.timeout.ms``), makes
every ZooKeeper call through kazoo's asynchronous API and waits for its answer on the
loop, for at most one session timeout (a call queued while ZooKeeper is away would
otherwise wait for as long as it stays away: a request needing it past its client's
timeout, a SIGTERM behind it), and turns what kazoo reports on its own threads into Trio
on the broker's loop:

- the session's state (``CONNECTED``, ``SUSPENDED``: the connection is down but the session
  may come back, ``LOST``: it expired, and every ephemeral node it held is gone), and
  ``state_changed``, which wakes whoever waits for the next change;
- watches: ``wait_for_change(path)`` returns once the node is created, changed or deleted
  (or the session's state changes, when the watch may have been lost with it);
  ``watch_children`` and ``watch_data`` read a node's children or data and watch them.
  ``watch_data`` keeps one watch per node until it fires (a reader that asks every
  round, as the controller does for each topic, does not pile up kazoo watchers).

kazoo is the maintained Python client made for this (session handling, reconnection,
chroot); this module only bridges its threads to Trio, and caps kazoo's reconnection
backoff at ``RECONNECT_MAX_S``.
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)

from ...protocol.errors import Unavailable

log = logging.getLogger("trio_broker.zookeeper")

RECONNECT_MAX_S = 1.0  # as ZooKeeper's own Java client: up to a second between attempts


class ZooKeeperUnavailable(Unavailable, ConnectionLoss):
    """A ZooKeeper call failed for want of a connection or a session. A request that
    needed it is answered with a retriable error (``Unavailable``); the broker's own jobs
    that wait for the session and try again catch it as kazoo's ``ConnectionLoss``."""


class ZkState(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"
    CLOSED = "closed"


class ZkSession:
    def __init__(
        self, connect: str, *, session_timeout_ms: int, connection_timeout_ms: int
    ) -> None:
        self.connect = connect
        self.connection_timeout_s = connection_timeout_ms / 1000
        # How long a call waits for ZooKeeper's answer. Longer serves nothing: a session
        # that reaches no server for this long has expired, and the call with it.
        self.call_timeout_s = session_timeout_ms / 1000
        # Reconnect attempts at most RECONNECT_MAX_S apart (kazoo's default backoff grows
        # to an hour): after a ZooKeeper outage every broker is back within about a
        # second, inside the wait of the first one to become controller.
        self._client = KazooClient(
            hosts=connect,
            timeout=session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "max_delay": RECONNECT_MAX_S},
        )
        self.state = ZkState.CLOSED
        self.sessions = 0  # sessions established so far (a new one after LOST)
        self._changed = trio.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        # watch_data's watches set and not fired yet: path -> the event its firing sets.
        self._data_watches: dict[str, trio.Event] = {}

    # ---------------------------------------------------------------- life cycle

    async def start(self) -> None:
        """Open the session; ``ConnectionError`` naming the servers when none answers."""
        self._token = trio.lowlevel.current_trio_token()
        self._client.add_listener(self._on_state)
        try:
            await trio.to_thread.run_sync(self._client.start, self.connection_timeout_s)
        except Exception as exc:  # kazoo's timeout, or a bad connect string
            await trio.to_thread.run_sync(self._client.close)
            raise ConnectionError(
                f"zookeeper.connect={self.connect}: no ZooKeeper session within "
                f"{self.connection_timeout_s:g} s ({exc.__class__.__name__}: {exc})"
            ) from None
        self._set(ZkState.CONNECTED)

    async def close(self) -> None:
        """End the session (its ephemeral nodes go at once) and the client's threads."""
        if self.state is ZkState.CLOSED:
            return
        await trio.to_thread.run_sync(self._client.stop)
        await trio.to_thread.run_sync(self._client.close)
        self._set(ZkState.CLOSED)

    def _on_state(self, state: str) -> None:
        """kazoo's listener (its thread): hand the state to the loop."""
        mapped = {
            KazooState.CONNECTED: ZkState.CONNECTED,
            KazooState.SUSPENDED: ZkState.SUSPENDED,
            KazooState.LOST: ZkState.LOST,
        }[state]
        self._to_loop(self._set, mapped)

    def _set(self, state: ZkState) -> None:
        if state is ZkState.CONNECTED and self.state is not ZkState.CONNECTED:
            self.sessions += 1 if self.state in (ZkState.LOST, ZkState.CLOSED) else 0
        if state is not self.state:
            log.info("ZooKeeper session %s", state.value)
        self.state = state
        self._data_watches.clear()  # the next watch_data sets a watch again
        self._changed.set()
        self._changed = trio.Event()

    def _to_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """Have ``fn(*args)`` run on the broker's loop, from one of kazoo's threads,
        without waiting for it: kazoo calls its listeners and watches on its connection
        thread, which must not block (while it waits, nothing reaches ZooKeeper, pings
        included, and a busy loop could cost the session). Calls run in the order made."""
        if self._token is None:
            return

        def run() -> None:
            try:
                fn(*args)
            except Exception:
                log.exception("ZooKeeper callback %s failed", getattr(fn, "__name__", fn))

        with contextlib.suppress(trio.RunFinishedError):  # the broker has stopped
            self._token.run_sync_soon(run)

    async def state_changed(self) -> ZkState:
        """Wait for the next change of the session's state; the new state."""
        await self._changed.wait()
        return self.state

    # ------------------------------------------------------------------ calls

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` (one of kazoo's ``*_async`` calls, which only queue the request) and its
        answer, waited for on the loop; ``ZooKeeperUnavailable`` when ZooKeeper cannot be
        reached (the connection lost, the session expired or closed) or gives no answer
        within ``call_timeout_s``. The request may still be carried out after that, as
        after a lost connection: callers treat both alike (they read again and retry)."""
        answered = trio.Event()
        result = fn(*args, **kwargs)
        result.rawlink(lambda _result: self._to_loop(answered.set))
        with trio.move_on_after(self.call_timeout_s):
            await answered.wait()
        if not answered.is_set():
            raise ZooKeeperUnavailable(
                f"ZooKeeper cannot be reached (no answer within {self.call_timeout_s:g} s, "
                "zookeeper.session.timeout.ms): try again"
            )
        try:
            return result.get_nowait()
        except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as exc:
            raise ZooKeeperUnavailable(
                f"ZooKeeper cannot be reached ({type(exc).__name__}): try again"
            ) from exc

    async def create(
        self, path: str, data: bytes, *, ephemeral: bool = False, makepath: bool = False
    ) -> bool:
        """Create ``path``; False if it exists already."""
        try:
            await self._call(
                self._client.create_async, path, data, ephemeral=ephemeral, makepath=makepath
            )
        except NodeExistsError:
            return False
        return True

    async def create_sequential(self, prefix: str, data: bytes) -> str:
        """Create a persistent node named ``prefix`` plus ZooKeeper's sequence number
        (parents made as needed); its path."""
        return str(
            await self._call(self._client.create_async, prefix, data, sequence=True, makepath=True)
        )

    async def ensure_path(self, path: str) -> None:
        await self._call(self._client.ensure_path_async, path)

    async def get(self, path: str) -> tuple[bytes, int] | None:
        """The node's data and version, or None when there is no such node."""
        try:
            data, stat = await self._call(self._client.get_async, path)
        except NoNodeError:
            return None
        return bytes(data), int(stat.version)

    async def set(self, path: str, data: bytes, version: int) -> int:
        """Replace the data if the node is at ``version`` (``BadVersionError`` if not);
        the new version."""
        stat = await self._call(self._client.set_async, path, data, version)
        return int(stat.version)

    async def delete(self, path: str, version: int = -1) -> bool:
        """Delete the node (at ``version``, if given); False if there was none."""
        try:
            await self._call(self._client.delete_async, path, version)
        except NoNodeError:
            return False
        return True

    @property
    def session_id(self) -> int | None:
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else None

    async def owner(self, path: str) -> int | None:
        """The session id owning the ephemeral node at ``path`` (None: none, or not
        ephemeral)."""
        stat = await self._call(self._client.exists_async, path)
        return int(stat.ephemeralOwner) if stat is not None and stat.ephemeralOwner else None

    async def created_ms(self, path: str) -> int | None:
        """When the node was created (ZooKeeper's ctime, ms), or None if there is none."""
        stat = await self._call(self._client.exists_async, path)
        return int(stat.ctime) if stat is not None else None

    async def children(self, path: str) -> list[str]:
        try:
            return list(await self._call(self._client.get_children_async, path))
        except NoNodeError:
            return []

    async def wait_for_change(self, path: str) -> None:
        """Return once ``path`` is created, changed or deleted after this call began, or
        the session's state changes (a watch does not survive a lost session)."""
        fired, session, watch = self._watch()
        await self._call(self._client.exists_async, path, watch=watch)
        await self._until(fired, session)

    async def watch_children(self, path: str) -> tuple[list[str], Callable[[], Awaitable[None]]]:
        """The children of ``path`` now, and a function that returns once they change (or
        the session's state does)."""
        fired, session, watch = self._watch()
        try:
            kids = list(await self._call(self._client.get_children_async, path, watch=watch))
        except NoNodeError:
            kids = []
        return kids, lambda: self._until(fired, session)

    async def watch_data(
        self, path: str
    ) -> tuple[tuple[bytes, int] | None, Callable[[], Awaitable[None]]]:
        """The node's data and version now (None: no such node), and a function that
        returns once the node changes or goes (or the session's state changes). A watch
        set by an earlier call and not fired yet serves again: it fires on any change
        after that call's read, so on any change after this one's."""
        fired = self._data_watches.get(path)
        session = self._changed
        try:
            if fired is not None:
                data, stat = await self._call(self._client.get_async, path)
            else:
                fired, session, watch = self._watch(path)
                self._data_watches[path] = fired
                data, stat = await self._call(self._client.get_async, path, watch=watch)
        except NoNodeError:  # ZooKeeper sets no data watch on a missing node
            self._data_watches.pop(path, None)
            return None, lambda: self._until(trio.Event(), session)
        armed = fired
        return (bytes(data), int(stat.version)), lambda: self._until(armed, session)

    def data_watch(self, path: str) -> trio.Event | None:
        """The data watch ``watch_data`` set on ``path`` while it has not fired (None
        after it has, or after the session's state changed)."""
        return self._data_watches.get(path)

    def _watch(
        self, path: str | None = None
    ) -> tuple[trio.Event, trio.Event, Callable[[Any], None]]:
        fired = trio.Event()

        def done() -> None:
            fired.set()
            if path is not None and self._data_watches.get(path) is fired:
                del self._data_watches[path]

        def watch(_event: Any) -> None:  # kazoo's thread
            self._to_loop(done)

        return fired, self._changed, watch

    async def _until(self, fired: trio.Event, session: trio.Event) -> None:
        async with trio.open_nursery() as nursery:

            async def on_state() -> None:
                await session.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(on_state)
            await fired.wait()
            nursery.cancel_scope.cancel()
