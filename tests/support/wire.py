"""Kafka clients over raw sockets on our own codec (client side): blocking and trio.

For tests that need what real clients hide: pipelining, exact versions, raw bad bytes,
and seeing the broker close a connection.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

import trio_broker.protocol.messages  # noqa: F401
from trio_broker.protocol.api import spec_for
from trio_broker.protocol.header import decode_response, encode_request
from trio_broker.protocol.primitives import join_parts
from trio_broker.protocol.schema import Request
from trio_broker.tools.client import WireClient as _ToolClient

__all__ = ["AsyncWireClient", "WireClient"]

# The blocking client is the one our tools use.
WireClient = _ToolClient


class AsyncWireClient:
    """The same client on a trio stream, for tests that run the broker in their own loop."""

    def __init__(self, stream: Any, client_id: str | None = "wire-test") -> None:
        import trio

        self.stream: trio.SocketStream = stream
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int]] = {}
        self._buf = bytearray()

    @classmethod
    async def connect(cls, address: str, client_id: str | None = "wire-test") -> AsyncWireClient:
        import trio

        host, port = address.rsplit(":", 1)
        return cls(await trio.open_tcp_stream(host, int(port)), client_id)

    def frame(self, body: Request, version: int) -> tuple[int, bytes]:
        corr = next(self._corr)
        self._pending[corr] = (body.api_key, version)
        return corr, join_parts(encode_request(version, corr, self.client_id, body))

    async def send(self, body: Request, version: int) -> int:
        corr, data = self.frame(body, version)
        await self.stream.send_all(data)
        return corr

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = await self.stream.receive_some()
            if not chunk:
                raise ConnectionError("closed by the broker")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def receive(self) -> tuple[int, Any]:
        size = struct.unpack(">i", await self._read_exact(4))[0]
        frame = await self._read_exact(size)
        corr = struct.unpack_from(">i", frame)[0]
        api_key, version = self._pending.pop(corr)
        spec = spec_for(api_key)
        assert spec is not None
        if api_key == 18 and version not in spec.versions:
            version = 0
        return decode_response(spec, version, frame)

    async def request(self, body: Request, version: int) -> Any:
        corr = await self.send(body, version)
        got, response = await self.receive()
        assert got == corr
        return response

    async def closed_by_peer(self) -> bool:
        """Reads until EOF; True if the broker closed the connection."""
        try:
            while True:
                if not await self.stream.receive_some():
                    return True
        except Exception:
            return True

    async def aclose(self) -> None:
        await self.stream.aclose()
