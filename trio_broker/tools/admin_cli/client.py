"""The admin API over HTTP, for ``trio-broker-admin``: one call, one JSON answer.

Owns: ``AdminClient`` (a base URL, an optional bearer token, a timeout; ``call`` sends one
request and returns the decoded answer), ``AdminError`` (what went wrong, in words a user
can act on: the server's own error message, or why the server could not be reached) and
``admin_url`` (which admin API to talk to). The standard library's ``urllib`` is enough
for one short JSON request at a time and keeps the tool free of dependencies.
Must not: import anything of the broker, or an event loop: the tool speaks only HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_ADMIN_URL = "http://127.0.0.1:9644"  # the broker's default admin.listeners


class AdminError(Exception):
    """A failed call: ``message`` for the user; ``status`` and ``code`` when the server
    answered (its HTTP status and error slug), ``None`` when it could not be reached."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self) -> str:
        if self.status is None:
            return self.message
        return f"{self.message} (HTTP {self.status}{', ' + self.code if self.code else ''})"


def admin_url(given: str | None, log_dir: str | Path | None) -> str:
    """The admin API's base URL: ``given``, else the ``"admin"`` of ``listeners.json`` in
    ``log_dir`` (the broker's first log dir), else the broker's default address."""
    if given:
        url = given if "://" in given else f"http://{given}"
        return url.rstrip("/")
    if log_dir is None:
        return DEFAULT_ADMIN_URL
    path = Path(log_dir) / "listeners.json"
    try:
        written = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AdminError(
            f"no {path}: is a broker running with its first log.dirs entry there?"
        ) from None
    except (OSError, ValueError) as exc:
        raise AdminError(f"cannot read {path}: {exc}") from None
    found = written.get("admin") if isinstance(written, dict) else None
    if not isinstance(found, str) or not found:
        raise AdminError(f"the broker of {path} serves no admin API (admin.listeners is empty)")
    return found.rstrip("/")


def path_of(*segments: str) -> str:
    """A URL path from segments, each quoted whole (a client id may hold ``/`` or ``?``)."""
    return "/" + "/".join(urllib.parse.quote(s, safe="") for s in segments)


class AdminClient:
    """Calls to one broker's admin API (``base_url``), with ``token`` as bearer if given."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | None] | None = None,
        body: Any = None,
        answers: Sequence[int] = (),
    ) -> Any:
        """Send one request; the decoded JSON answer (text if the answer is not JSON).

        A status of 400 or more raises ``AdminError`` with the server's message, unless
        it is one of ``answers`` (e.g. 503 from ``/v1/status/ready``, whose body says
        why). ``None`` values in ``query`` are left out.
        """
        url = self.base_url + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _decode(response.read(), response.headers.get_content_type())
        except urllib.error.HTTPError as exc:
            payload = exc.read()
            if exc.code in answers:
                return _decode(payload, exc.headers.get_content_type())
            raise _server_error(method, path, exc.code, exc.reason, payload) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise AdminError(
                    f"no answer from {self.base_url} within {self.timeout:g} s"
                ) from None
            raise AdminError(
                f"cannot reach the admin API at {self.base_url}: {exc.reason}"
            ) from None
        except TimeoutError:
            raise AdminError(f"no answer from {self.base_url} within {self.timeout:g} s") from None
        except (OSError, ValueError) as exc:  # a reset connection, a malformed URL ...
            raise AdminError(f"cannot talk to the admin API at {self.base_url}: {exc}") from None


def _decode(payload: bytes, content_type: str) -> Any:
    if content_type == "application/json":
        return json.loads(payload)
    return payload.decode("utf-8", "replace")


def _server_error(method: str, path: str, status: int, reason: str, payload: bytes) -> AdminError:
    """The server's ``{"error": {"code", "message"}}``, or the status line if it sent none."""
    try:
        error = json.loads(payload)["error"]
        return AdminError(str(error["message"]), status, str(error["code"]))
    except (ValueError, KeyError, TypeError):
        text = payload.decode("utf-8", "replace").strip()[:200]
        return AdminError(f"{method} {path}: {reason}{': ' + text if text else ''}", status)
