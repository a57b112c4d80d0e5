"""The admin API's ACL routes: ``GET``, ``POST`` and ``DELETE`` on ``/v1/acls``.

Owns: ``register_acl_routes(app, view)`` and the translation between JSON and
``AclRecord``s. ``GET /v1/acls`` lists the bindings a filter matches and ``DELETE
/v1/acls`` deletes them; both take the filter as query parameters (``resource_type``,
``resource_name``, ``pattern_type``, ``principal``, ``host``, ``operation``,
``permission_type``; an absent one matches everything, as Kafka's ANY / null), and
``DELETE`` needs at least one of them, so that deleting every ACL is always said out loud
(``?resource_type=ANY``). ``POST /v1/acls`` stores ``{"acls": [binding, ...]}``, all of
them or, if one is refused, none. Kafka's names are used throughout (``TOPIC``,
``PREFIXED``, ``READ``, ``ALLOW`` ...), upper case. The store is the one Kafka's ACL APIs
use, through ``AclView``.
Must not: import anything of the broker but ``admin.acl_view``.
"""

from __future__ import annotations

from typing import Any

from quart import Response, request
from quart_trio import QuartTrio

from .acl_view import (
    FILTER_PATTERN_TYPES,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSION_TYPES,
    RESOURCE_TYPES,
    AclRecord,
    AclView,
)
from .errors import ApiError, json_response
from .inputs import parse_json_object

FILTER_PARAMETERS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)
BINDING_FIELDS = FILTER_PARAMETERS
BINDING_DEFAULTS = {"pattern_type": "LITERAL", "host": "*"}
MAX_BINDINGS = 1000

_CHOICES = {
    "resource_type": RESOURCE_TYPES,
    "pattern_type": PATTERN_TYPES,
    "operation": OPERATIONS,
    "permission_type": PERMISSION_TYPES,
}
_FILTER_CHOICES = {
    "resource_type": ("ANY", *RESOURCE_TYPES),
    "pattern_type": FILTER_PATTERN_TYPES,
    "operation": ("ANY", *OPERATIONS),
    "permission_type": ("ANY", *PERMISSION_TYPES),
}


def register_acl_routes(app: QuartTrio, view: AclView) -> None:
    @app.get("/v1/acls")
    async def list_acls() -> Response:
        found = view.acls(_filter_from_query(require_one=False))
        return json_response({"acls": [_json(r) for r in found]})

    @app.post("/v1/acls")
    async def create_acls() -> Response:
        data = await request.get_data(cache=False)
        assert isinstance(data, bytes)
        body = parse_json_object(data, ("acls",))
        items = body.get("acls")
        if not isinstance(items, list) or not items:
            raise ApiError(400, "missing-field", "the body needs 'acls': a non-empty list")
        if len(items) > MAX_BINDINGS:
            raise ApiError(400, "too-many-acls", f"at most {MAX_BINDINGS} ACLs per request")
        bindings = [_binding(item, i) for i, item in enumerate(items)]
        created = await view.create_acls(bindings)
        return json_response({"acls": [_json(r) for r in created]}, 201)

    @app.delete("/v1/acls")
    async def delete_acls() -> Response:
        deleted = await view.delete_acls(_filter_from_query(require_one=True))
        return json_response({"acls": [_json(r) for r in deleted]})


def _json(record: AclRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in BINDING_FIELDS}


def _filter_from_query(*, require_one: bool) -> AclRecord:
    unknown = sorted(k for k in request.args if k not in FILTER_PARAMETERS)
    if unknown:
        raise ApiError(
            400,
            "unknown-parameter",
            f"unknown query parameter {unknown[0]!r}; known: {', '.join(FILTER_PARAMETERS)}",
        )
    if require_one and not request.args:
        raise ApiError(
            400,
            "missing-filter",
            "name at least one filter parameter (resource_type=ANY deletes every ACL)",
        )
    args = {k: request.args[k] for k in FILTER_PARAMETERS if k in request.args}
    for key, choices in _FILTER_CHOICES.items():
        value = args.get(key)
        if value is not None and value not in choices:
            raise ApiError(400, "invalid-filter", f"{key} must be one of {', '.join(choices)}")
    return AclRecord(
        resource_type=args.get("resource_type", "ANY"),
        resource_name=args.get("resource_name"),
        pattern_type=args.get("pattern_type", "ANY"),
        principal=args.get("principal"),
        host=args.get("host"),
        operation=args.get("operation", "ANY"),
        permission_type=args.get("permission_type", "ANY"),
    )


def _binding(item: Any, index: int) -> AclRecord:
    where = f"acls[{index}]"
    if not isinstance(item, dict):
        raise ApiError(400, "invalid-acl", f"{where} must be a JSON object")
    unknown = sorted(set(item) - set(BINDING_FIELDS))
    if unknown:
        raise ApiError(
            400,
            "unknown-field",
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(BINDING_FIELDS)}",
        )
    values: dict[str, str] = {}
    for name in BINDING_FIELDS:
        value = item.get(name, BINDING_DEFAULTS.get(name))
        if value is None:
            raise ApiError(400, "missing-field", f"{where} needs {name!r}")
        if not isinstance(value, str) or not value:
            raise ApiError(400, "invalid-acl", f"{where}.{name} must be a non-empty string")
        choices = _CHOICES.get(name)
        if choices is not None and value not in choices:
            raise ApiError(
                400, "invalid-acl", f"{where}.{name} must be one of {', '.join(choices)}"
            )
        values[name] = value
    return AclRecord(**values)
