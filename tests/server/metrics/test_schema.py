"""The JSON Schema of the snapshot holds readers' assumptions: it rejects what breaks them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ...support.metrics import validate_snapshot

DIST = {"p50": 1.0, "p75": 1.0, "p95": 1.0, "p99": 2.0, "p999": 2.0, "max": 2.0,
        "window_count": 3, "count": 3, "sum": 4.0}  # fmt: skip
PHASES = ("queue", "local", "remote", "throttle", "response_queue", "response_send", "total")
TOPIC = {"messages_in": 0, "bytes_in": 0, "bytes_out": 0, "failed_produce_requests": 0,
         "failed_fetch_requests": 0}  # fmt: skip
GOOD: dict[str, Any] = {
    "schema": "trio-broker.metrics/1",
    "broker_id": 1,
    "seq": 1,
    "ts": "2025-01-01T00:00:00.000Z",
    "uptime_s": 1.5,
    "pools": {
        "io": {"size": 1, "busy": 0, "idle_ratio": 1.0, "handlers": [{"id": 0, "idle_ratio": 1.0}]},
        "network": {
            "L": {
                "size": 1,
                "idle_ratio": 0.5,
                "processors": [
                    {"id": 0, "idle_ratio": 0.5, "connections": 0, "response_queue_size": 0}
                ],
            }
        },
    },
    "request_queue": {"data": {"size": 0, "capacity": 500}},
    "connections": {
        k: 0 for k in ("count", "created", "closed", "rejected", "reaped", "muted", "throttled")
    }
    | {"by_mute_state": {}, "by_listener": {}, "bad_requests": {}},
    "requests": {
        "Metadata": {"count": 3, "errors": 0, "bytes": 90, "handler_time_ms": 0.5}
        | {f"{p}_time_ms": DIST for p in PHASES}
    },
    "topics": {"all": TOPIC, "by_topic": {}},
}


def test_a_minimal_snapshot_is_valid() -> None:
    validate_snapshot(GOOD)


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = path.split("/")
    target = doc
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return doc


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("requests", _DELETE),
        ("schema", "trio-broker.metrics/2"),
        ("ts", "2025-01-01 00:00:00"),
        ("requests/Metadata/total_time_ms", _DELETE),
        ("requests/Metadata/queue_time_ms/p99", _DELETE),
        ("requests/Metadata/count", -1),
        ("pools/io/idle_ratio", 1.5),
        ("pools/network/L/processors/0/idle_ratio", -0.1),
        ("topics/all/bytes_in", "10"),
    ],
)
def test_breaking_changes_are_rejected(path: str, value: Any) -> None:
    with pytest.raises(AssertionError):
        validate_snapshot(_set(GOOD, path, value))


def test_the_schema_file_is_valid_json_schema() -> None:
    import jsonschema

    from ...support.metrics import SCHEMA_PATH

    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))
