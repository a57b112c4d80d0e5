"""A Kafka protocol client on a trio stream: the broker's own requests to other brokers.

Owns: ``PeerClient``: one TCP connection to another broker's listener, requests encoded
with the codec's ``encode_request``, responses decoded and matched by correlation id. The
ZooKeeper-era controller sends its UpdateMetadata (and later LeaderAndIsr and StopReplica)
with it, over the receivers' control-plane listener; tests drive the broker with it too.
Plaintext only, as the controller's channel is for now.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

import trio

from ..protocol import messages  # noqa: F401  (registers every message)
from ..protocol.api import ApiKey, spec_for
from ..protocol.header import decode_response, encode_request
from ..protocol.primitives import join_parts
from ..protocol.schema import Request


class PeerClient:
    def __init__(self, stream: trio.SocketStream, client_id: str | None = "trio-broker") -> None:
        self.stream = stream
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int]] = {}
        self._buf = bytearray()

    @classmethod
    async def connect(cls, address: str, client_id: str | None = "trio-broker") -> PeerClient:
        host, port = address.rsplit(":", 1)
        return cls(await trio.open_tcp_stream(host.strip("[]"), int(port)), client_id)

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
        if api_key == ApiKey.ApiVersions and version not in spec.versions:
            version = 0  # KIP-511: the answer to an unknown ApiVersions version is v0
        return decode_response(spec, version, frame)

    async def request(self, body: Request, version: int) -> Any:
        corr = await self.send(body, version)
        got, response = await self.receive()
        if got != corr:
            raise ConnectionError(f"correlation id {got} answers request {corr}")
        return response

    async def aclose(self) -> None:
        await self.stream.aclose()
