"""The admin API's fault injection for test suites: ``/v1/faults`` and ``/v1/faults/{id}``.

Owns: ``register_fault_routes`` (the routes, added to the app by ``create_app``) and
``fault_paths``/``fault_schemas`` (their part of the OpenAPI document). ``POST /v1/faults``
adds a rule (201 with the rule and its id), ``GET /v1/faults`` lists the rules with their
``matched`` and ``hits`` counts, ``DELETE /v1/faults`` removes them all (returning them,
counts included); ``GET``/``DELETE /v1/faults/{id}`` read or remove one. Every one answers
403 ``faults-disabled`` unless the broker runs with ``testing.faults.enable=true``: a
production broker has no fault hook in its request path at all. What a rule means is the
broker's (``trio_broker.server.handlers.fault_rules``); a refused rule is a 400 naming its field.
Must not: import anything of the broker but ``admin.view``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from .errors import ApiError, json_response
from .inputs import parse_json_object
from .view import AdminView, FaultControl

ACTIONS = ("error", "delay", "disconnect", "leader_unavailable", "throttle")
_FIELDS = (
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
_MAX_MS = 24 * 3600 * 1000
_INT32_MAX = 2**31 - 1


def register_fault_routes(app: QuartTrio, view: AdminView) -> None:
    def control() -> FaultControl:
        if request.args:
            name = sorted(request.args)[0]
            raise ApiError(400, "unknown-parameter", f"unknown query parameter {name!r}")
        faults = view.faults
        if faults is None:
            raise ApiError(
                403,
                "faults-disabled",
                "fault injection is off: start the broker with testing.faults.enable=true",
            )
        return faults

    @app.get("/v1/faults")
    async def list_faults() -> Response:
        return json_response({"rules": list(control().rules())})

    @app.post("/v1/faults")
    async def add_fault() -> Response:
        faults = control()
        data = await request.get_data(cache=False)
        assert isinstance(data, bytes)
        return json_response(faults.add(parse_json_object(data, _FIELDS)), 201)

    @app.delete("/v1/faults")
    async def clear_faults() -> Response:
        return json_response({"rules": list(control().clear())})

    @app.get("/v1/faults/<int:rule_id>")
    async def get_fault(rule_id: int) -> Response:
        return json_response(control().get(rule_id))

    @app.delete("/v1/faults/<int:rule_id>")
    async def delete_fault(rule_id: int) -> Response:
        return json_response(control().remove(rule_id))


# ---------------------------------------------------------------- OpenAPI


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable_int(lo: int, hi: int, description: str) -> dict[str, Any]:
    return {"type": ["integer", "null"], "minimum": lo, "maximum": hi, "description": description}


def fault_schemas() -> dict[str, Any]:
    api = {
        "description": "a Kafka API name (Produce, JoinGroup ...) or key; a list: any of them",
        "oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "integer", "minimum": 0},
            {
                "type": "array",
                "minItems": 1,
                "items": {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
            },
            {"type": "null"},
        ],
    }
    text = {"type": ["string", "null"], "minLength": 1}
    rule_in: dict[str, Any] = {
        "type": "object",
        "required": ["action"],
        "properties": {
            "action": {"enum": list(ACTIONS)},
            "api": api,
            "topic": {**text, "description": "only requests naming this topic"},
            "partition": _nullable_int(0, _INT32_MAX, "only requests naming this partition"),
            "client_id": {**text, "description": "only requests of this client id"},
            "error_code": {
                "description": "error, required: a Kafka error code or its name",
                "oneOf": [{"type": "integer"}, {"type": "string", "minLength": 1}],
            },
            "delay_ms": _nullable_int(1, _MAX_MS, "delay, required: how long"),
            "after": _nullable_int(0, _INT32_MAX, "disconnect: requests let through first"),
            "throttle_ms": _nullable_int(1, _MAX_MS, "throttle, required: how long"),
            "count": _nullable_int(1, _INT32_MAX, "requests it acts on (null: no limit)"),
            "duration_ms": _nullable_int(
                1, _MAX_MS, "it ends after this time (leader_unavailable: required)"
            ),
        },
        "additionalProperties": False,
    }
    nullable_int = {"type": ["integer", "null"]}
    rule_out: dict[str, Any] = {
        "type": "object",
        "required": [
            "id",
            "action",
            "api",
            "topic",
            "partition",
            "client_id",
            "error_code",
            "error",
            "delay_ms",
            "after",
            "throttle_ms",
            "count",
            "duration_ms",
            "remaining_ms",
            "matched",
            "hits",
            "active",
        ],
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "action": {"enum": list(ACTIONS)},
            "api": {"type": ["array", "null"], "items": {"type": "string"}},
            "topic": {"type": ["string", "null"]},
            "partition": nullable_int,
            "client_id": {"type": ["string", "null"]},
            "error_code": nullable_int,
            "error": {"type": ["string", "null"]},
            "delay_ms": nullable_int,
            "after": nullable_int,
            "throttle_ms": nullable_int,
            "count": nullable_int,
            "duration_ms": nullable_int,
            "remaining_ms": nullable_int,
            "matched": {"type": "integer", "minimum": 0, "description": "requests it matched"},
            "hits": {"type": "integer", "minimum": 0, "description": "requests it acted on"},
            "active": {"type": "boolean"},
        },
        "additionalProperties": False,
    }
    return {
        "FaultRuleSpec": rule_in,
        "FaultRule": rule_out,
        "FaultRules": {
            "type": "object",
            "required": ["rules"],
            "properties": {"rules": {"type": "array", "items": _ref("FaultRule")}},
            "additionalProperties": False,
        },
    }


def fault_paths(
    op: Callable[..., dict[str, Any]], error: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    def body(name: str, description: str) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}

    disabled = {"403": error("fault injection is off (testing.faults.enable=false)")}
    bad_query = {"400": error("an unknown query parameter")}
    id_param = {
        "name": "rule_id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
        "description": "a rule's id",
    }
    missing = {"404": error("no rule with that id")}
    return {
        "/v1/faults": {
            "get": op(
                "The fault rules with their counts (testing.faults.enable only).",
                {"200": body("FaultRules", "the rules"), **bad_query, **disabled},
                operationId="listFaults",
            ),
            "post": op(
                "Add a fault rule: error, delay, disconnect, leader_unavailable or throttle.",
                {
                    "201": body("FaultRule", "the rule added"),
                    "400": error("a bad rule (the field is named); nothing was added"),
                    **disabled,
                },
                operationId="addFault",
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("FaultRuleSpec")}},
                },
            ),
            "delete": op(
                "Remove every fault rule; they are returned with their counts.",
                {"200": body("FaultRules", "the rules removed"), **bad_query, **disabled},
                operationId="clearFaults",
            ),
        },
        "/v1/faults/{rule_id}": {
            "get": op(
                "One fault rule with its counts.",
                {"200": body("FaultRule", "the rule"), **bad_query, **disabled, **missing},
                operationId="getFault",
                parameters=[id_param],
            ),
            "delete": op(
                "Remove one fault rule; it is returned with its counts.",
                {"200": body("FaultRule", "the rule removed"), **bad_query, **disabled, **missing},
                operationId="deleteFault",
                parameters=[id_param],
            ),
        },
    }
