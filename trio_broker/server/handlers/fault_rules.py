"""Fault rules for test suites: what a rule says, which requests it matches, its counts.

Owns: ``FaultRule`` (one rule: its action, its filters, how often it may act, its hit
counts), ``parse_rule`` (a rule from its JSON description, every field checked, with a
``FaultSpecError`` naming the field otherwise) and ``named_partitions`` (the topics and
partitions a request body names, read from the message description, so that no API is
left out). Plain data and no clock of its own: the caller passes the time (seconds of
``trio.current_time``); ``server.handlers.faults`` applies the rules in the request path.

The actions (the JSON field ``action``):

- ``error``: answer the matching request with ``error_code`` (a Kafka error code, as a
  number or its name) in every error code of its response;
- ``delay``: hold the matching request ``delay_ms`` before it is handled;
- ``disconnect``: let ``after`` matching requests through, then close the connection of
  the next one;
- ``leader_unavailable``: for ``duration_ms``, answer every request naming the topic's
  partition (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords unless
  ``api`` says otherwise) with NOT_LEADER_OR_FOLLOWER; then the partition is back;
- ``throttle``: throttle the matching requests' client for ``throttle_ms`` (KIP-219: the
  response carries the time, then the connection stays muted that long).

Filters: ``api`` (a name such as ``"Produce"``, a key, or a list of them), ``topic``,
``partition``, ``client_id``; a rule matches a request that passes every filter it has.
``count`` is how many requests it acts on (``null``: no limit); ``duration_ms`` ends it
after that time. A rule that has done its part stays listed (``active: false``) with its
``matched`` (requests that passed its filters) and ``hits`` (requests it acted on).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...protocol.api import ApiKey
from ...protocol.errors import ErrorCode
from ...protocol.schema import Struct

ACTIONS = ("error", "delay", "disconnect", "leader_unavailable", "throttle")
FIELDS = (
    "action",
    "api",
    "topic",
    "partition",
    "client_id",
    "error_code",
    "delay_ms",
    "after",
    "throttle_ms",
    "count",
    "duration_ms",
)
# What a partition's leader answers for: the APIs a client sends to the leader.
LEADER_APIS = frozenset(
    {
        ApiKey.Produce,
        ApiKey.Fetch,
        ApiKey.ListOffsets,
        ApiKey.OffsetForLeaderEpoch,
        ApiKey.DeleteRecords,
    }
)
_MAX_MS = 24 * 3600 * 1000  # a day: longer is a mistake in a test
_TOPIC_FIELDS = ("topic", "topic_name", "name")
_PARTITION_FIELDS = ("partition_index", "partition", "index")
_PARTITION_ARRAYS = ("partitions", "partition_indexes")


class FaultSpecError(ValueError):
    """A rule description the broker refuses; ``field`` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(slots=True)
class FaultRule:
    id: int
    action: str
    apis: frozenset[int] | None = None  # None: every API
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    error_code: int = 0
    delay_ms: int = 0
    after: int = 0
    throttle_ms: int = 0
    count: int | None = None  # None: no limit
    duration_ms: int | None = None
    created: float = 0.0  # seconds, on the caller's clock
    matched: int = 0
    hits: int = 0

    def active(self, now: float) -> bool:
        if self.count is not None and self.hits >= self.count:
            return False
        return self.duration_ms is None or now < self.created + self.duration_ms / 1000

    def matches(
        self, api_key: int, client_id: str | None, names: Callable[[], set[tuple[str, int]]]
    ) -> bool:
        """Whether a request passes every filter; ``names`` gives the (topic, partition)
        pairs it names (-1: the whole topic), computed only when a filter needs them."""
        if self.apis is not None and api_key not in self.apis:
            return False
        if self.client_id is not None and client_id != self.client_id:
            return False
        if self.topic is None and self.partition is None:
            return True
        for topic, partition in names():
            if self.topic is not None and topic != self.topic:
                continue
            if self.partition is None or partition in (self.partition, -1):
                return True
        return False

    def to_json(self, now: float) -> dict[str, Any]:
        errs = self.action in ("error", "leader_unavailable")
        remaining = None
        if self.duration_ms is not None:
            left = self.created + self.duration_ms / 1000 - now
            remaining = max(0, round(left * 1000))
        return {
            "id": self.id,
            "action": self.action,
            "api": None if self.apis is None else sorted(ApiKey(k).name for k in self.apis),
            "topic": self.topic,
            "partition": self.partition,
            "client_id": self.client_id,
            "error_code": self.error_code if errs else None,
            "error": _error_name(self.error_code) if errs else None,
            "delay_ms": self.delay_ms if self.action == "delay" else None,
            "after": self.after if self.action == "disconnect" else None,
            "throttle_ms": self.throttle_ms if self.action == "throttle" else None,
            "count": self.count,
            "duration_ms": self.duration_ms,
            "remaining_ms": remaining,
            "matched": self.matched,
            "hits": self.hits,
            "active": self.active(now),
        }


def parse_rule(spec: Mapping[str, Any], rule_id: int, now: float) -> FaultRule:
    """A rule from its JSON description (see the module docstring)."""
    unknown = sorted(k for k in spec if k not in FIELDS)
    if unknown:
        raise FaultSpecError(unknown[0], f"unknown field; fields: {', '.join(FIELDS)}")
    action = spec.get("action")
    if action not in ACTIONS:
        raise FaultSpecError("action", f"expected one of {', '.join(ACTIONS)}")
    rule = FaultRule(rule_id, action, created=now)
    rule.apis = _apis(spec.get("api"))
    rule.topic = _optional_str(spec, "topic")
    rule.partition = _optional_int(spec, "partition", 0, 2**31 - 1)
    rule.client_id = _optional_str(spec, "client_id")
    rule.duration_ms = _optional_int(spec, "duration_ms", 1, _MAX_MS)
    default_count: int | None = 1
    needs = {
        "error": "error_code",
        "delay": "delay_ms",
        "throttle": "throttle_ms",
        "leader_unavailable": "duration_ms",
    }.get(action)
    if needs is not None and spec.get(needs) is None:
        raise FaultSpecError(needs, f"required by action {action!r}")
    allowed = {
        "error": "error_code",
        "delay": "delay_ms",
        "disconnect": "after",
        "throttle": "throttle_ms",
    }
    for name, owner in allowed.items():
        if spec.get(owner) is not None and action != name:
            raise FaultSpecError(owner, f"only for action {name!r}")
    if action == "error":
        rule.error_code = _error_code(spec["error_code"])
    elif action == "delay":
        rule.delay_ms = _optional_int(spec, "delay_ms", 1, _MAX_MS) or 0
    elif action == "disconnect":
        rule.after = _optional_int(spec, "after", 0, 2**31 - 1) or 0
    elif action == "throttle":
        rule.throttle_ms = _optional_int(spec, "throttle_ms", 1, _MAX_MS) or 0
        default_count = None
    else:  # leader_unavailable
        if rule.topic is None:
            raise FaultSpecError("topic", "required by action 'leader_unavailable'")
        rule.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        if rule.apis is None:
            rule.apis = LEADER_APIS
        default_count = None
    rule.count = _optional_int(spec, "count", 1, 2**31 - 1) if "count" in spec else default_count
    return rule


def named_partitions(
    body: Any, topic_by_id: Callable[[uuid.UUID], str | None]
) -> set[tuple[str, int]]:
    """The (topic, partition) pairs a request body names; a topic named without its
    partitions (Metadata, CreateTopics) gives (topic, -1)."""
    out: set[tuple[str, int]] = set()
    if isinstance(body, Struct):
        _walk(body, None, out, topic_by_id, 0)
    return out


def _walk(
    obj: Struct,
    topic: str | None,
    out: set[tuple[str, int]],
    topic_by_id: Callable[[uuid.UUID], str | None],
    depth: int,
) -> None:
    if depth > 3:
        return
    for f in type(obj).__fields__:
        value = getattr(obj, f.name, None)
        if not isinstance(value, list) or not value:
            continue
        if topic is not None and f.name in _PARTITION_ARRAYS and isinstance(value[0], int):
            out.update((topic, p) for p in value)
            continue
        for item in value:
            if not isinstance(item, Struct):
                break
            if topic is None:
                name = _topic_of(item, topic_by_id)
                if name is not None:
                    before = len(out)
                    _walk(item, name, out, topic_by_id, depth + 1)
                    if len(out) == before:  # the topic, no partition of it named
                        out.add((name, -1))
                    continue
            else:
                partition = _partition_of(item)
                if partition is not None:
                    out.add((topic, partition))
                    continue
            _walk(item, topic, out, topic_by_id, depth + 1)


def _topic_of(item: Struct, topic_by_id: Callable[[uuid.UUID], str | None]) -> str | None:
    for name in _TOPIC_FIELDS:
        value = getattr(item, name, None)
        if isinstance(value, str) and value:
            return value
    topic_id = getattr(item, "topic_id", None)
    if isinstance(topic_id, uuid.UUID) and topic_id.int:
        return topic_by_id(topic_id)
    return None


def _partition_of(item: Struct) -> int | None:
    for name in _PARTITION_FIELDS:
        value = getattr(item, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _apis(value: Any) -> frozenset[int] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    if not items:
        raise FaultSpecError("api", "an empty list matches nothing")
    keys = set()
    for item in items:
        if isinstance(item, str) and item in ApiKey.__members__:
            keys.add(int(ApiKey[item]))
        elif isinstance(item, int) and not isinstance(item, bool) and item in set(ApiKey):
            keys.add(int(item))
        else:
            raise FaultSpecError("api", f"{item!r} is no Kafka API name or key (e.g. 'Produce')")
    return frozenset(keys)


def _error_code(value: Any) -> int:
    if isinstance(value, str) and value in ErrorCode.__members__:
        code = int(ErrorCode[value])
    elif isinstance(value, int) and not isinstance(value, bool) and value in set(ErrorCode):
        code = int(value)
    else:
        raise FaultSpecError(
            "error_code", f"{value!r} is no Kafka error code (e.g. 6 or 'NOT_LEADER_OR_FOLLOWER')"
        )
    if code == ErrorCode.NONE:
        raise FaultSpecError("error_code", "0 (NONE) is no error")
    return code


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _optional_str(spec: Mapping[str, Any], name: str) -> str | None:
    value = spec.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise FaultSpecError(name, "expected a non-empty string")
    return value


def _optional_int(spec: Mapping[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise FaultSpecError(name, f"expected an integer from {lo} to {hi}")
    return value
