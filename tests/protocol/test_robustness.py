"""Malformed and unexpected request bytes: the decoder fails only with ``CorruptRequest``.

- Every truncation of a request body, and a set of byte flips at every position, either
  raise ``CorruptRequest`` or decode to some value: never ``IndexError``, ``struct.error``,
  ``UnicodeDecodeError`` or anything else a broker would have to guess about.
- Unknown tagged fields in a flexible struct are skipped (KIP-482), at the top level and in
  nested structs; a known tagged field whose value does not fill exactly its declared size
  is corrupt.
- Record data decodes as a memoryview of the frame (no copy), and large record data is
  encoded as its own output part (no copy).
"""

from __future__ import annotations

from typing import Any

import pytest

import trio_broker.protocol.messages  # noqa: F401  (registers every message)
from trio_broker.protocol import codegen
from trio_broker.protocol.api import all_specs, spec_for
from trio_broker.protocol.errors import CorruptRequest
from trio_broker.protocol.header import (
    decode_request_body,
    decode_request_header,
    encode_request,
    encode_response,
)
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.fetch import FetchRequest, FetchResponse
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.protocol.primitives import join_parts, uvarint
from trio_broker.protocol.schema import Struct

from .oracle import sample

REQUEST_CASES = [
    pytest.param(spec.key, version, id=f"{spec.name}-v{version}")
    for spec in all_specs()
    for version in range(spec.min_version, spec.max_version + 1)
]

FLIPS = (0x00, 0xFF, 0x80, 0x7F, 0x01)


def request_frame(api_key: int, version: int) -> tuple[bytes, int]:
    """A request frame (without its size prefix) and the offset of its body."""
    spec = spec_for(api_key)
    assert spec is not None
    body = sample(spec.request, version, 0)
    frame = join_parts(encode_request(version, 7, "client", body))[4:]
    _, _, offset = decode_request_header(frame)
    return frame, offset


# Bodies of fixed-size fields only (ControlledShutdown v1-2: a broker id, an epoch): any
# bytes decode.
FIXED_SIZE = {(7, 1), (7, 2)}


def decode_or_corrupt(api_key: int, version: int, frame: bytes, offset: int) -> bool:
    """Whether ``frame`` decodes; any exception but ``CorruptRequest`` propagates."""
    spec = spec_for(api_key)
    assert spec is not None
    try:
        decode_request_body(spec, version, frame, offset)
    except CorruptRequest:
        return False
    return True


@pytest.mark.parametrize(("api_key", "version"), REQUEST_CASES)
def test_every_truncation_is_corrupt(api_key: int, version: int) -> None:
    frame, offset = request_frame(api_key, version)
    spec = spec_for(api_key)
    assert spec is not None
    for end in range(offset, len(frame)):
        with pytest.raises(CorruptRequest):
            decode_request_body(spec, version, frame[:end], offset)


@pytest.mark.parametrize(("api_key", "version"), REQUEST_CASES)
def test_byte_flips_raise_only_corrupt_request(api_key: int, version: int) -> None:
    frame, offset = request_frame(api_key, version)
    outcomes = set()
    for pos in range(offset, len(frame)):
        for value in FLIPS:
            mutated = bytearray(frame)
            mutated[pos] = value
            outcomes.add(decode_or_corrupt(api_key, version, bytes(mutated), offset))
    if len(frame) > offset and (api_key, version) not in FIXED_SIZE:
        # Some flips land in lengths or null markers, and no decoder takes those quietly.
        assert False in outcomes


# ------------------------------------------------------------------------ tagged fields


def _with_tag_section(encoded: bytes, section: bytes) -> bytes:
    """Replace the empty tagged-field section that ends ``encoded`` by ``section``."""
    assert encoded.endswith(b"\x00")
    return encoded[:-1] + section


def _tag(tag: int, payload: bytes) -> bytes:
    return uvarint(tag) + uvarint(len(payload)) + payload


def _encode(cls: type[Struct], version: int, obj: Any, flexible: bool | None = None) -> bytes:
    parts: list[Any] = [bytearray()]
    codegen.encoder(cls, version, flexible)(obj, parts)
    return join_parts(parts)


def _decode(cls: type[Struct], version: int, data: bytes, flexible: bool | None = None) -> Any:
    obj, end = codegen.decoder(cls, version, flexible)(data, memoryview(data), 0)
    assert end == len(data)
    return obj


@pytest.mark.parametrize(
    "section",
    [
        pytest.param(b"\x01" + _tag(99, b"abc"), id="one-unknown"),
        pytest.param(b"\x02" + _tag(5, b"") + _tag(300, bytes(200)), id="two-unknown"),
        pytest.param(b"\x01" + _tag(2**20, b"\xff" * 3), id="large-tag-number"),
    ],
)
def test_unknown_tagged_fields_are_skipped_top_level(section: bytes) -> None:
    value = ApiVersionsRequest(client_software_name="kcat", client_software_version="1.7")
    data = _with_tag_section(_encode(ApiVersionsRequest, 3, value), section)
    assert _decode(ApiVersionsRequest, 3, data) == value


def test_unknown_tagged_fields_are_skipped_next_to_known_ones() -> None:
    value = FetchRequest(cluster_id="the-cluster", rack_id="r1")
    encoded = _encode(FetchRequest, 12, value)
    known = _tag(0, b"\x0cthe-cluster")
    assert encoded.endswith(b"\x01" + known)
    mixed = b"\x03" + known + _tag(1, b"x") + _tag(7, b"yz")
    data = encoded[: -len(known) - 1] + mixed
    assert _decode(FetchRequest, 12, data) == value


def test_unknown_tagged_fields_are_skipped_in_nested_structs() -> None:
    partition = FetchRequest.Topic.Partition(partition=3, fetch_offset=42, partition_max_bytes=9)
    encoded = _encode(FetchRequest.Topic.Partition, 12, partition, flexible=True)
    nested = _with_tag_section(encoded, b"\x01" + _tag(42, b"\x00\x01"))
    topic_head = _encode(FetchRequest.Topic, 12, FetchRequest.Topic(topic="t"), flexible=True)
    # topic: name, then a one-item partitions array, then the topic's own tag section.
    assert topic_head == b"\x02t\x01\x00"
    topic_bytes = b"\x02t\x02" + nested + b"\x00"
    topic = _decode(FetchRequest.Topic, 12, topic_bytes, flexible=True)
    assert topic == FetchRequest.Topic(topic="t", partitions=[partition])


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x0cthe-cluster\x00", id="longer-than-its-value"),
        # The string claims 11 bytes, its tag 10: reading it would run into the next tag.
        pytest.param(b"\x0cthe-clust", id="shorter-than-its-value"),
    ],
)
def test_known_tagged_field_must_fill_its_declared_size(payload: bytes) -> None:
    value = FetchRequest(rack_id="r1")
    encoded = _encode(FetchRequest, 12, value)
    data = _with_tag_section(encoded, b"\x02" + _tag(0, payload) + _tag(9, b"er"))
    with pytest.raises(CorruptRequest):
        _decode(FetchRequest, 12, data)


def test_tagged_field_claiming_more_bytes_than_left_is_corrupt() -> None:
    encoded = _encode(ApiVersionsRequest, 3, ApiVersionsRequest())
    data = _with_tag_section(encoded, b"\x01" + uvarint(9) + uvarint(100) + b"abc")
    with pytest.raises(CorruptRequest):
        _decode(ApiVersionsRequest, 3, data)


# ------------------------------------------------------------------------- zero copy


def test_records_decode_as_memoryviews_of_the_frame() -> None:
    records = bytes(range(256)) * 8
    body = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    for version in (3, 9):
        frame = join_parts(encode_request(version, 1, "c", body))[4:]
        _, spec, offset = decode_request_header(frame)
        decoded = decode_request_body(spec, version, frame, offset)
        got = decoded.topic_data[0].partition_data[0].records  # type: ignore[attr-defined]
        assert isinstance(got, memoryview)
        assert got.obj is frame
        assert got == records


def test_large_records_are_output_parts_not_copies() -> None:
    records = memoryview(bytes(5000))
    partition = FetchResponse.FetchableTopicResponse.PartitionData(records=records)
    topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition, partition])
    spec = spec_for(1)
    assert spec is not None
    for version in (4, 12, 13):
        parts = encode_response(spec, version, 5, FetchResponse(responses=[topic]))
        assert sum(p is records for p in parts) == 2
        frame = join_parts(parts)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
