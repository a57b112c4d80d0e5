"""The admin API's client telemetry (KIP-714): ``/v1/client-metrics`` and its
subscriptions.

Owns: the routes
(``register_client_metrics_routes``, added by ``create_app``) and their part of the OpenAPI
document (``client_metrics_paths``, ``client_metrics_schemas``):

- ``GET /v1/client-metrics``: ``{"clients": [...]}``, one entry per client instance the
  broker keeps: its instance id, client id, software name and version, source address
  and port, push interval, first and last push time (Unix seconds; null before a push) and
  ``"metrics": {series: value}`` from its latest push (a series is the metric's name, with
  ``{attribute=value,...}`` when the point has attributes; a histogram's value is
  ``{"count", "sum"}``), and the broker's own byte count of the client:
  ``broker_bytes_in``/``broker_bytes_out`` (received from it, sent to it) summed over
  ``broker_connections``, this broker's open connections of the same client id, software
  name and version and source address, and ``broker_bytes_instances``, the instances
  sharing those connections (and so the same figures);
- ``GET /v1/client-metrics/subscriptions``: every subscription;
- ``GET|PUT|DELETE /v1/client-metrics/subscriptions/{name}``: one subscription, whose body
  is the ``CLIENT_METRICS`` resource's configs under Kafka's names (``metrics``: prefixes,
  a string comma-separated or a list, ``*`` for all; ``interval.ms``: 100..3600000;
  ``match``: ``<key>=<regex>`` items, a string or a list). PUT replaces the whole set (an
  unset key takes Kafka's default). The same set as IncrementalAlterConfigs on
  ``CLIENT_METRICS`` (and, in a ZooKeeper cluster, every broker's).

Bad input is a 400 naming the field; what the broker refuses a 400 with Kafka's message.
Must not: import anything of the broker (``ClientMetricsView`` is what it needs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from .client_metrics_view import ClientMetricsView
from .errors import ApiError, json_response
from .inputs import describe, parse_json_object

KEYS = ("metrics", "interval.ms", "match")
INTERVAL_MIN, INTERVAL_MAX = 100, 3_600_000


def _list_text(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if any("," in v for v in value):
            raise ApiError(400, "invalid-config", f"{key}: an item may not hold a comma")
        return ",".join(value)
    raise ApiError(
        400, "invalid-config", f"{key} must be a string or a list of strings, not {describe(value)}"
    )


def configs_of(body: Mapping[str, Any]) -> dict[str, str]:
    """A PUT body as the resource's configs (text, as Kafka's AlterConfigs carries them)."""
    configs: dict[str, str] = {}
    for key in ("metrics", "match"):
        if key in body:
            configs[key] = _list_text(key, body[key])
    if "interval.ms" in body:
        value = body["interval.ms"]
        if type(value) is not int or not INTERVAL_MIN <= value <= INTERVAL_MAX:
            raise ApiError(
                400,
                "invalid-config",
                f"interval.ms must be an integer from {INTERVAL_MIN} to {INTERVAL_MAX}, "
                f"not {describe(value)}",
            )
        configs["interval.ms"] = str(value)
    return configs


def register_client_metrics_routes(app: QuartTrio, view: ClientMetricsView) -> None:
    @app.get("/v1/client-metrics")
    async def clients() -> Response:
        return json_response({"clients": list(view.client_metrics())})

    @app.get("/v1/client-metrics/subscriptions")
    async def subscriptions() -> Response:
        return json_response({"subscriptions": list(view.client_metrics_subscriptions())})

    @app.get("/v1/client-metrics/subscriptions/<path:name>")
    async def get_subscription(name: str) -> Response:
        return json_response(dict(view.client_metrics_subscription(name)))

    @app.put("/v1/client-metrics/subscriptions/<path:name>")
    async def put_subscription(name: str) -> Response:
        data = await request.get_data(cache=False)
        assert isinstance(data, bytes)
        body = parse_json_object(data, KEYS)
        if not body:
            raise ApiError(
                400, "missing-field", f"give at least one of {', '.join(KEYS)} (DELETE removes)"
            )
        return json_response(
            dict(await view.put_client_metrics_subscription(name, configs_of(body)))
        )

    @app.delete("/v1/client-metrics/subscriptions/<path:name>")
    async def delete_subscription(name: str) -> Response:
        return json_response(dict(await view.delete_client_metrics_subscription(name)))


# ---------------------------------------------------------------- OpenAPI


def _ref(name: str) -> str:
    return f"#/components/schemas/{name}"


def client_metrics_schemas() -> dict[str, Any]:
    text_or_list = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    subscription = {
        "type": "object",
        "required": ["name", *KEYS],
        "properties": {
            "name": {"type": "string"},
            "metrics": {"type": "string"},
            "interval.ms": {"type": "integer"},
            "match": {"type": "string"},
        },
    }
    client = {
        "type": "object",
        "required": [
            "client_instance_id",
            "client_id",
            "broker_bytes_in",
            "broker_bytes_out",
            "broker_connections",
            "metrics",
        ],
        "properties": {
            "client_instance_id": {"type": "string"},
            "client_id": {"type": "string"},
            "client_software_name": {"type": "string"},
            "client_software_version": {"type": "string"},
            "client_source_address": {"type": "string"},
            "client_source_port": {"type": "integer"},
            "push_interval_ms": {"type": "integer"},
            "last_push_time": {"type": ["number", "null"]},
            "broker_bytes_in": {"type": "integer", "minimum": 0},
            "broker_bytes_out": {"type": "integer", "minimum": 0},
            "broker_connections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "bytes_in", "bytes_out"],
                    "properties": {
                        "id": {"type": "string"},
                        "bytes_in": {"type": "integer", "minimum": 0},
                        "bytes_out": {"type": "integer", "minimum": 0},
                    },
                },
            },
            "broker_bytes_instances": {"type": "integer", "minimum": 1},
            "metrics": {"type": "object"},
        },
    }
    return {
        "ClientMetricsSubscription": subscription,
        "ClientMetricsSubscriptions": {
            "type": "object",
            "required": ["subscriptions"],
            "properties": {
                "subscriptions": {
                    "type": "array",
                    "items": {"$ref": _ref("ClientMetricsSubscription")},
                }
            },
        },
        "ClientMetricsSubscriptionChange": {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "metrics": text_or_list,
                "interval.ms": {
                    "type": "integer",
                    "minimum": INTERVAL_MIN,
                    "maximum": INTERVAL_MAX,
                },
                "match": text_or_list,
            },
            "additionalProperties": False,
        },
        "ClientMetricsClients": {
            "type": "object",
            "required": ["clients"],
            "properties": {"clients": {"type": "array", "items": client}},
        },
    }


def client_metrics_paths(
    op: Callable[..., dict[str, Any]], error: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    def body(name: str, description: str) -> dict[str, Any]:
        return {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": _ref(name)}}},
        }

    name_param = {
        "name": "name",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
        "description": "a CLIENT_METRICS subscription's name",
    }
    sub = body("ClientMetricsSubscription", "the subscription")
    return {
        "/v1/client-metrics": {
            "get": op(
                "The client instances pushing telemetry (KIP-714), each with the metrics of "
                "its latest push and the bytes this broker counted on its client's open "
                "connections.",
                {"200": body("ClientMetricsClients", "the clients")},
                operationId="listClientMetrics",
            )
        },
        "/v1/client-metrics/subscriptions": {
            "get": op(
                "Every CLIENT_METRICS subscription.",
                {"200": body("ClientMetricsSubscriptions", "the subscriptions")},
                operationId="listClientMetricsSubscriptions",
            )
        },
        "/v1/client-metrics/subscriptions/{name}": {
            "get": op(
                "One CLIENT_METRICS subscription.",
                {"200": sub, "404": error("no such subscription")},
                operationId="getClientMetricsSubscription",
                parameters=[name_param],
            ),
            "put": op(
                "Create or replace a CLIENT_METRICS subscription (the same set as "
                "IncrementalAlterConfigs on resource type 16).",
                {"200": sub, "400": error("a bad body, or a subscription Kafka refuses")},
                operationId="putClientMetricsSubscription",
                parameters=[name_param],
                requestBody={
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": _ref("ClientMetricsSubscriptionChange")}
                        }
                    },
                },
            ),
            "delete": op(
                "Remove a CLIENT_METRICS subscription.",
                {
                    "200": body("ClientMetricsSubscription", "the subscription removed"),
                    "404": error("no such subscription"),
                },
                operationId="deleteClientMetricsSubscription",
                parameters=[name_param],
            ),
        },
    }
