"""Property tests over the whole API table: every message, every version we answer.

- Round trip: a random value of each request and response, at each version, encodes,
  decodes to the same value, and re-encodes to the same bytes (our own codec only; the
  handful checked against kio and kafka-python are in ``test_properties``).
- Mutation: random request frames, and valid ones with random edits (bytes flipped,
  inserted, deleted, cut), through framing, header and body decoding raise only a
  ``RemoteProtocolError``, never anything a connection would not expect.

Bounded for the suite: few examples per case, derandomized, so CI sees the same inputs.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trio_broker.protocol.messages  # noqa: F401  (registers every message)
from trio_broker.protocol import codegen
from trio_broker.protocol.api import all_specs
from trio_broker.protocol.errors import RemoteProtocolError
from trio_broker.protocol.framing import FrameDecoder
from trio_broker.protocol.header import (
    decode_request_body,
    decode_request_header,
    encode_request,
)
from trio_broker.protocol.primitives import join_parts
from trio_broker.protocol.schema import Message

from .test_properties import encode, struct_strategy

CASES = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for spec in all_specs()
    for cls in (spec.request, spec.response)
    for version in range(spec.min_version, spec.max_version + 1)
]
REQUEST_CASES = [
    pytest.param(spec, version, id=f"{spec.name}-v{version}")
    for spec in all_specs()
    for version in range(spec.min_version, spec.max_version + 1)
]

BOUNDED = settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("cls", "version"), CASES)
@BOUNDED
@given(data=st.data())
def test_round_trip_every_message_and_version(
    cls: type[Message], version: int, data: st.DataObject
) -> None:
    value = data.draw(struct_strategy(cls, version), label="value")
    raw = encode(value, version)
    decoded, end = codegen.decoder(cls, version)(raw, memoryview(raw), 0)
    assert end == len(raw)
    assert decoded == value
    assert encode(decoded, version) == raw


def decode_all(stream: bytes, cut: int) -> int:
    """The connection's path: frames out of a byte stream (in two reads), then header
    and body. Returns how many requests decoded; bad bytes raise RemoteProtocolError."""
    framer = FrameDecoder(1 << 20)
    n = 0
    for chunk in (stream[:cut], stream[cut:]):
        framer.receive_data(chunk)
        while (frame := framer.next_frame()) is not None:
            header, spec, pos = decode_request_header(frame)
            decode_request_body(spec, header.api_version, frame, pos)
            n += 1
    framer.receive_eof()
    return n


_EDIT = st.tuples(
    st.sampled_from(["flip", "set", "insert", "delete", "cut"]),
    st.integers(0, 1 << 16),
    st.integers(0, 255),
)


def mutate(raw: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(raw)
    for kind, where, value in edits:
        if not out:
            break
        i = where % len(out)
        if kind == "flip":
            out[i] ^= 1 << (value % 8)
        elif kind == "set":
            out[i] = value
        elif kind == "insert":
            out[i:i] = bytes([value]) * (1 + value % 4)
        elif kind == "delete":
            del out[i : i + 1 + value % 4]
        else:
            del out[i:]
    return bytes(out)


@pytest.mark.parametrize(("spec", "version"), REQUEST_CASES)
@BOUNDED
@given(data=st.data())
def test_mutated_requests_raise_only_protocol_errors(
    spec, version: int, data: st.DataObject
) -> None:  # type: ignore[no-untyped-def]
    value = data.draw(struct_strategy(spec.request, version), label="value")
    frame = join_parts(encode_request(version, 7, "fuzz", value))
    assert decode_all(frame, len(frame) // 2) == 1  # the valid frame decodes
    edits = data.draw(st.lists(_EDIT, min_size=1, max_size=4), label="edits")
    mutated = mutate(frame, edits)
    with contextlib.suppress(RemoteProtocolError):
        decode_all(mutated, data.draw(st.integers(0, len(mutated)), label="cut"))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(stream=st.binary(max_size=300), cut=st.integers(0, 300))
def test_random_bytes_raise_only_protocol_errors(stream: bytes, cut: int) -> None:
    with contextlib.suppress(RemoteProtocolError):
        decode_all(stream, cut)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    api_key=st.sampled_from([s.key for s in all_specs()]),
    version=st.integers(-1, 20),
    header_rest=st.binary(max_size=8),
    body=st.binary(max_size=200),
)
def test_random_bodies_behind_real_headers_raise_only_protocol_errors(
    api_key: int, version: int, header_rest: bytes, body: bytes
) -> None:
    frame = api_key.to_bytes(2, "big") + version.to_bytes(2, "big", signed=True)
    frame += (7).to_bytes(4, "big") + header_rest + body
    stream = len(frame).to_bytes(4, "big") + frame
    with contextlib.suppress(RemoteProtocolError):
        decode_all(stream, len(stream))
