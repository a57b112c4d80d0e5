"""The admin API's topics: ``/v1/topics`` and ``/v1/topics/{name}``.

Owns: ``register_topic_routes`` (the routes, added to the app by ``create_app``), the
translation between JSON and ``admin.topic_view``'s records, and ``status_of``: which HTTP
status answers a refusal in Kafka's terms.

- ``GET /v1/topics``: ``{"topics": [summary, ...]}`` by name; a summary is ``name``,
  ``topic_id`` (the UUID as text), ``internal``, ``partition_count``,
  ``replication_factor`` (partition 0's replica count) and ``configs`` (the topic's
  overrides only).
- ``GET /v1/topics/{name}``: the summary plus ``partitions``, one ``{"partition",
  "leader", "leader_epoch", "replicas", "isr", "offline"}`` each.
- ``POST /v1/topics``: ``{"name", "partitions", "replication_factor", "configs",
  "assignment", "validate_only"}`` (only ``name`` required) creates a topic through the
  broker's one creation path, as CreateTopics does: 201 with the topic as ``GET`` shows it;
  with ``validate_only``, 200 and what would be created (nothing is).
- ``DELETE /v1/topics/{name}``: deletes it as DeleteTopics does; 200 with its name and id.

A refusal by the broker is an error whose ``code`` is the Kafka error's name and whose
``message`` is the broker's (``status_of`` gives its status: UNKNOWN_TOPIC_OR_PARTITION
404, TOPIC_ALREADY_EXISTS 409, TOPIC_DELETION_DISABLED 403, INVALID_* and
POLICY_VIOLATION 400, the retriable BROKER_NOT_AVAILABLE, NOT_CONTROLLER,
REQUEST_TIMED_OUT and KAFKA_STORAGE_ERROR 503, any other 500). What this module refuses
itself (a body that is not the documented shape, a number no CreateTopics field can carry,
more than ``MAX_PARTITIONS``) is a 400 with one of the admin API's own lower-case slugs.
Must not: import anything of the broker but ``admin.topic_view``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from .errors import ApiError, json_response
from .inputs import boolean, describe, parse_json_object
from .topic_view import (
    INT16_MAX,
    INT32_MAX,
    INT32_MIN,
    MAX_PARTITIONS,
    TopicPlan,
    TopicRecord,
    TopicRefused,
    TopicRequest,
    TopicView,
)

FIELDS = ("name", "partitions", "replication_factor", "configs", "assignment", "validate_only")
RETRIABLE = ("BROKER_NOT_AVAILABLE", "NOT_CONTROLLER", "REQUEST_TIMED_OUT", "KAFKA_STORAGE_ERROR")
_STATUS = {
    "UNKNOWN_TOPIC_OR_PARTITION": 404,
    "TOPIC_ALREADY_EXISTS": 409,
    "TOPIC_DELETION_DISABLED": 403,
    "POLICY_VIOLATION": 400,
    **dict.fromkeys(RETRIABLE, 503),
}


def status_of(error: str) -> int:
    """The HTTP status of a refusal named by its Kafka error."""
    return _STATUS.get(error) or (400 if error.startswith("INVALID_") else 500)


def register_topic_routes(app: QuartTrio, view: TopicView) -> None:
    @app.get("/v1/topics")
    async def list_topics() -> Response:
        _no_query()
        return json_response({"topics": [summary_json(t) for t in view.topics()]})

    @app.get("/v1/topics/<path:name>")
    async def get_topic(name: str) -> Response:
        _no_query()
        with _refusals():
            return json_response(topic_json(view.topic(name)))

    @app.post("/v1/topics")
    async def create_topic() -> Response:
        _no_query()
        data = await request.get_data(cache=False)
        assert isinstance(data, bytes)
        body = parse_json_object(data, FIELDS)
        wanted = topic_request(body)
        validate_only = boolean(body, "validate_only", False)
        with _refusals():
            if validate_only:
                return json_response(plan_json(await view.validate_topic(wanted)))
            return json_response(topic_json(await view.create_topic(wanted)), 201)

    @app.delete("/v1/topics/<path:name>")
    async def delete_topic(name: str) -> Response:
        _no_query()
        with _refusals():
            gone = await view.delete_topic(name)
        return json_response({"name": gone.name, "topic_id": gone.topic_id})


@contextmanager
def _refusals() -> Iterator[None]:
    """Turns the view's ``TopicRefused`` into the HTTP answer (``status_of``)."""
    try:
        yield
    except TopicRefused as exc:
        raise ApiError(status_of(exc.error), exc.error, exc.message) from None


def _no_query() -> None:
    if request.args:
        name = sorted(request.args)[0]
        raise ApiError(400, "unknown-parameter", f"unknown query parameter {name!r}; known: none")


# ------------------------------------------------------------------ JSON in


def topic_request(body: Mapping[str, Any]) -> TopicRequest:
    """The creation ``body`` as a ``TopicRequest``: shapes and ranges checked here, what
    Kafka's rules say of the values left to the broker (its refusal is the answer)."""
    if "name" not in body:
        raise ApiError(400, "missing-field", "the body needs a 'name': the topic's name")
    name = body["name"]
    if not isinstance(name, str):
        raise ApiError(400, "invalid-field", f"name must be a string, not {describe(name)}")
    partitions = _integer(body, "partitions", INT32_MIN, INT32_MAX)
    if partitions is not None and partitions > MAX_PARTITIONS:
        raise ApiError(
            400,
            "too-many-partitions",
            f"at most {MAX_PARTITIONS} partitions per topic through the admin API, "
            f"not {partitions} (CreateTopics has no such limit)",
        )
    factor = _integer(body, "replication_factor", -INT16_MAX - 1, INT16_MAX)
    return TopicRequest(
        name=name,
        partitions=partitions,
        replication_factor=factor,
        configs=_configs(body.get("configs", {})),
        assignment=_assignment(body.get("assignment")),
    )


def _integer(body: Mapping[str, Any], key: str, lo: int, hi: int) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise ApiError(
            400, "invalid-field", f"{key} must be an integer or null, not {describe(value)}"
        )
    if not lo <= value <= hi:
        raise ApiError(
            400, "invalid-field", f"{key} must be between {lo} and {hi} (CreateTopics' range)"
        )
    return value


def _configs(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ApiError(
            400,
            "invalid-field",
            f"configs must be an object of topic config names to strings, not {describe(value)}",
        )
    for key, text in value.items():
        if not isinstance(text, str):
            raise ApiError(
                400,
                "invalid-field",
                f"configs[{key!r}] must be a string (as in server.properties), "
                f"not {describe(text)}",
            )
    return dict(value)


def _assignment(value: Any) -> tuple[tuple[int, ...], ...] | None:
    if value is None:
        return None
    shape = "a list of lists of broker ids (partition 0's first)"
    if not isinstance(value, list):
        raise ApiError(400, "invalid-field", f"assignment must be {shape}, not {describe(value)}")
    if len(value) > MAX_PARTITIONS:
        raise ApiError(
            400,
            "too-many-partitions",
            f"at most {MAX_PARTITIONS} partitions per topic through the admin API, "
            f"not {len(value)} (CreateTopics has no such limit)",
        )
    out: list[tuple[int, ...]] = []
    for p, ids in enumerate(value):
        if not isinstance(ids, list) or not all(
            type(b) is int and INT32_MIN <= b <= INT32_MAX for b in ids
        ):
            raise ApiError(
                400,
                "invalid-field",
                f"assignment[{p}] must be a list of broker ids (32-bit integers), "
                f"not {describe(ids)}",
            )
        out.append(tuple(ids))
    return tuple(out)


# ----------------------------------------------------------------- JSON out


def summary_json(topic: TopicRecord) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": topic.topic_id,
        "internal": topic.internal,
        "partition_count": len(topic.partitions),
        "replication_factor": topic.replication_factor,
        "configs": dict(topic.configs),
    }


def topic_json(topic: TopicRecord) -> dict[str, Any]:
    return {
        **summary_json(topic),
        "partitions": [
            {
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "offline": list(p.offline),
            }
            for p in topic.partitions
        ],
    }


def plan_json(plan: TopicPlan) -> dict[str, Any]:
    return {
        "validate_only": True,
        "name": plan.name,
        "partition_count": plan.partitions,
        "replication_factor": plan.replication_factor,
        "configs": dict(plan.configs),
        "assignment": None if plan.assignment is None else [list(a) for a in plan.assignment],
    }
