"""The error response of every API and version (Kafka's ``getErrorResponse``): built for
a request naming one of everything, it encodes, decodes, and carries UNKNOWN_SERVER_ERROR
for what the request named, with the request's identifiers. Only a request naming nothing
(Metadata for all topics) gets none: the caller closes the connection."""

from __future__ import annotations

from typing import Any

import pytest

import trio_broker.protocol.messages  # noqa: F401
from trio_broker.protocol.api import ApiSpec, all_specs
from trio_broker.protocol.error_response import error_response
from trio_broker.protocol.header import decode_response, encode_response
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.protocol.primitives import join_parts
from trio_broker.protocol.schema import ArrayOf, Struct

UNKNOWN = -1


def one_of_everything(cls: type[Struct], version: int) -> Any:
    """A request naming one item in every array, with recognisable names."""
    obj = cls()
    for f in cls.__fields__:
        if not f.exists_in(version):
            continue
        t = f.type
        if isinstance(t, ArrayOf):
            if isinstance(t.item, type):
                setattr(obj, f.name, [one_of_everything(t.item, version)])
            elif t.item == "string":
                setattr(obj, f.name, ["named"])
            elif t.item == "int32":
                setattr(obj, f.name, [7])
        elif isinstance(t, type):
            setattr(obj, f.name, one_of_everything(t, version))
        elif t == "string":
            setattr(obj, f.name, "named")
        elif t == "int32" and f.name in ("partition_index", "partition", "index"):
            setattr(obj, f.name, 7)
    return obj


def error_codes(value: Any) -> list[int]:
    if isinstance(value, Struct):
        # AddPartitionsToTxn's results call theirs partition_error_code
        names = ("error_code", "partition_error_code")
        found = [getattr(value, n) for n in names if hasattr(value, n)]
        return found + [c for f in value.__fields__ for c in error_codes(getattr(value, f.name))]
    if isinstance(value, list):
        return [c for v in value for c in error_codes(v)]
    return []


CASES = [
    pytest.param(spec, v, id=f"{spec.name}-v{v}")
    for spec in all_specs()
    for v in range(spec.versions.lo, spec.versions.hi + 1)
]


@pytest.mark.parametrize(("spec", "version"), CASES)
def test_every_api_answers_unknown_server_error(spec: ApiSpec, version: int) -> None:
    body = error_response(spec, version, one_of_everything(spec.request, version), UNKNOWN, "x")
    assert body is not None
    frame = join_parts(encode_response(spec, version, 42, body))
    corr, back = decode_response(spec, version, frame[4:])
    assert corr == 42
    assert UNKNOWN in error_codes(back), back


def test_the_request_s_topics_and_partitions_are_named_in_the_answer() -> None:
    from trio_broker.protocol.api import spec_for

    produce = spec_for(0)
    assert produce is not None
    req = ProduceRequest(
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="orders",
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=i) for i in (0, 3)
                ],
            )
        ]
    )
    resp = error_response(produce, 9, req, UNKNOWN)
    assert resp is not None
    assert [
        (t.name, [(p.index, p.error_code) for p in t.partition_responses]) for t in resp.responses
    ] == [("orders", [(0, UNKNOWN), (3, UNKNOWN)])]


def test_a_metadata_request_for_all_topics_has_no_error_response() -> None:
    from trio_broker.protocol.api import spec_for

    metadata = spec_for(3)
    assert metadata is not None
    assert error_response(metadata, 12, MetadataRequest(topics=None), UNKNOWN) is None
