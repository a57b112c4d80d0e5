"""The OpenAPI 3.1 document of the admin API, served at ``/v1/openapi.json``.

Owns: ``openapi_document``, which describes every path, parameter, request body and
response (with its JSON Schema) of the app in ``admin.app``. It is built per app from
what only the broker knows (the mute state names, the quota keys, whether a token is
required), so the document a broker serves is exactly true of that broker. When the
routes change, this document changes with them: the schemathesis test holds the two
together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .acl_openapi import acl_paths, acl_schemas
from .client_metrics import client_metrics_paths, client_metrics_schemas
from .faults import fault_paths, fault_schemas
from .topic_openapi import topic_paths, topic_schemas
from .users import user_paths, user_schemas
from .view import CONFIG_ORIGINS, MAX_POOL_SIZE, MIN_POOL_SIZE

_LONG_MAX = 2**63 - 1


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


def _ratio() -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1}


def _count() -> dict[str, Any]:
    return {"type": "integer", "minimum": 0}


def _nullable(type_: str) -> dict[str, Any]:
    return {"type": [type_, "null"]}


def _object(properties: dict[str, Any], *, extra: Any = False) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(properties),
        "properties": properties,
        "additionalProperties": extra,
    }


_DEFAULT_SETTINGS: dict[str, Any] = {
    "type": "object",
    "description": "the cluster-wide default's run-time changes (Kafka's broker resource "
    '""; not changed by PUT /v1/config); this broker\'s own (dynamic_settings) win over them',
    "additionalProperties": {"type": "string"},
}
_SOURCES: dict[str, Any] = {
    "type": "object",
    "description": "where each key's value comes from: default, file, env (a TRIO_BROKER_* "
    "variable), override (--override), dynamic-default (a run-time change of the "
    "cluster-wide default: Kafka's AlterConfigs or IncrementalAlterConfigs on broker "
    'resource "", kafka-configs --entity-default) or dynamic (a run-time change of this '
    'broker: PUT /v1/config, or the Kafka APIs on resource "<broker.id>"); precedence '
    "default < file < env < override < dynamic-default < dynamic",
    "additionalProperties": {"type": "string", "enum": list(CONFIG_ORIGINS)},
}


def _schemas(mute_states: Sequence[str], quota_keys: Sequence[str]) -> dict[str, Any]:
    quota_value: dict[str, Any] = {
        "producer_byte_rate": {"type": "integer", "minimum": 1, "maximum": _LONG_MAX},
        "consumer_byte_rate": {"type": "integer", "minimum": 1, "maximum": _LONG_MAX},
        "request_percentage": {"type": "number", "exclusiveMinimum": 0},
    }
    positive = {"type": "number", "exclusiveMinimum": 0}
    quota_values = {k: quota_value.get(k, positive) for k in quota_keys}
    return {
        "Error": _object(
            {
                "error": _object(
                    {
                        "code": {"type": "string", "description": "a stable slug"},
                        "message": {"type": "string"},
                    }
                )
            }
        ),
        "Ready": _object({"ready": {"type": "boolean"}}),
        "Listener": _object(
            {
                "name": {"type": "string"},
                "host": {"type": "string"},
                "port": {"type": "integer", "minimum": 0, "maximum": 65535},
                "security_protocol": {"type": "string"},
                "plane": {"enum": ["data", "control"]},
            }
        ),
        "Broker": _object(
            {
                "broker_id": {"type": "integer"},
                "cluster_id": {"type": "string"},
                "version": {"type": "string"},
                "uptime_s": {"type": "number", "minimum": 0},
                "started_at": {"type": "string", "format": "date-time"},
                "listeners": {"type": "array", "items": _ref("Listener")},
                "admin": _nullable("string"),
                "pools": _object(
                    {
                        "io": {"type": "integer", "minimum": 1},
                        "network": {
                            "type": "object",
                            "additionalProperties": {"type": "integer", "minimum": 1},
                        },
                    }
                ),
            }
        ),
        "Pools": _object(
            {
                "io": _object(
                    {
                        "size": {"type": "integer", "minimum": 1},
                        "busy": _count(),
                        "idle_ratio": _ratio(),
                    }
                ),
                "network": {
                    "type": "object",
                    "description": "by listener name",
                    "additionalProperties": _object(
                        {
                            "plane": {"enum": ["data", "control"]},
                            "size": {"type": "integer", "minimum": 1},
                            "idle_ratio": {
                                **_ratio(),
                                "description": "share of the event loop's time the "
                                "listener's network work did not take over the metrics "
                                "window (waits for slow peers excluded); it does not "
                                "depend on the pool size",
                            },
                            "connections": _count(),
                        }
                    ),
                },
                "request_queue": {
                    "type": "object",
                    "description": "by plane (data, control)",
                    "additionalProperties": _object({"size": _count(), "capacity": _count()}),
                },
            }
        ),
        "PoolResize": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": MIN_POOL_SIZE, "maximum": MAX_POOL_SIZE}
            },
            "additionalProperties": False,
        },
        "Connection": _object(
            {
                "id": {"type": "string"},
                "listener": {"type": "string"},
                "processor": {"type": "integer", "minimum": 0},
                "remote": {"type": "string"},
                "principal": {"type": "string"},
                "client_id": _nullable("string"),
                "client_software_name": _nullable("string"),
                "client_software_version": _nullable("string"),
                "mute_state": {"enum": list(mute_states)},
                "throttle_remaining_ms": {"type": "number", "minimum": 0},
                "idle_ms": {"type": "number", "minimum": 0},
                "requests": _count(),
                "bytes_in": _count(),
                "bytes_out": _count(),
            }
        ),
        "Connections": _object({"connections": {"type": "array", "items": _ref("Connection")}}),
        "QuotaValues": {
            "type": "object",
            "properties": quota_values,
            "additionalProperties": False,
        },
        "QuotaChanges": {
            "type": "object",
            "description": "Values to set; null removes a value; keys not given are kept.",
            "properties": {k: {"oneOf": [v, {"type": "null"}]} for k, v in quota_values.items()},
            "minProperties": 1,
            "additionalProperties": False,
        },
        "Quota": _object(
            {
                "entity": {
                    "type": "object",
                    "description": "entity type -> name; null names the default entity",
                    "properties": {"client-id": _nullable("string")},
                    "additionalProperties": _nullable("string"),
                },
                "values": _ref("QuotaValues"),
            }
        ),
        "Quotas": _object({"quotas": {"type": "array", "items": _ref("Quota")}}),
        "Metrics": {
            "type": "object",
            "description": "The broker's metrics snapshot (schema trio-broker.metrics/1).",
            "additionalProperties": True,
        },
        "LogCleaner": {
            "type": "object",
            "description": "The log_cleaner section of the metrics snapshot "
            "(docs/metrics.schema.json).",
            "required": ["enabled", "threads", "passes", "bytes_cleaned", "partitions"],
            "additionalProperties": True,
        },
        "Dashboard": _object(
            {
                "data_dir": {"type": "string", "description": "dashboard.data.dir"},
                "trends": {
                    "type": ["object", "null"],
                    "description": "the Spark trends job's dashboard.json (null: none yet)",
                },
                "recommendations": {
                    "type": ["object", "null"],
                    "description": "the advisor's recommendations.json (null: none yet)",
                },
                "balance": {"type": ["object", "null"], "description": "balance/plan.json"},
                "problems": {"type": "array", "items": {"type": "string"}},
            }
        ),
        "Config": _object(
            {
                "config": {
                    "type": "object",
                    "description": "every key's effective value as text; secrets masked",
                    "additionalProperties": _nullable("string"),
                },
                "dynamic_keys": {"type": "array", "items": {"type": "string"}},
                "dynamic_settings": {
                    "type": "object",
                    "description": "this broker's own run-time changes (what PUT /v1/config "
                    "changes: Kafka's per-broker level, DYNAMIC_BROKER_CONFIG)",
                    "additionalProperties": {"type": "string"},
                },
                "default_settings": _DEFAULT_SETTINGS,
                "sources": _SOURCES,
            }
        ),
        "ConfigUpdate": {
            "type": "object",
            "required": ["settings"],
            "properties": {
                "settings": {
                    "type": "object",
                    "description": "dynamic keys to change; null reverts a key",
                    "additionalProperties": {
                        "type": ["string", "number", "boolean", "null", "array"],
                        "items": {"type": "string"},
                    },
                },
                "dry_run": {"type": "boolean", "default": False},
            },
            "additionalProperties": False,
        },
        "ConfigUpdated": _object(
            {
                "dry_run": {"type": "boolean"},
                "changed": {
                    "type": "object",
                    "description": "keys whose effective value changes, with the new value",
                    "additionalProperties": _nullable("string"),
                },
                "config": {
                    "type": "object",
                    "additionalProperties": _nullable("string"),
                },
                "dynamic_keys": {"type": "array", "items": {"type": "string"}},
                "dynamic_settings": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                },
                "default_settings": _DEFAULT_SETTINGS,
                "sources": _SOURCES,
            }
        ),
    }


def openapi_document(
    *,
    mute_states: Sequence[str],
    quota_keys: Sequence[str],
    token_required: bool,
    version: str,
) -> dict[str, Any]:
    """The whole document; ``token_required`` adds the bearer security requirement."""
    unauthorized = {"401": _error("missing or wrong bearer token")} if token_required else {}
    bad = {"400": _error("invalid input; nothing was changed")}
    listener_param = {
        "name": "listener",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
        "description": "a listener name (case-insensitive)",
    }
    client_param = {
        "name": "client_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
        "description": "a client id, or <default> for the default client quota",
    }
    public: dict[str, Any] = {"security": []}

    def op(
        summary: str,
        responses: dict[str, Any],
        *,
        protected: bool = True,
        **extra: Any,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"summary": summary, **extra}
        out["responses"] = {**responses, **(unauthorized if protected else {})}
        if not protected:
            out.update(public)
        return out

    paths: dict[str, Any] = {
        "/v1/status/ready": {
            "get": op(
                "Whether every Kafka listener accepts (503 while starting or shutting down).",
                {
                    "200": _json(_ref("Ready"), "ready"),
                    "503": _json(_ref("Ready"), "starting or shutting down"),
                },
                protected=False,
                operationId="getReady",
            )
        },
        "/v1/openapi.json": {
            "get": op(
                "This document.",
                {"200": _json({"type": "object"}, "the OpenAPI document")},
                protected=False,
                operationId="getOpenApi",
            )
        },
        "/v1/broker": {
            "get": op(
                "Broker id, cluster id, version, uptime, listeners and pool sizes.",
                {"200": _json(_ref("Broker"), "the broker")},
                operationId="getBroker",
            )
        },
        "/v1/pools": {
            "get": op(
                "The io (request handler) pool, each listener's network pool, the queues.",
                {"200": _json(_ref("Pools"), "the pools")},
                operationId="getPools",
            )
        },
        "/v1/pools/io": {
            "put": op(
                "Resize the io pool live (and num.io.threads, and the I/O limiter).",
                {"200": _json(_ref("Pools"), "the pools after the change"), **bad},
                operationId="resizeIoPool",
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("PoolResize")}},
                },
            )
        },
        "/v1/pools/network/{listener}": {
            "put": op(
                "Resize a data-plane listener's network pool live; no connection is closed. "
                "Processors own connections and account for their network work; they all "
                "run on the broker's one event loop, so their number adds or removes no CPU.",
                {
                    "200": _json(_ref("Pools"), "the pools after the change"),
                    "400": _error("invalid size, or the control-plane listener"),
                    "404": _error("no such listener"),
                },
                operationId="resizeNetworkPool",
                parameters=[listener_param],
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("PoolResize")}},
                },
            )
        },
        "/v1/connections": {
            "get": op(
                "Every open Kafka connection, optionally filtered.",
                {
                    "200": _json(_ref("Connections"), "the connections"),
                    "400": _error("unknown listener, mute state or query parameter"),
                },
                operationId="listConnections",
                parameters=[
                    {"name": "listener", "in": "query", "schema": {"type": "string"}},
                    {"name": "client_id", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "mute_state",
                        "in": "query",
                        "schema": {"enum": list(mute_states)},
                    },
                ],
            )
        },
        "/v1/quotas": {
            "get": op(
                "Every client quota stored.",
                {"200": _json(_ref("Quotas"), "the quotas")},
                operationId="listQuotas",
            )
        },
        "/v1/quotas/clients/{client_id}": {
            "put": op(
                "Set (or, with null, remove) quota values of a client id.",
                {
                    "200": _json(_ref("Quota"), "the client's quota after the change"),
                    **bad,
                    "404": _error("the path names no client id"),
                },
                operationId="alterClientQuota",
                parameters=[client_param],
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("QuotaChanges")}},
                },
            ),
            "delete": op(
                "Remove every quota value of a client id.",
                {
                    "200": _json(_ref("Quota"), "the quota removed"),
                    "404": _error("no quota for that client id"),
                },
                operationId="deleteClientQuota",
                parameters=[client_param],
            ),
        },
        "/v1/metrics": {
            "get": op(
                "The metrics snapshot as JSON.",
                {"200": _json(_ref("Metrics"), "the snapshot")},
                operationId="getMetrics",
            )
        },
        "/v1/log-cleaner": {
            "get": op(
                "The log cleaner: threads, passes, bytes cleaned, last run, and per "
                "compacted partition its dirty ratio (the metrics' log_cleaner section).",
                {"200": _json(_ref("LogCleaner"), "the cleaner's figures")},
                operationId="getLogCleaner",
            )
        },
        "/v1/cluster": {
            "get": op(
                "What this broker knows of its cluster: mode (single, static or "
                "zookeeper), cluster id, controller and whether this broker is it, the "
                "brokers with their client endpoints and admin API URLs (admin: null where "
                "unknown), offline partitions, the ZooKeeper "
                "session, and every partition's leader, leader epoch, replicas and ISR.",
                {"200": _json({"type": "object"}, "the cluster as this broker sees it")},
                operationId="getCluster",
            )
        },
        "/v1/transactions": {
            "get": op(
                "The transaction coordinator on this broker: its figures (transactional "
                "ids, ongoing, commits, aborts by reason, markers written), every "
                "transactional id it holds (state, producer id and epoch, timeout, start, "
                "partitions) and the LSO lag of the partitions this broker leads.",
                {"200": _json({"type": "object"}, "the transactions as this broker has them")},
                operationId="getTransactions",
            )
        },
        "/metrics": {
            "get": op(
                "The metrics in Prometheus' text format.",
                {
                    "200": {
                        "description": "Prometheus text exposition format 0.0.4",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    }
                },
                operationId="getPrometheusMetrics",
            )
        },
        "/v1/dashboard": {
            "get": op(
                "The Spark jobs' trend charts and tuning advice, from dashboard.data.dir.",
                {"200": _json(_ref("Dashboard"), "what the jobs wrote")},
                operationId="getDashboardData",
            )
        },
        "/dashboard": {
            "get": op(
                "The dashboard page (it reads /v1/metrics and /v1/dashboard).",
                {
                    "200": {
                        "description": "the page",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    }
                },
                protected=False,
                operationId="getDashboardPage",
            )
        },
        "/dashboard/static/{name}": {
            "get": op(
                "A script, style sheet or license file of the dashboard page.",
                {
                    "200": {
                        "description": "the file",
                        "content": {
                            t: {"schema": {"type": "string"}}
                            for t in ("text/javascript", "text/css", "text/plain")
                        },
                    },
                    "404": _error("no such file"),
                },
                protected=False,
                operationId="getDashboardFile",
                parameters=[
                    {
                        "name": "name",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "minLength": 1},
                        "description": "a file name, e.g. dashboard.js",
                    }
                ],
            )
        },
        "/v1/config": {
            "get": op(
                "The effective configuration, secrets masked, with each key's source "
                "(dynamic-default: the cluster-wide default's run-time change).",
                {"200": _json(_ref("Config"), "the configuration")},
                operationId="getConfig",
            ),
            "put": op(
                "Change dynamic keys at run time (dry_run: only validate), at this "
                "broker's own level (Kafka's DYNAMIC_BROKER_CONFIG, as AlterConfigs on "
                'broker resource "<broker.id>"): it wins over the cluster-wide default '
                '(resource ""), which only the Kafka APIs change; null reverts a key to '
                "the level below (the cluster-wide default, else the static setting).",
                {
                    "200": _json(_ref("ConfigUpdated"), "the configuration after the change"),
                    "400": _error("an unknown or static key, or a bad value (named)"),
                },
                operationId="updateConfig",
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("ConfigUpdate")}},
                },
            ),
        },
    }
    paths.update(topic_paths(op, _error))
    paths.update(acl_paths(op, _error))
    paths.update(user_paths(op, bad))
    paths.update(client_metrics_paths(op, _error))
    paths.update(fault_paths(op, _error))
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "trio-broker admin API",
            "version": version,
            "description": (
                "Operate a running trio-broker: readiness, pools (live resize), "
                "connections, topics, client quotas, ACLs, SCRAM users, metrics and dynamic "
                "configuration; "
                "fault injection for test suites (testing.faults.enable). "
                'Errors are {"error": {"code", "message"}}.'
            ),
        },
        "paths": paths,
        "components": {
            "schemas": {
                **_schemas(mute_states, quota_keys),
                **topic_schemas(),
                **acl_schemas(),
                **user_schemas(),
                **client_metrics_schemas(),
                **fault_schemas(),
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    if token_required:
        doc["security"] = [{"bearer": []}]
    return doc
