"""The ``/v1/acls`` part of the admin API's OpenAPI document.

Owns: ``acl_schemas`` (the ``Acl``, ``Acls`` and ``AclCreation`` schemas) and
``acl_paths`` (the three operations of ``admin.acls``, with their query parameters), which
``admin.openapi`` merges into the document. When the ACL routes change, this changes with
them: the schemathesis test holds the two together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .acl_view import (
    FILTER_PATTERN_TYPES,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSION_TYPES,
    RESOURCE_TYPES,
)

_NAME = {"type": "string", "minLength": 1}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def acl_schemas() -> dict[str, Any]:
    binding = {
        "resource_type": {"enum": list(RESOURCE_TYPES)},
        "resource_name": {**_NAME, "description": "a name; LITERAL '*' is every name"},
        "pattern_type": {"enum": list(PATTERN_TYPES)},
        "principal": {
            "type": "string",
            "pattern": "^[^:]+:.+$",
            "description": "Type:name, e.g. User:alice; User:* is every user",
        },
        "host": {**_NAME, "description": "a client IP address, or * for any"},
        "operation": {"enum": list(OPERATIONS)},
        "permission_type": {"enum": list(PERMISSION_TYPES)},
    }
    return {
        "Acl": {
            "type": "object",
            "required": list(binding),
            "properties": binding,
            "additionalProperties": False,
        },
        "Acls": {
            "type": "object",
            "required": ["acls"],
            "properties": {"acls": {"type": "array", "items": _ref("Acl")}},
            "additionalProperties": False,
        },
        "AclCreation": {
            "type": "object",
            "required": ["acls"],
            "properties": {
                "acls": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 1000,
                    "items": {
                        "type": "object",
                        "description": "pattern_type defaults to LITERAL, host to *",
                        "required": [
                            "resource_type",
                            "resource_name",
                            "principal",
                            "operation",
                            "permission_type",
                        ],
                        "properties": binding,
                        "additionalProperties": False,
                    },
                }
            },
            "additionalProperties": False,
        },
    }


def acl_paths(
    op: Callable[..., dict[str, Any]], error: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """``op(summary, responses, **extra)`` and ``error(description)`` are the document's."""
    filters = [
        {"name": "resource_type", "in": "query", "schema": {"enum": ["ANY", *RESOURCE_TYPES]}},
        {"name": "resource_name", "in": "query", "schema": {"type": "string"}},
        {
            "name": "pattern_type",
            "in": "query",
            "schema": {"enum": list(FILTER_PATTERN_TYPES)},
            "description": "ANY (default): any pattern with exactly resource_name; MATCH: "
            "every ACL that applies to a resource named resource_name",
        },
        {"name": "principal", "in": "query", "schema": {"type": "string"}},
        {"name": "host", "in": "query", "schema": {"type": "string"}},
        {"name": "operation", "in": "query", "schema": {"enum": ["ANY", *OPERATIONS]}},
        {
            "name": "permission_type",
            "in": "query",
            "schema": {"enum": ["ANY", *PERMISSION_TYPES]},
        },
    ]
    return {
        "/v1/acls": {
            "get": op(
                "The ACLs a filter matches (no parameter: every ACL).",
                {
                    "200": _json(_ref("Acls"), "the matching ACLs"),
                    "400": error("an unknown parameter or value"),
                },
                operationId="listAcls",
                parameters=filters,
            ),
            "post": op(
                "Add ACLs: all of them, or none if one is refused.",
                {
                    "201": _json(_ref("Acls"), "the ACLs added"),
                    "400": error("an invalid ACL (named); nothing was added"),
                },
                operationId="createAcls",
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": _ref("AclCreation")}},
                },
            ),
            "delete": op(
                "Delete the ACLs a filter matches (at least one parameter; "
                "resource_type=ANY alone deletes every ACL).",
                {
                    "200": _json(_ref("Acls"), "the ACLs deleted"),
                    "400": error("no filter, or an unknown parameter or value"),
                },
                operationId="deleteAcls",
                parameters=filters,
            ),
        }
    }
