"""Our codec against independent ones, for every API and version we register.

1. Our declaration of each message has, version by version, exactly the fields of Kafka's
   JSON definition (names, types, arrays, nullability, tags).
2. Our bytes equal kafka-python's bytes for the same value, and decoding kafka-python's
   bytes with our decoder gives back the value.
"""

from __future__ import annotations

import pytest

import trio_broker.protocol.messages  # noqa: F401  (registers every message)
from trio_broker.protocol import codegen
from trio_broker.protocol.api import all_specs
from trio_broker.protocol.primitives import join_parts
from trio_broker.protocol.schema import Message, VersionRange

from .oracle import (
    kafka_python_class,
    kafka_schema,
    kafka_structure,
    our_structure,
    sample,
    strip_struct_names,
    to_kafka_python,
)

CASES = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for spec in all_specs()
    for cls in (spec.request, spec.response)
    for version in range(spec.min_version, spec.max_version + 1)
]


def our_bytes(obj: Message, version: int) -> bytes:
    parts: list = [bytearray()]
    codegen.encoder(type(obj), version)(obj, parts)
    return join_parts(parts)


@pytest.mark.parametrize(("cls", "version"), CASES)
def test_declaration_matches_kafka_json(cls: type[Message], version: int) -> None:
    schema = kafka_schema(cls.__name__)
    assert schema["apiKey"] == cls.api_key
    flexible = cls.is_flexible(version)
    assert flexible == (version in VersionRange.parse(schema["flexibleVersions"]))
    theirs = strip_struct_names(kafka_structure(schema["fields"], version, flexible))
    ours = strip_struct_names(our_structure(cls, version, flexible))
    assert ours == theirs


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize(("cls", "version"), CASES)
def test_bytes_match_kafka_python(cls: type[Message], version: int, variant: int) -> None:
    schema = kafka_schema(cls.__name__)
    value = sample(cls, version, variant)
    ours = our_bytes(value, version)
    theirs = bytes(
        to_kafka_python(value, kafka_python_class(cls), schema["fields"], version).encode(
            version=version, header=False
        )
    )
    assert ours == theirs
    decoded, end = codegen.decoder(cls, version)(theirs, memoryview(theirs), 0)
    assert end == len(theirs)
    assert our_bytes(decoded, version) == theirs
