"""Fault rule descriptions, as a table: what is refused (naming the field) and what a
request body names (topics and partitions, read from the message descriptions)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.server.handlers.fault_rules import FaultSpecError, named_partitions, parse_rule

REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"action": "explode"}, "action"),
    ({"action": "error"}, "error_code"),
    ({"action": "error", "error_code": "NO_SUCH_ERROR"}, "error_code"),
    ({"action": "error", "error_code": 0}, "error_code"),
    ({"action": "error", "error_code": 6, "delay_ms": 5}, "delay_ms"),
    ({"action": "delay", "delay_ms": 0}, "delay_ms"),
    ({"action": "delay", "delay_ms": 5, "api": "Nope"}, "api"),
    ({"action": "delay", "delay_ms": 5, "api": []}, "api"),
    ({"action": "delay", "delay_ms": 5, "count": 0}, "count"),
    ({"action": "delay", "delay_ms": True}, "delay_ms"),
    ({"action": "leader_unavailable", "duration_ms": 5}, "topic"),
    ({"action": "leader_unavailable", "topic": "t"}, "duration_ms"),
    ({"action": "throttle"}, "throttle_ms"),
    ({"action": "disconnect", "after": -1}, "after"),
    ({"action": "disconnect", "topic": ""}, "topic"),
    ({"action": "disconnect", "colour": "red"}, "colour"),
]


@pytest.mark.parametrize(("spec", "field"), REFUSED)
def test_a_refused_rule_names_its_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(FaultSpecError) as err:
        parse_rule(spec, 1, 0.0)
    assert err.value.field == field


def test_defaults_and_names() -> None:
    rule = parse_rule({"action": "error", "api": ["Produce", 1], "error_code": 6}, 7, 0.0)
    out = rule.to_json(0.0)
    assert (out["api"], out["error"], out["count"], out["active"]) == (
        ["Fetch", "Produce"],
        "NOT_LEADER_OR_FOLLOWER",
        1,
        True,
    )
    leader = parse_rule({"action": "leader_unavailable", "topic": "t", "duration_ms": 1000}, 1, 5.0)
    assert leader.count is None and "Produce" in leader.to_json(5.0)["api"]
    assert leader.active(5.9) and not leader.active(6.0)
    assert leader.to_json(5.25)["remaining_ms"] == 750


def test_named_partitions_of_produce_fetch_and_metadata() -> None:
    produce = ProduceRequest(
        acks=1,
        timeout_ms=100,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="a",
                partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=2)],
            )
        ],
    )
    assert named_partitions(produce, lambda _: None) == {("a", 2)}
    tid = uuid.uuid4()
    fetch = FetchRequest(
        topics=[
            FetchRequest.Topic(topic_id=tid, partitions=[FetchRequest.Topic.Partition(partition=0)])
        ]
    )
    assert named_partitions(fetch, {tid: "by-id"}.get) == {("by-id", 0)}
    meta = MetadataRequest(topics=[MetadataRequest.Topic(name="m")])
    assert named_partitions(meta, lambda _: None) == {("m", -1)}
