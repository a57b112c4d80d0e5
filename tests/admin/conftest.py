"""Fixtures for the admin API: a real broker (port 0) with its admin server, real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..support.brokers import BrokerThread

ADMIN = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "control.plane.listener.name": "CONTROLLER",
    "admin.listeners": "http://127.0.0.1:0",
}
TOKEN = "s3cret-admin-token"


@pytest.fixture
def admin_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker with a data and a control-plane listener and an admin API (no token)."""
    b = BrokerThread(tmp_path / "data", ADMIN).start()
    yield b
    b.stop()


@pytest.fixture
def http(admin_broker: BrokerThread) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=admin_broker.admin_url, timeout=10) as client:
        yield client


def error_code(response: httpx.Response) -> str:
    """The slug of a JSON error answer (and a check of the error shape)."""
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["message"]
    return body["error"]["code"]
