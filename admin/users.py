"""The admin API's SCRAM users: ``/v1/users`` and ``/v1/users/{name}``.

Owns: ``register_user_routes`` (the routes, added to the app by ``create_app``) and
``user_paths``/``user_schemas`` (their part of the OpenAPI document). ``GET /v1/users``
lists user names with their mechanisms and iteration counts, never a salt or key;
``PUT /v1/users/{name}`` sets one credential from ``{"mechanism", "password",
"iterations"}`` (the broker salts and hashes it on a worker thread and keeps no password);
``DELETE /v1/users/{name}`` removes all of a user's credentials, or one with
``?mechanism=``. The same store as SASL authentication and Kafka's
Describe/AlterUserScramCredentials.
Must not: import anything of the broker but ``admin.view``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from .errors import ApiError, json_response
from .inputs import parse_json_object
from .view import AdminView, ScramUser

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
_FIELDS = ("mechanism", "password", "iterations")


def register_user_routes(app: QuartTrio, view: AdminView) -> None:
    @app.get("/v1/users")
    async def list_users() -> Response:
        _query(())
        return json_response({"users": [_user_json(u) for u in view.scram_users()]})

    @app.put("/v1/users/<path:name>")
    async def put_user(name: str) -> Response:
        _query(())
        data = await request.get_data(cache=False)
        assert isinstance(data, bytes)
        body = parse_json_object(data, _FIELDS)
        mechanism = _mechanism(body.get("mechanism"), "mechanism")
        password = body.get("password")
        if not isinstance(password, str) or not password:
            raise ApiError(400, "invalid-password", "password must be a non-empty string")
        iterations = body.get("iterations", MIN_ITERATIONS)
        if type(iterations) is not int or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ApiError(
                400,
                "invalid-iterations",
                f"iterations must be an integer from {MIN_ITERATIONS} to {MAX_ITERATIONS}",
            )
        user = await view.set_scram_credential(name, mechanism, password, iterations)
        return json_response(_user_json(user))

    @app.delete("/v1/users/<path:name>")
    async def delete_user(name: str) -> Response:
        args = _query(("mechanism",))
        mechanism = _mechanism(args["mechanism"], "mechanism") if "mechanism" in args else None
        removed = await view.delete_scram_user(name, mechanism)
        return json_response(_user_json(removed))


def _mechanism(value: Any, field: str) -> str:
    if value not in MECHANISMS:
        raise ApiError(400, "invalid-mechanism", f"{field} must be one of {', '.join(MECHANISMS)}")
    return str(value)


def _query(allowed: Sequence[str]) -> dict[str, str]:
    unknown = sorted(k for k in request.args if k not in allowed)
    if unknown:
        known = ", ".join(allowed) or "none"
        raise ApiError(
            400, "unknown-parameter", f"unknown query parameter {unknown[0]!r}; known: {known}"
        )
    return {k: request.args[k] for k in allowed if k in request.args}


def _user_json(user: ScramUser) -> dict[str, Any]:
    return {
        "name": user.name,
        "credentials": [
            {"mechanism": m, "iterations": i} for m, i in sorted(user.credentials.items())
        ],
    }


# ---------------------------------------------------------------- OpenAPI


def user_schemas() -> dict[str, Any]:
    credential = {
        "type": "object",
        "required": ["mechanism", "iterations"],
        "properties": {
            "mechanism": {"enum": list(MECHANISMS)},
            "iterations": {"type": "integer", "minimum": MIN_ITERATIONS},
        },
        "additionalProperties": False,
    }
    user = {
        "type": "object",
        "required": ["name", "credentials"],
        "properties": {
            "name": {"type": "string"},
            "credentials": {"type": "array", "items": credential},
        },
        "additionalProperties": False,
    }
    return {
        "ScramUser": user,
        "ScramUsers": {
            "type": "object",
            "required": ["users"],
            "properties": {"users": {"type": "array", "items": {"$ref": _ref("ScramUser")}}},
            "additionalProperties": False,
        },
        "ScramCredentialChange": {
            "type": "object",
            "required": ["mechanism", "password"],
            "properties": {
                "mechanism": {"enum": list(MECHANISMS)},
                "password": {"type": "string", "minLength": 1},
                "iterations": {
                    "type": "integer",
                    "minimum": MIN_ITERATIONS,
                    "maximum": MAX_ITERATIONS,
                    "default": MIN_ITERATIONS,
                },
            },
            "additionalProperties": False,
        },
    }


def _ref(name: str) -> str:
    return f"#/components/schemas/{name}"


def user_paths(op: Callable[..., dict[str, Any]], bad: dict[str, Any]) -> dict[str, Any]:
    def body(name: str, description: str) -> dict[str, Any]:
        return {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": _ref(name)}}},
        }

    error = body("Error", "not found")
    name_param = {
        "name": "name",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
        "description": "a SCRAM user name",
    }
    return {
        "/v1/users": {
            "get": op(
                "Every SCRAM user with its mechanisms and iteration counts (never secrets).",
                {"200": body("ScramUsers", "the users"), **bad},
                operationId="listUsers",
            )
        },
        "/v1/users/{name}": {
            "put": op(
                "Set a user's SCRAM credential for one mechanism (stored salted and hashed).",
                {"200": body("ScramUser", "the user after the change"), **bad},
                operationId="putUser",
                parameters=[name_param],
                requestBody={
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": _ref("ScramCredentialChange")}}
                    },
                },
            ),
            "delete": op(
                "Remove a user's SCRAM credentials (all, or one mechanism's).",
                {
                    "200": body("ScramUser", "the credentials removed"),
                    **bad,
                    "404": {**error, "description": "no such user or credential"},
                },
                operationId="deleteUser",
                parameters=[
                    name_param,
                    {
                        "name": "mechanism",
                        "in": "query",
                        "required": False,
                        "schema": {"enum": list(MECHANISMS)},
                        "description": "remove only this mechanism's credential",
                    },
                ],
            ),
        },
    }
