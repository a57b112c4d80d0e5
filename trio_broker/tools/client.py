"""A small blocking Kafka protocol client on our own codec, for tools and tests.

Owns: ``WireClient``: one TCP connection, requests encoded with ``encode_request``,
responses decoded with ``decode_response``, correlation ids matched. It can also send raw
bytes, pipeline requests, and tell whether the broker closed the connection, which tests
of bad input need. No trio: tools run it from plain scripts.
"""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

from ..protocol import messages  # noqa: F401  (registers every message)
from ..protocol.api import spec_for
from ..protocol.header import decode_response, encode_request
from ..protocol.primitives import join_parts
from ..protocol.schema import Request

_API_VERSIONS = 18


class WireClient:
    def __init__(
        self, address: str, client_id: str | None = "trio-broker-tool", timeout: float = 10.0
    ):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int]] = {}

    def frame(
        self, body: Request, version: int, correlation_id: int | None = None
    ) -> tuple[int, bytes]:
        """The framed request and its correlation id (remembered for ``receive``)."""
        corr = next(self._corr) if correlation_id is None else correlation_id
        data = join_parts(encode_request(version, corr, self.client_id, body))
        self._pending[corr] = (body.api_key, version)
        return corr, data

    def send(self, body: Request, version: int) -> int:
        corr, data = self.frame(body, version)
        self.sock.sendall(data)
        return corr

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exact(4))[0]
        return self._read_exact(size)

    def receive(self) -> tuple[int, Any]:
        frame = self.read_frame()
        corr = struct.unpack_from(">i", frame)[0]
        api_key, version = self._pending.pop(corr)
        spec = spec_for(api_key)
        assert spec is not None
        if api_key == _API_VERSIONS and version not in spec.versions:
            version = 0  # KIP-511: the answer to an unknown ApiVersions version is v0
        return decode_response(spec, version, frame)

    def request(self, body: Request, version: int) -> Any:
        corr = self.send(body, version)
        got, response = self.receive()
        if got != corr:
            raise ConnectionError(f"correlation id {got} answers request {corr}")
        return response

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return bytes(buf)

    def closed_by_peer(self) -> bool:
        """True once the broker has closed the connection (waits up to the timeout)."""
        try:
            data = self.sock.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        return data == b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
