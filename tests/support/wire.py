"""Kafka clients over raw sockets on our own codec (client side): blocking and trio.

For tests that need what real clients hide: pipelining, exact versions, raw bad bytes,
and seeing the broker close a connection.
"""

from __future__ import annotations

import trio

from trio_broker.network.peer_client import PeerClient
from trio_broker.tools.client import WireClient as _ToolClient

__all__ = ["AsyncWireClient", "WireClient"]

# The blocking client is the one our tools use; the trio one is the broker's own.
WireClient = _ToolClient


class AsyncWireClient(PeerClient):
    """The broker's own peer client, with what tests of bad input need besides."""

    @classmethod
    async def connect(cls, address: str, client_id: str | None = "wire-test") -> AsyncWireClient:
        host, port = address.rsplit(":", 1)
        return cls(await trio.open_tcp_stream(host, int(port)), client_id)

    async def closed_by_peer(self) -> bool:
        """Reads until EOF; True if the broker closed the connection."""
        try:
            while True:
                if not await self.stream.receive_some():
                    return True
        except Exception:
            return True
