"""Reading and checking what a client sends: JSON bodies and their fields.

Owns: ``parse_json_object`` (a body that must be a JSON object: malformed JSON, NaN or
Infinity, or another JSON type is a 400), and the strict field checks the routes share
(``pool_size``: an integer, not a boolean or a float, within the pool limits;
``quota_value``: a positive finite number or ``null``; ``setting_text``: a JSON value as
configuration text), and ``describe`` (a value as a message names it). Each check raises
``ApiError`` with a message naming the field. Pure functions; no broker access.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ApiError
from .view import MAX_POOL_SIZE, MIN_POOL_SIZE


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json_object(data: bytes, allowed: Iterable[str] | None = None) -> dict[str, Any]:
    """The body as a JSON object; 400 if it is anything else or has keys not ``allowed``."""
    if not data.strip():
        raise ApiError(400, "malformed-json", "the request needs a JSON object body")
    try:
        body = json.loads(data, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "malformed-json", f"the body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "malformed-json", "the body must be a JSON object")
    if allowed is not None:
        unknown = sorted(set(body) - set(allowed))
        if unknown:
            raise ApiError(
                400,
                "unknown-field",
                f"unknown field(s) {', '.join(map(repr, unknown))}; "
                f"expected {', '.join(map(repr, sorted(allowed)))}",
            )
    return body


def pool_size(body: Mapping[str, Any]) -> int:
    """``body["size"]``: an integer (booleans and floats are not) in 1..256."""
    if "size" not in body:
        raise ApiError(400, "missing-field", "the body needs a 'size' field")
    size = body["size"]
    if type(size) is not int:
        raise ApiError(
            400,
            "invalid-size",
            f"size must be an integer, not {describe(size)}",
        )
    if not MIN_POOL_SIZE <= size <= MAX_POOL_SIZE:
        raise ApiError(
            400,
            "invalid-size",
            f"size must be between {MIN_POOL_SIZE} and {MAX_POOL_SIZE}, not {size}",
        )
    return size


def quota_value(key: str, value: Any) -> float | None:
    """A quota value: a positive finite number, or ``None`` (remove it)."""
    if value is None:
        return None
    if type(value) not in (int, float):
        raise ApiError(
            400, "invalid-quota", f"{key} must be a positive number, not {describe(value)}"
        )
    if not math.isfinite(value) or value <= 0:
        raise ApiError(400, "invalid-quota", f"{key} must be a positive number, not {value}")
    return value


def setting_text(key: str, value: Any) -> str | None:
    """A JSON value as configuration text: strings as they are, numbers and booleans as
    written in server.properties, lists joined by commas, ``null`` reverts the key."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise ApiError(
        400,
        "invalid-config",
        f"{key}: a setting is a string, number, boolean, list of strings or null, "
        f"not {describe(value)}",
    )


def boolean(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if not isinstance(value, bool):
        raise ApiError(400, "invalid-field", f"{key} must be true or false, not {describe(value)}")
    return value


def describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if value is None:
        return "null"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(text)}"
    return f"a JSON {'array' if isinstance(value, list) else 'object'}"
