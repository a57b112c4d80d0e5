"""Error codes are counted at every depth of a response, only in the fields a version has."""

from __future__ import annotations

from trio_broker.protocol.messages.api_versions import ApiVersionsResponse
from trio_broker.protocol.messages.metadata import MetadataResponse
from trio_broker.protocol.schema import Response, Struct, array, field
from trio_broker.server.metrics.error_codes import error_counter


class NestedResponse(Response, api_key=1000, versions="0-3"):
    class Outer(Struct):
        class Inner(Struct):
            error_code: int = field("int16")
            value: int = field("int32")

        error_code: int = field("int16", "1+")
        items: list[Inner] | None = field(array(Inner), nullable="0+")

    class Single(Struct):
        error_code: int = field("int16")

    error_code: int = field("int16", "2+")
    outers: list[Outer] = field(array(Outer))
    single: Single = field(Single, "3+")


class NoErrors(Response, api_key=1001, versions="0"):
    value: int = field("int32")


def count(body, version):  # type: ignore[no-untyped-def]
    fn = error_counter(type(body), version)
    counts: dict[int, int] = {}
    if fn is not None:
        fn(body, counts)
    return counts


def test_metadata_topics_and_partitions() -> None:
    Topic, Partition = MetadataResponse.Topic, MetadataResponse.Topic.Partition
    body = MetadataResponse(
        topics=[
            Topic(error_code=0, name="a", partitions=[Partition(error_code=0)] * 3),
            Topic(error_code=3, name="b", partitions=[]),
            Topic(error_code=0, name="c", partitions=[Partition(error_code=6), Partition()]),
        ]
    )
    assert count(body, 12) == {0: 6, 3: 1, 6: 1}
    assert count(MetadataResponse(), 12) == {}


def test_top_level_code() -> None:
    assert count(ApiVersionsResponse(error_code=35), 0) == {35: 1}


def test_fields_absent_in_a_version_are_not_counted() -> None:
    Outer, Inner = NestedResponse.Outer, NestedResponse.Outer.Inner
    body = NestedResponse(
        error_code=7,
        outers=[
            Outer(error_code=2, items=[Inner(error_code=1), Inner(error_code=0)]),
            Outer(error_code=0, items=None),  # a null array
        ],
        single=NestedResponse.Single(error_code=9),
    )
    assert count(body, 0) == {1: 1, 0: 1}
    assert count(body, 1) == {1: 1, 0: 2, 2: 1}
    assert count(body, 2) == {1: 1, 0: 2, 2: 1, 7: 1}
    assert count(body, 3) == {1: 1, 0: 2, 2: 1, 7: 1, 9: 1}


def test_no_error_codes_compiles_to_none_and_is_cached() -> None:
    assert error_counter(NoErrors, 0) is None
    assert error_counter(MetadataResponse, 5) is error_counter(MetadataResponse, 5)
