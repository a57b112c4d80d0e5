"""The bearer token: required everywhere but readiness and the OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..support.brokers import BrokerThread
from .conftest import ADMIN, TOKEN, error_code

PROTECTED = [
    ("GET", "/v1/broker", None),
    ("GET", "/v1/pools", None),
    ("PUT", "/v1/pools/io", {"size": 2}),
    ("PUT", "/v1/pools/network/PLAINTEXT", {"size": 1}),
    ("GET", "/v1/connections", None),
    ("GET", "/v1/quotas", None),
    ("PUT", "/v1/quotas/clients/app", {"producer_byte_rate": 100}),
    ("DELETE", "/v1/quotas/clients/app", None),
    ("GET", "/v1/metrics", None),
    ("GET", "/metrics", None),
    ("GET", "/v1/config", None),
    ("PUT", "/v1/config", {"settings": {"num.io.threads": 2}}),
    ("GET", "/v1/no-such-path", None),
]


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[httpx.Client]:
    b = BrokerThread(tmp_path / "data", {**ADMIN, "admin.token": TOKEN}).start()
    with httpx.Client(base_url=b.admin_url, timeout=10) as client:
        yield client
    b.stop()


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer", ""],
)
def test_every_protected_path_refuses_without_the_token(
    guarded: httpx.Client, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path, body in PROTECTED:
        r = guarded.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (method, path, r.text)
        assert error_code(r) == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")
    # ... and changed nothing
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert guarded.get("/v1/pools", headers=auth).json()["io"]["size"] == 4
    assert guarded.get("/v1/quotas", headers=auth).json() == {"quotas": []}


def test_the_token_opens_every_path(guarded: httpx.Client) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for method, path, body in PROTECTED:
        r = guarded.request(method, path, json=body, headers=auth)
        expected = 404 if path == "/v1/no-such-path" else 200
        assert r.status_code == expected, (method, path, r.text)
    r = guarded.get("/v1/config", headers={"Authorization": f"bearer {TOKEN}"})
    assert r.status_code == 200  # the scheme is case-insensitive
    assert r.json()["config"]["admin.token"] == "[hidden]"
    assert TOKEN not in r.text


def test_readiness_and_the_document_need_no_token(guarded: httpx.Client) -> None:
    r = guarded.get("/v1/status/ready")
    assert r.status_code == 200 and r.json() == {"ready": True}
    r = guarded.get("/v1/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["security"] == [{"bearer": []}]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["paths"]["/v1/status/ready"]["get"]["security"] == []
    assert "401" in doc["paths"]["/v1/pools"]["get"]["responses"]


def test_without_a_token_nothing_is_required(http: httpx.Client) -> None:
    assert http.get("/v1/pools").status_code == 200
    assert http.get("/v1/pools", headers={"Authorization": "Bearer anything"}).status_code == 200
