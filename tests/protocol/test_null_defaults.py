"""Null where Kafka says null: a response's nullable strings are null unless a handler sets them.

Kafka's handlers answer "null if there was no error" (CreateTopics' error_message, and the
other error messages, config values, entity names ...). A declaration that defaults such
a field to "" makes every handler that does not set it send "" instead, which clients read
as a message (aiokafka's ``test_delete_topics`` failed on CreateTopics' ``""``). So, over
every response the broker can send, at every version it serves:

- a string nullable in every version it exists in defaults to None;
- a string nullable in only some of its versions cannot default to None (it would not
  encode in the others): it is listed below with where its handler sends null, and that
  list is exactly the set of such fields (a new one must be looked at).

The real-client check is in tests/data/test_topic_admin.py (aiokafka's create_topics and
delete_topics).
"""

from __future__ import annotations

from collections.abc import Iterator

import trio_broker.protocol.messages  # noqa: F401  (registers every message)
from trio_broker.protocol.api import all_specs
from trio_broker.protocol.schema import ArrayOf, FieldSpec, Struct, VersionRange

# Nullable from some version on, not before: the handler sets them (name: where null goes).
PARTLY_NULLABLE = {
    # a topic asked for by an unknown id (v12+): apis.metadata._lookup
    "MetadataResponse.topics.name",
    # a failed join (v7+); v0-6 get "": apis.groups.membership.join_group
    "JoinGroupResponse.protocol_name",
    # a topic to delete by an unknown id (v6+): apis.admin.topics.delete_topics
    "DeleteTopicsResponse.responses.name",
}


def _string_fields(
    cls: type[Struct], served: VersionRange, path: str
) -> Iterator[tuple[str, FieldSpec]]:
    for f in cls.__fields__:
        lo, hi = max(f.versions.lo, served.lo), min(f.versions.hi, served.hi)
        if lo > hi:
            continue  # not in any version served
        item = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(item, type):
            yield from _string_fields(item, VersionRange(lo, hi), f"{path}.{f.name}")
        elif f.type == "string" and not f.nullable.empty:
            yield f"{path}.{f.name}", f


def _served_nullable_strings() -> Iterator[tuple[str, FieldSpec, VersionRange]]:
    for spec in all_specs():
        served = spec.versions
        for name, f in _string_fields(spec.response, served, spec.response.__name__):
            yield name, f, served


def test_a_string_nullable_wherever_it_exists_defaults_to_null() -> None:
    found = []
    for name, f, served in _served_nullable_strings():
        lo, hi = max(f.versions.lo, served.lo), min(f.versions.hi, served.hi)
        if f.nullable.lo <= lo and hi <= f.nullable.hi:
            found.append(name)
            assert f.default is None, f"{name} defaults to {f.default!r}, not null"
    # the fields the issue named are among them
    assert "CreateTopicsResponse.topics.error_message" in found
    assert "DescribeConfigsResponse.results.configs.value" in found


def test_strings_nullable_in_some_versions_only_are_the_known_ones() -> None:
    partly = set()
    for name, f, served in _served_nullable_strings():
        lo, hi = max(f.versions.lo, served.lo), min(f.versions.hi, served.hi)
        if not (f.nullable.lo <= lo and hi <= f.nullable.hi):
            partly.add(name)
            assert f.default == "", name  # encodable in the versions where null is not
    assert partly == PARTLY_NULLABLE


def test_an_unset_error_message_encodes_as_null() -> None:
    """The bytes: CreateTopics v7's created topic without a message carries the null
    marker (compact string length 0), not an empty string (length 1)."""
    from trio_broker.protocol import codegen
    from trio_broker.protocol.messages.topics import CreateTopicsResponse
    from trio_broker.protocol.primitives import join_parts

    Result = CreateTopicsResponse.CreatableTopicResult
    answer = CreateTopicsResponse(topics=[Result(name="t", error_code=0)])
    parts: list = [bytearray()]
    codegen.encoder(CreateTopicsResponse, 7)(answer, parts)
    data = join_parts(parts)
    # throttle, 1 topic, name "t", topic id (16 bytes), error code 0, then error_message
    start = 4 + 1 + 2 + 16 + 2
    assert data[start] == 0  # null
    decoded, _ = codegen.decoder(CreateTopicsResponse, 7)(data, memoryview(data), 0)
    assert decoded.topics[0].error_message is None
