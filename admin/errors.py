"""Errors of the admin API, all answered as JSON.

Owns: ``ApiError`` (an HTTP status, a slug and a message), the one error body shape
``{"error": {"code": "<slug>", "message": "..."}}``, ``json_response`` and
``install_error_handlers``, which makes every failure answer in that shape: our own
``ApiError``s, the view's ``NotFound``/``Invalid``, the framework's HTTP errors (404, 405
with its ``Allow`` header, 413 ...) and, as a last resort, an unexpected exception (500,
logged with its traceback, the message kept generic).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from quart import Response
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from .view import Invalid, NotFound

log = logging.getLogger("trio_broker.admin")

JSON = "application/json"

_SLUGS = {
    400: "bad-request",
    401: "unauthorized",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    408: "request-timeout",
    411: "length-required",
    413: "payload-too-large",
    414: "uri-too-long",
    415: "unsupported-media-type",
    431: "request-header-fields-too-large",
    500: "internal-error",
    503: "unavailable",
}


class ApiError(Exception):
    """An answer other than success: ``status``, a stable ``code`` slug, a ``message``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":"), default=str),
        status=status,
        headers=headers,
        content_type=JSON,
    )


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    return json_response({"error": {"code": code, "message": message}}, status, headers)


def install_error_handlers(app: QuartTrio) -> None:
    @app.errorhandler(ApiError)
    async def _api_error(exc: ApiError) -> Response:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.errorhandler(NotFound)
    async def _not_found(exc: NotFound) -> Response:
        return error_response(404, exc.code, exc.message)

    @app.errorhandler(Invalid)
    async def _invalid(exc: Invalid) -> Response:
        return error_response(400, exc.code, exc.message)

    @app.errorhandler(HTTPException)
    async def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        headers: dict[str, str] = {}
        valid = getattr(exc, "valid_methods", None)
        if status == 405 and valid:
            headers["Allow"] = ", ".join(sorted(valid))
        message = exc.description or exc.name
        return error_response(status, _SLUGS.get(status, f"http-{status}"), message, headers)

    @app.errorhandler(Exception)
    async def _unexpected(exc: Exception) -> Response:
        log.exception("admin API request failed")
        return error_response(500, "internal-error", "internal error (see the broker's log)")
