"""The ``/v1/topics`` part of the admin API's OpenAPI document.

Owns: ``topic_schemas`` (``TopicSummary``, ``Topic``, ``TopicPartition``, ``Topics``,
``TopicCreation``, ``TopicValidation``, ``TopicDeleted``) and ``topic_paths`` (the four
operations of ``admin.topics``, with the statuses a Kafka refusal is answered with),
which ``admin.openapi`` merges into the document. When the topic routes change, this
changes with them: the schemathesis test holds the two together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .topic_view import INT16_MAX, INT32_MAX, INT32_MIN, MAX_PARTITIONS

NAME_PATTERN = "^[a-zA-Z0-9._-]+$"  # Kafka's legal topic names ('.' and '..' excepted)
MAX_NAME_LENGTH = 249


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(properties),
        "properties": properties,
        "additionalProperties": False,
    }


def _ids() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "integer"}}


def _configs(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "additionalProperties": {"type": "string"},
    }


def topic_schemas() -> dict[str, Any]:
    summary = {
        "name": {"type": "string"},
        "topic_id": {"type": "string", "format": "uuid"},
        "internal": {"type": "boolean", "description": "a coordinator's topic"},
        "partition_count": {"type": "integer", "minimum": 0},
        "replication_factor": {
            "type": "integer",
            "minimum": 0,
            "description": "partition 0's number of replicas",
        },
        "configs": _configs("the topic's config overrides only (not the broker's defaults)"),
    }
    partition = {
        "partition": {"type": "integer", "minimum": 0},
        "leader": {"type": "integer", "minimum": -1, "description": "-1: no leader"},
        "leader_epoch": {"type": "integer"},
        "replicas": _ids(),
        "isr": _ids(),
        "offline": {**_ids(), "description": "replicas on a broker or log dir that is down"},
    }
    return {
        "TopicSummary": _object(summary),
        "TopicPartition": _object(partition),
        "Topic": _object(
            {**summary, "partitions": {"type": "array", "items": _ref("TopicPartition")}}
        ),
        "Topics": _object({"topics": {"type": "array", "items": _ref("TopicSummary")}}),
        "TopicCreation": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {
                    "type": "string",
                    "pattern": NAME_PATTERN,
                    "maxLength": MAX_NAME_LENGTH,
                    "description": "Kafka's rules: ASCII letters, digits, '.', '_', '-'",
                },
                "partitions": {
                    "type": ["integer", "null"],
                    "minimum": INT32_MIN,
                    "maximum": MAX_PARTITIONS,
                    "description": "absent, null or -1: the broker's num.partitions; "
                    "not with assignment",
                },
                "replication_factor": {
                    "type": ["integer", "null"],
                    "minimum": -INT16_MAX - 1,
                    "maximum": INT16_MAX,
                    "description": "absent, null or -1: the broker's "
                    "default.replication.factor; not with assignment",
                },
                "configs": _configs("topic config overrides (retention.ms, cleanup.policy ...)"),
                "assignment": {
                    "type": ["array", "null"],
                    "maxItems": MAX_PARTITIONS,
                    "description": "each partition's brokers, partition 0's first (the "
                    "first broker its preferred leader); instead of partitions and "
                    "replication_factor",
                    "items": {
                        "type": "array",
                        "items": {"type": "integer", "minimum": INT32_MIN, "maximum": INT32_MAX},
                    },
                },
                "validate_only": {
                    "type": "boolean",
                    "default": False,
                    "description": "check only: nothing is created",
                },
            },
            "additionalProperties": False,
        },
        "TopicValidation": _object(
            {
                "validate_only": {"const": True},
                "name": {"type": "string"},
                "partition_count": {"type": "integer", "minimum": 1},
                "replication_factor": {"type": "integer", "minimum": 1},
                "configs": _configs("the overrides it would have"),
                "assignment": {
                    "type": ["array", "null"],
                    "items": _ids(),
                    "description": "the brokers asked for; null: the broker would place "
                    "the replicas when creating it",
                },
            }
        ),
        "TopicDeleted": _object(
            {"name": {"type": "string"}, "topic_id": {"type": "string", "format": "uuid"}}
        ),
    }


REFUSALS = (
    "A refusal's code is the Kafka error's name and its message the broker's, as "
    "CreateTopics and DeleteTopics answer them: UNKNOWN_TOPIC_OR_PARTITION 404, "
    "TOPIC_ALREADY_EXISTS 409, TOPIC_DELETION_DISABLED 403, INVALID_* and POLICY_VIOLATION "
    "400, BROKER_NOT_AVAILABLE, NOT_CONTROLLER, REQUEST_TIMED_OUT and KAFKA_STORAGE_ERROR "
    "503 (try again), any other 500 (e.g. UNKNOWN_SERVER_ERROR when only some brokers have "
    "a broker.rack). The admin API's own refusals of a body have lower-case codes."
)


def topic_paths(
    op: Callable[..., dict[str, Any]], error: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """``op(summary, responses, **extra)`` and ``error(description)`` are the document's."""
    name_param = {
        "name": "name",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
        "description": "a topic name",
    }
    unknown = error("no such topic (UNKNOWN_TOPIC_OR_PARTITION)")
    return {
        "/v1/topics": {
            "get": op(
                "Every topic the broker knows (in a cluster: the cluster's), by name, with "
                "its id, partition count, replication factor and config overrides.",
                {
                    "200": _json(_ref("Topics"), "the topics"),
                    "400": error("a query parameter (none is known)"),
                },
                operationId="listTopics",
            ),
            "post": op(
                "Create a topic through the broker's one creation path, the one CreateTopics "
                "takes (in a ZooKeeper cluster the controller places it; the answer comes "
                "once this broker's metadata has it). partitions and replication_factor "
                "default to the broker's num.partitions and default.replication.factor; "
                f"assignment names the brokers instead. At most {MAX_PARTITIONS} partitions. "
                + REFUSALS,
                {
                    "201": _json(_ref("Topic"), "created: the topic as GET shows it"),
                    "200": _json(
                        _ref("TopicValidation"), "validate_only: valid; nothing was created"
                    ),
                    "400": error(
                        "INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, "
                        "INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, "
                        "INVALID_CONFIG, INVALID_REQUEST (assignment with partitions or "
                        "replication_factor), or a body not of the documented shape"
                    ),
                    "409": error("TOPIC_ALREADY_EXISTS"),
                    "503": error("BROKER_NOT_AVAILABLE and the like: try again"),
                },
                operationId="createTopic",
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("TopicCreation")}},
                },
            ),
        },
        "/v1/topics/{name}": {
            "get": op(
                "One topic, with each partition's leader, leader epoch, replicas, ISR and "
                "offline replicas.",
                {
                    "200": _json(_ref("Topic"), "the topic"),
                    "400": error("a query parameter (none is known)"),
                    "404": unknown,
                },
                operationId="getTopic",
                parameters=[name_param],
            ),
            "delete": op(
                "Delete a topic as DeleteTopics does (its partitions everywhere, in a cluster "
                "through the controller). " + REFUSALS,
                {
                    "200": _json(_ref("TopicDeleted"), "deleted"),
                    "400": error(
                        "INVALID_TOPIC_EXCEPTION: an internal topic (its coordinator's), or a "
                        "query parameter"
                    ),
                    "403": error("TOPIC_DELETION_DISABLED: delete.topic.enable is false"),
                    "404": unknown,
                    "503": error("BROKER_NOT_AVAILABLE and the like: try again"),
                },
                operationId="deleteTopic",
                parameters=[name_param],
            ),
        },
    }
