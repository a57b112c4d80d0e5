"""Our codec against independent ones, for every API and version we register.

1. Our declaration of each message has, version by version, exactly the fields of Kafka's
   JSON definition (names, types, arrays, nullability, tags, defaults, ignorability;
   one deliberate difference, a response's always-nullable strings default to null: see
   ``oracle._json_default``).
2. Our bytes equal kafka-python's bytes for the same value, and decoding kafka-python's
   bytes with our decoder gives back the value.
3. Our bytes equal kio's bytes for the same value (for every message and version kio
   has), kio decodes our bytes to that value, and we decode kio's bytes to ours.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from kio.serial import entity_reader, entity_writer

import trio_broker.protocol.messages  # noqa: F401  (registers every message)
from trio_broker.protocol import codegen
from trio_broker.protocol.api import all_specs
from trio_broker.protocol.messages.fetch import FetchResponse
from trio_broker.protocol.primitives import join_parts
from trio_broker.protocol.schema import Message, Response, VersionRange

from .oracle import (
    kafka_python_class,
    kafka_schema,
    kafka_structure,
    kio_class,
    our_structure,
    sample,
    to_kafka_python,
    to_kio,
)

CASES = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for spec in all_specs()
    for cls in (spec.request, spec.response)
    for version in range(spec.min_version, spec.max_version + 1)
]

# Messages and versions kio 0.6.5 does not have (its schemas are Kafka 4's, and it has
# none of the removed controller APIs). Listed, not guessed: a test below checks this list
# against kio, so a kio upgrade that adds them makes us use them.
KIO_MISSING = {
    "LeaderAndIsr",
    "StopReplica",
    "UpdateMetadata",
    "ControlledShutdown",
    "DescribeConfigs v0",
    "WriteTxnMarkers v0",
    "ShareGroupHeartbeat v0",  # Kafka 4.0's early access, removed in 4.1 (kio has v1)
}

# kafka-python writes a tagged struct even at its default (see
# test_tagged_struct_at_its_default_is_left_out). In these samples FetchRequest's
# ReplicaState (v15+) is at its default, so kio alone is the byte oracle for them;
# kafka-python's longer bytes must still decode to the same value.
KAFKA_PYTHON_TAGGED_DEFAULT = {("FetchRequest", v, 1) for v in (15, 16, 17, 18)}


def our_bytes(obj: Message, version: int) -> bytes:
    parts: list[Any] = [bytearray()]
    codegen.encoder(type(obj), version)(obj, parts)
    return join_parts(parts)


def our_decode(cls: type[Message], version: int, data: bytes) -> Message:
    decoded, end = codegen.decoder(cls, version)(data, memoryview(data), 0)
    assert end == len(data)
    return decoded  # type: ignore[no-any-return]


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_declaration_matches_kafka_json(cls: type[Message], version: int) -> None:
    schema = kafka_schema(cls.__name__, version)
    assert schema["apiKey"] == cls.api_key
    assert version in VersionRange.parse(schema["validVersions"])
    flexible = cls.is_flexible(version)
    assert flexible == (version in VersionRange.parse(schema["flexibleVersions"]))
    theirs = kafka_structure(schema["fields"], version, flexible, issubclass(cls, Response))
    ours = our_structure(cls, version, flexible)
    assert ours == theirs


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize(("cls", "version"), CASES)
def test_bytes_match_kafka_python(cls: type[Message], version: int, variant: int) -> None:
    schema = kafka_schema(cls.__name__, version)
    value = sample(cls, version, variant)
    ours = our_bytes(value, version)
    kp_value = to_kafka_python(value, kafka_python_class(cls), schema["fields"], version)
    theirs = bytes(kp_value.encode(version=version, header=False))
    if (cls.__name__, version, variant) in KAFKA_PYTHON_TAGGED_DEFAULT:
        assert len(theirs) > len(ours)
        assert our_decode(cls, version, theirs) == value
        return
    assert ours == theirs
    decoded = our_decode(cls, version, theirs)
    assert decoded == value
    assert our_bytes(decoded, version) == theirs


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize(("cls", "version"), CASES)
def test_bytes_match_kio(cls: type[Message], version: int, variant: int) -> None:
    kio_cls = kio_class(cls, version)
    api = cls.__name__.removesuffix("Request").removesuffix("Response")
    if kio_cls is None:
        missing = api in KIO_MISSING or f"{api} v{version}" in KIO_MISSING
        assert missing, f"kio has no {cls.__name__} v{version}"
        return
    assert api not in KIO_MISSING
    assert f"{api} v{version}" not in KIO_MISSING
    value = sample(cls, version, variant)
    kio_value = to_kio(value, kio_cls, version)
    buf = io.BytesIO()
    entity_writer(kio_cls)(buf, kio_value)
    theirs = buf.getvalue()
    ours = our_bytes(value, version)
    assert ours == theirs
    read_back, size = entity_reader(kio_cls)(ours, 0)
    assert size == len(ours)
    assert read_back == kio_value
    assert our_decode(cls, version, theirs) == value


def test_tagged_struct_at_its_default_is_left_out() -> None:
    """Kafka leaves out a tagged field equal to its default, struct-valued ones included.

    kafka-python bug: it writes FetchResponse's DivergingEpoch, CurrentLeader and
    SnapshotId even when they equal their defaults. kio leaves them out, as Kafka's own
    generated code does (``if (!divergingEpoch.equals(new EpochEndOffset()))``), so kio is
    the byte oracle here; kafka-python's longer bytes must still decode to the same value.
    """
    partition = FetchResponse.FetchableTopicResponse.PartitionData(partition_index=1)
    value = FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])]
    )
    ours = our_bytes(value, 12)
    # preferred read replica (-1), null records, then three empty tagged-field sections
    # (partition, topic, response): no tag for the three structs at their defaults.
    assert ours.endswith(b"\xff\xff\xff\xff" + b"\x00" + b"\x00" + b"\x00\x00")

    kio_cls = kio_class(FetchResponse, 12)
    buf = io.BytesIO()
    entity_writer(kio_cls)(buf, to_kio(value, kio_cls, 12))
    assert buf.getvalue() == ours

    schema = kafka_schema("FetchResponse", 12)
    kp_value = to_kafka_python(value, kafka_python_class(FetchResponse), schema["fields"], 12)
    theirs = bytes(kp_value.encode(version=12, header=False))
    assert len(theirs) > len(ours)  # the kafka-python bug, as of kafka-python 3.0
    assert our_decode(FetchResponse, 12, theirs) == value
