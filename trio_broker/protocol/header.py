"""Request and response headers, and whole-message encode/decode on top of them.

Owns: request header v0-v2 (api key, version, correlation id, client id, tagged fields)
and response header v0-v1, and the functions that turn a frame into (header, body) and a
(header, body) into output parts with the size prefix filled in. Both directions exist:
the broker decodes requests and encodes responses; our own tools and tests do the reverse.
No I/O here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from . import codegen
from .api import ApiKey, ApiSpec, spec_for
from .errors import CorruptRequest, UnknownApiKey, UnsupportedApiVersion
from .primitives import Parts, parts_length, read_uvarint, uvarint
from .schema import Request, Response

_HEADER_FIXED = struct.Struct(">hhi")
_KAFKA_API_KEYS = frozenset(ApiKey)
_SIZE = struct.Struct(">i")
_CLIENT_ID_SIZE = struct.Struct(">h")
_SIZE_AND_CORRELATION = struct.Struct(">ii")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_header(data: bytes | bytearray) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a frame, for logging bad requests."""
    if len(data) < 8:
        raise CorruptRequest(f"a request header needs 8 bytes, the frame has {len(data)}")
    return _HEADER_FIXED.unpack_from(data, 0)  # type: ignore[return-value]


def decode_request_header(data: bytes | bytearray) -> tuple[RequestHeader, ApiSpec, int]:
    """Parse the header of a request frame; returns (header, spec, body offset).

    Raises ``UnknownApiKey`` for an api key we do not answer. For an unsupported version
    the header is still returned (``ApiVersions`` must answer it); ``decode_request_body``
    then raises ``UnsupportedApiVersion``.
    """
    api_key, api_version, correlation_id = peek_header(data)
    spec = spec_for(api_key)
    if spec is None:
        if api_key in _KAFKA_API_KEYS:
            raise UnknownApiKey(
                f"api key {api_key} ({ApiKey(api_key).name}) v{api_version} is not served by "
                "this broker (not in ApiVersions)"
            )
        raise UnknownApiKey(f"unknown api key {api_key}")
    pos = 8
    client_id: str | None = None
    supported = api_version in spec.versions
    header_version = spec.request_header_version(api_version) if supported else 1
    if header_version >= 1:
        if len(data) < 10:
            raise CorruptRequest("the frame ends inside the client id")
        (n,) = _CLIENT_ID_SIZE.unpack_from(data, 8)
        pos = 10
        if n >= 0:
            if pos + n > len(data):
                raise CorruptRequest("the frame ends inside the client id")
            try:
                client_id = str(data[pos : pos + n], "utf-8")
            except UnicodeDecodeError:
                raise CorruptRequest("the client id is not UTF-8") from None
            pos += n
    if header_version >= 2:
        pos = skip_tagged_fields(data, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), spec, pos


def skip_tagged_fields(data: bytes | bytearray, pos: int) -> int:
    """Skip a tagged-field section (headers define no tags we need)."""
    count, pos = read_uvarint(data, pos)
    for _ in range(count):
        _, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
        if pos > len(data):
            raise CorruptRequest("the frame ends inside a tagged field")
    return pos


def decode_request_body(
    spec: ApiSpec, version: int, data: bytes | bytearray, pos: int, mv: memoryview | None = None
) -> Request:
    """Decode the body of a request whose header said (spec, version)."""
    if version not in spec.versions:
        raise UnsupportedApiVersion(
            f"{spec.name} v{version} is not supported (we answer v{spec.versions})"
        )
    body, _end = codegen.decoder(spec.request, version)(
        data, memoryview(data) if mv is None else mv, pos
    )
    # Bytes after the body are ignored, as Kafka's broker ignores them: librdkafka 2.16
    # sends a null Metadata topic array as one byte followed by three stray bytes of a
    # 4-byte placeholder, and real brokers accept that.
    return body  # type: ignore[no-any-return]


def encode_response(spec: ApiSpec, version: int, correlation_id: int, body: Response) -> Parts:
    """The size-prefixed response frame as a list of buffers (record data not copied)."""
    head = bytearray(_SIZE_AND_CORRELATION.pack(0, correlation_id))
    if spec.response_header_version(version) >= 1:
        head += b"\x00"
    parts: Parts = [head]
    codegen.encoder(spec.response, version)(body, parts)
    _SIZE.pack_into(head, 0, parts_length(parts) - 4)
    return [p for p in parts if len(p)]


def encode_request(
    version: int, correlation_id: int, client_id: str | None, body: Request
) -> Parts:
    """The size-prefixed request frame (for our tools and tests: the client direction)."""
    spec = spec_for(body.api_key)
    if spec is None:
        raise UnknownApiKey(f"unknown api key {body.api_key}")
    head = bytearray(_SIZE.pack(0) + _HEADER_FIXED.pack(spec.key, version, correlation_id))
    header_version = spec.request_header_version(version)
    if header_version >= 1:
        if client_id is None:
            head += b"\xff\xff"
        else:
            raw = client_id.encode()
            head += struct.pack(">h", len(raw)) + raw
    if header_version >= 2:
        head += uvarint(0)
    parts: Parts = [head]
    codegen.encoder(spec.request, version)(body, parts)
    _SIZE.pack_into(head, 0, parts_length(parts) - 4)
    return [p for p in parts if len(p)]


def decode_response(spec: ApiSpec, version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation id, body) of a response frame without its size prefix."""
    if len(frame) < 4:
        raise CorruptRequest(f"a response header needs 4 bytes, the frame has {len(frame)}")
    (correlation_id,) = struct.unpack_from(">i", frame, 0)
    pos = 4
    if spec.response_header_version(version) >= 1:
        pos = skip_tagged_fields(frame, pos)
    body, end = codegen.decoder(spec.response, version)(frame, memoryview(frame), pos)
    if end != len(frame):
        raise CorruptRequest(f"{spec.name} response v{version} has bytes left over")
    return correlation_id, body
