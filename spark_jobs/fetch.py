"""One ``GET /v1/metrics`` from a broker's admin API, checked to be a version 1 snapshot.

Owns: ``fetch_snapshot`` (returns the snapshot and its compact one-line JSON, or raises
``FetchError`` saying why: unreachable, an HTTP error, not JSON, not a snapshot),
``fetch_client_metrics`` (``GET /v1/client-metrics``: the clients' KIP-714 telemetry, or
None from a broker without it, a 404), ``fetch_cluster`` (``GET /v1/cluster``: every live
broker's id and admin API URL, None where the broker names none), ``token_from_env``
(``TRIO_BROKER_ADMIN_TOKEN``) and ``is_restart``. Used by the scraper and by the
streaming data source, which Spark ships to its Python workers by value: so it imports the
standard library only.
Must not: retry or sleep (the callers decide how to back off).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

SCHEMA_ID = "trio-broker.metrics/1"
CLIENTS_SCHEMA_ID = "trio-broker.client-metrics/1"  # the scraper's line, not the broker's
TOKEN_ENV = "TRIO_BROKER_ADMIN_TOKEN"
REQUIRED = ("broker_id", "seq", "ts", "uptime_s")


class FetchError(Exception):
    """No snapshot this time; ``str()`` says why in one line."""


def token_from_env() -> str | None:
    return os.environ.get(TOKEN_ENV) or None


def metrics_url(admin: str) -> str:
    return admin.rstrip("/") + "/v1/metrics"


def _get_json(url: str, token: str | None, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        raise FetchError(f"HTTP {exc.code} from {url}") from None
    except (OSError, ValueError) as exc:  # URLError, refused, reset, timeout, bad URL
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"{url}: {reason}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise FetchError(f"{url}: the answer is not JSON") from None


def fetch_cluster(
    admin: str, *, token: str | None = None, timeout: float = 10.0
) -> dict[int, str | None]:
    """Every live broker the broker at ``admin`` knows (``GET /v1/cluster``): its id and its
    admin API URL (None where it names none)."""
    url = admin.rstrip("/") + "/v1/cluster"
    doc = _get_json(url, token, timeout)
    brokers = doc.get("brokers") if isinstance(doc, dict) else None
    if not isinstance(brokers, list):
        raise FetchError(f"{url}: not a cluster description (no brokers list)")
    out: dict[int, str | None] = {}
    for b in brokers:
        if isinstance(b, dict) and isinstance(b.get("id"), int):
            admin_url = b.get("admin")
            out[b["id"]] = admin_url if isinstance(admin_url, str) and admin_url else None
    return out


def fetch_client_metrics(
    admin: str, *, token: str | None = None, timeout: float = 10.0
) -> list[dict[str, Any]] | None:
    """The client instances the broker at ``admin`` keeps, with their latest pushed metrics
    (``GET /v1/client-metrics``); None if the broker has no such route (HTTP 404)."""
    url = admin.rstrip("/") + "/v1/client-metrics"
    try:
        doc = _get_json(url, token, timeout)
    except FetchError as exc:
        if str(exc).startswith("HTTP 404 "):
            return None
        raise
    clients = doc.get("clients") if isinstance(doc, dict) else None
    if not isinstance(clients, list) or not all(isinstance(c, dict) for c in clients):
        raise FetchError(f"{url}: not a client-metrics answer (no clients list)")
    return clients


def fetch_snapshot(
    admin: str, *, token: str | None = None, timeout: float = 10.0
) -> tuple[dict[str, Any], bytes]:
    """The current snapshot of the broker at ``admin`` (``http://host:port``) and that
    snapshot as one line of compact JSON."""
    snapshot = _get_json(metrics_url(admin), token, timeout)
    if not isinstance(snapshot, dict) or snapshot.get("schema") != SCHEMA_ID:
        got = snapshot.get("schema") if isinstance(snapshot, dict) else type(snapshot).__name__
        raise FetchError(f"{metrics_url(admin)}: not a {SCHEMA_ID} snapshot ({got!r})")
    missing = [k for k in REQUIRED if k not in snapshot]
    if missing:
        raise FetchError(f"{metrics_url(admin)}: snapshot without {', '.join(missing)}")
    return snapshot, json.dumps(snapshot, separators=(",", ":")).encode()


def is_restart(previous: dict[str, Any] | None, current: dict[str, Any]) -> bool:
    """True if ``current`` comes from a later run of the broker than ``previous``: its
    uptime is smaller, or its ``seq`` did not grow (after a long gap, a broker that
    restarted may already be up for longer than it was before)."""
    if previous is None:
        return False
    return float(current["uptime_s"]) < float(previous["uptime_s"]) or int(current["seq"]) <= int(
        previous["seq"]
    )
