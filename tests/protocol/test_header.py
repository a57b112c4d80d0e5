"""Request and response headers, table-driven, and whole frames through ``header``.

- Request header v0 (ControlledShutdown v0 only), v1 and v2 decode, with null, empty and
  non-ASCII client ids, and header tagged fields (skipped).
- Malformed headers raise ``CorruptRequest``; unknown api keys ``UnknownApiKey``; an
  unsupported version still yields the header, and the body then raises
  ``UnsupportedApiVersion``.
- Response header v0/v1 encode (ApiVersions always v0, KIP-511).
- ``encode_request`` -> ``decode_request_header`` + ``decode_request_body`` round trip for
  every registered API and version, and whole framed bytes equal kafka-python's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import pytest
from kafka.protocol.api_header import RequestHeader as KafkaPythonRequestHeader

import trio_broker.protocol.messages  # noqa: F401  (registers every message)
from trio_broker.protocol import api, codegen
from trio_broker.protocol.api import ApiSpec, all_specs, spec_for
from trio_broker.protocol.errors import CorruptRequest, UnknownApiKey, UnsupportedApiVersion
from trio_broker.protocol.header import (
    RequestHeader,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    peek_header,
)
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from trio_broker.protocol.messages.metadata import MetadataRequest, MetadataResponse
from trio_broker.protocol.primitives import join_parts, uvarint
from trio_broker.protocol.schema import Message, Request, Response, field

from .oracle import kafka_python_class, kafka_schema, sample, to_kafka_python


class ControlledShutdownRequest(Request, api_key=7, versions="0-3", flexible="3+"):
    broker_id: int = field("int32")
    broker_epoch: int = field("int64", "2+", default=-1)


class ControlledShutdownResponse(Response, api_key=7, versions="0-3", flexible="3+"):
    error_code: int = field("int16")


@pytest.fixture
def controlled_shutdown(monkeypatch: pytest.MonkeyPatch) -> ApiSpec:
    """ControlledShutdown, the one API whose v0 uses request header v0, for this test only."""
    spec = ApiSpec(
        7,
        "ControlledShutdown",
        ControlledShutdownRequest,
        ControlledShutdownResponse,
        ControlledShutdownRequest.valid_versions,
    )
    monkeypatch.setitem(api._REGISTRY, 7, spec)
    return spec


def fixed(api_key: int, version: int, correlation_id: int = 77) -> bytes:
    return struct.pack(">hhi", api_key, version, correlation_id)


def tag(number: int, payload: bytes) -> bytes:
    return uvarint(number) + uvarint(len(payload)) + payload


# ------------------------------------------------------------------- request headers


@dataclass
class HeaderCase:
    id: str
    api_key: int
    version: int
    rest: bytes  # the header after api key, version and correlation id
    client_id: str | None
    header_version: int


HEADER_CASES = [
    HeaderCase("v0 has no client id", 7, 0, b"", None, 0),
    HeaderCase("v1 client id", 3, 1, b"\x00\x03abc", "abc", 1),
    HeaderCase("v1 empty client id", 3, 1, b"\x00\x00", "", 1),
    HeaderCase("v1 null client id", 3, 1, b"\xff\xff", None, 1),
    HeaderCase("v1 other negative length is null", 3, 1, b"\xff\xfe", None, 1),
    HeaderCase("v1 utf-8 client id", 3, 8, b"\x00\x04" + "né".encode() + b"!", "né!", 1),
    HeaderCase("v1 for ControlledShutdown v1", 7, 1, b"\x00\x01c", "c", 1),
    HeaderCase("v2 no tagged fields", 3, 9, b"\x00\x01c\x00", "c", 2),
    HeaderCase("v2 null client id", 3, 12, b"\xff\xff\x00", None, 2),
    # The client id stays a legacy (non-compact) string in header v2.
    HeaderCase("v2 client id is not compact", 18, 3, b"\x00\x02id\x00", "id", 2),
    HeaderCase(
        "v2 tagged fields skipped", 3, 9, b"\x00\x01c\x02" + tag(0, b"xyz") + tag(300, b""), "c", 2
    ),
    HeaderCase("v2 for ControlledShutdown v3", 7, 3, b"\x00\x00\x01" + tag(1, b"\x00"), "", 2),
    # A version we do not answer: read as header v1, so ApiVersions can still answer it.
    HeaderCase("unsupported version read as v1", 18, 9, b"\x00\x02id", "id", 1),
]


@pytest.mark.parametrize("case", HEADER_CASES, ids=[c.id for c in HEADER_CASES])
@pytest.mark.usefixtures("controlled_shutdown")
def test_decode_request_header(case: HeaderCase) -> None:
    body = b"\xde\xad"
    frame = fixed(case.api_key, case.version) + case.rest + body
    header, spec, offset = decode_request_header(frame)
    assert header == RequestHeader(case.api_key, case.version, 77, case.client_id)
    assert spec.key == case.api_key
    assert offset == len(frame) - len(body)
    if case.version in spec.versions:
        assert spec.request_header_version(case.version) == case.header_version
    assert peek_header(frame) == (case.api_key, case.version, 77)


@dataclass
class BadHeaderCase:
    id: str
    frame: bytes
    error: type[Exception]


BAD_HEADER_CASES = [
    BadHeaderCase("empty", b"", CorruptRequest),
    BadHeaderCase("seven bytes", fixed(3, 1)[:7], CorruptRequest),
    BadHeaderCase("ends inside client id length", fixed(3, 1) + b"\x00", CorruptRequest),
    BadHeaderCase("ends inside client id", fixed(3, 1) + b"\x00\x05abc", CorruptRequest),
    BadHeaderCase("client id not utf-8", fixed(3, 1) + b"\x00\x02\xff\xfe", CorruptRequest),
    BadHeaderCase("v2 without tagged fields", fixed(3, 9) + b"\x00\x01c", CorruptRequest),
    BadHeaderCase(
        "v2 tagged field longer than frame", fixed(3, 9) + b"\x00\x00\x01\x00\x05ab", CorruptRequest
    ),
    BadHeaderCase("v2 unterminated tag count", fixed(3, 9) + b"\x00\x00\x80\x80", CorruptRequest),
    BadHeaderCase(
        "v2 missing second tag", fixed(3, 9) + b"\x00\x00\x02" + tag(1, b"a"), CorruptRequest
    ),
    BadHeaderCase("unknown api key", fixed(9999, 0) + b"\x00\x00", UnknownApiKey),
    BadHeaderCase("negative api key", fixed(-1, 0) + b"\x00\x00", UnknownApiKey),
]


@pytest.mark.parametrize("case", BAD_HEADER_CASES, ids=[c.id for c in BAD_HEADER_CASES])
def test_bad_request_header(case: BadHeaderCase) -> None:
    with pytest.raises(case.error):
        decode_request_header(case.frame)


@pytest.mark.parametrize(("api_key", "version"), [(18, 5), (18, -1), (3, 14), (0, 2), (1, 3)])
def test_unsupported_version_yields_header_then_refuses_body(api_key: int, version: int) -> None:
    frame = fixed(api_key, version, 5) + b"\x00\x01c" + b"\x00"
    header, spec, offset = decode_request_header(frame)
    assert (header.api_version, header.correlation_id, header.client_id) == (version, 5, "c")
    with pytest.raises(UnsupportedApiVersion) as info:
        decode_request_body(spec, version, frame, offset)
    assert info.value.error_code == 35


def test_bytes_after_the_body_are_ignored_as_kafka_does() -> None:
    """librdkafka 2.16 sends a null Metadata topic array with three stray bytes after it;
    Kafka's broker ignores bytes after a request body, so must we."""
    frame = join_parts(encode_request(12, 1, "c", MetadataRequest(topics=None)))[4:]
    header, spec, offset = decode_request_header(frame)
    plain = decode_request_body(spec, header.api_version, frame, offset)
    padded = frame + b"\x01\x00\x00"
    assert decode_request_body(spec, header.api_version, padded, offset) == plain


# ------------------------------------------------------------------ response headers


@dataclass
class ResponseCase:
    id: str
    body: Message
    version: int
    header: bytes  # after the size prefix, before the body


RESPONSE_CASES = [
    ResponseCase("v0 for a non-flexible version", MetadataResponse(), 8, b"\x00\x00\x00\x2a"),
    ResponseCase("v1 for a flexible version", MetadataResponse(), 9, b"\x00\x00\x00\x2a\x00"),
    ResponseCase("ApiVersions v0", ApiVersionsResponse(), 0, b"\x00\x00\x00\x2a"),
    ResponseCase("ApiVersions v3 is still v0", ApiVersionsResponse(), 3, b"\x00\x00\x00\x2a"),
]


@pytest.mark.parametrize("case", RESPONSE_CASES, ids=[c.id for c in RESPONSE_CASES])
def test_encode_response_header(case: ResponseCase) -> None:
    spec = spec_for(case.body.api_key)
    assert spec is not None
    frame = join_parts(encode_response(spec, case.version, 42, case.body))  # type: ignore[arg-type]
    parts: list[Any] = [bytearray()]
    codegen.encoder(type(case.body), case.version)(case.body, parts)
    body = join_parts(parts)
    assert frame == struct.pack(">i", len(case.header) + len(body)) + case.header + body
    assert decode_response(spec, case.version, frame[4:]) == (42, case.body)


def test_request_header_bytes() -> None:
    frame = join_parts(encode_request(3, 9, "cli", ApiVersionsRequest()))
    assert frame[4:] == fixed(18, 3, 9) + b"\x00\x03cli" + b"\x00" + b"\x01\x01\x00"
    frame = join_parts(encode_request(1, 9, None, MetadataRequest(topics=[])))
    assert frame[4:] == fixed(3, 1, 9) + b"\xff\xff" + b"\x00\x00\x00\x00"
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4


# ------------------------------------------------------------------------ round trips


def kafka_python_request_frame(
    kp: Any, version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The framed request kafka-python sends for the kafka-python message ``kp``."""
    if "type" not in kp._struct.fields:
        kp.with_header(correlation_id=correlation_id, client_id=client_id)
        return bytes(kp.encode(header=True, framed=True))
    # kafka-python quirk: a message field named ``type`` (LeaderAndIsr and UpdateMetadata
    # requests) shadows ``ApiMessage.type``, which ``with_header`` and ``header_class`` use
    # to pick the header class, so they raise "Expected request or response type".
    # Build the same frame from kafka-python's own RequestHeader and body encoders.
    header = KafkaPythonRequestHeader(
        request_api_key=kp.API_KEY,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    payload = header.encode(flexible=kp.flexible_version_q(version)) + bytes(kp.encode())
    return struct.pack(">i", len(payload)) + payload


ROUND_TRIP_CASES = [
    pytest.param(spec.key, version, id=f"{spec.name}-v{version}")
    for spec in all_specs()
    for version in range(spec.min_version, spec.max_version + 1)
]


@pytest.mark.parametrize("client_id", ["client-é", None])
@pytest.mark.parametrize(("api_key", "version"), ROUND_TRIP_CASES)
def test_request_round_trip(api_key: int, version: int, client_id: str | None) -> None:
    spec = spec_for(api_key)
    assert spec is not None
    body = sample(spec.request, version)
    frame = join_parts(encode_request(version, 1234, client_id, body))
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    header, got_spec, offset = decode_request_header(frame[4:])
    assert got_spec is spec
    assert header == RequestHeader(api_key, version, 1234, client_id)
    assert decode_request_body(spec, version, frame[4:], offset) == body

    # The whole frame, header included, is what kafka-python sends.
    kp = to_kafka_python(
        body,
        kafka_python_class(spec.request),
        kafka_schema(spec.request.__name__, version)["fields"],
        version,
    )
    assert kafka_python_request_frame(kp, version, 1234, client_id) == frame


@pytest.mark.parametrize(("api_key", "version"), ROUND_TRIP_CASES)
def test_response_round_trip(api_key: int, version: int) -> None:
    spec = spec_for(api_key)
    assert spec is not None
    body = sample(spec.response, version)
    frame = join_parts(encode_response(spec, version, -7, body))
    assert decode_response(spec, version, frame[4:]) == (-7, body)

    kp = to_kafka_python(
        body,
        kafka_python_class(spec.response),
        kafka_schema(spec.response.__name__, version)["fields"],
        version,
    )
    kp.with_header(correlation_id=-7)
    assert bytes(kp.encode(header=True, framed=True)) == frame


@pytest.mark.parametrize(
    ("version", "frame"),
    [
        (8, b""),
        (8, b"\x00\x00\x2a"),
        (9, b"\x00\x00\x00\x2a"),  # header v1 without its tagged-field section
        (8, b"\x00\x00\x00\x2a\x00"),  # body cut short
    ],
)
def test_short_response_is_corrupt(version: int, frame: bytes) -> None:
    spec = spec_for(3)
    assert spec is not None
    with pytest.raises(CorruptRequest):
        decode_response(spec, version, frame)
