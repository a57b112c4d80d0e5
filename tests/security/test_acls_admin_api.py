"""The admin API's /v1/acls: bad input is a 4xx naming the problem and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trio_broker.server.config.broker_config import BrokerConfig, ConfigError

from ..admin.conftest import error_code
from ..support.brokers import BrokerThread


@pytest.fixture
def http(tmp_path: Path) -> Iterator[httpx.Client]:
    b = BrokerThread(tmp_path / "data", {"admin.listeners": "http://127.0.0.1:0"}).start()
    try:
        with httpx.Client(base_url=b.admin_url, timeout=10) as client:
            yield client
    finally:
        b.stop()


ALICE_READS = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "principal": "User:alice",
    "operation": "READ",
    "permission_type": "ALLOW",
}


def test_a_batch_with_one_bad_binding_stores_none(http: httpx.Client) -> None:
    bad = {**ALICE_READS, "principal": "alice"}  # not Type:name
    r = http.post("/v1/acls", json={"acls": [ALICE_READS, bad]})
    assert r.status_code == 400 and error_code(r) == "invalid-acl"
    assert "acls[1]" in r.json()["error"]["message"]
    assert http.get("/v1/acls").json() == {"acls": []}

    r = http.post("/v1/acls", json={"acls": [ALICE_READS]})
    assert r.status_code == 201
    assert r.json()["acls"] == [{**ALICE_READS, "pattern_type": "LITERAL", "host": "*"}]


@pytest.mark.parametrize(
    ("method", "url", "body", "code"),
    [
        ("POST", "/v1/acls", {"acls": []}, "missing-field"),
        ("POST", "/v1/acls", {"acls": [{**ALICE_READS, "operation": "JUMP"}]}, "invalid-acl"),
        ("POST", "/v1/acls", {"acls": [{**ALICE_READS, "colour": "red"}]}, "unknown-field"),
        (
            "POST",
            "/v1/acls",
            {"acls": [{**ALICE_READS, "resource_type": "CLUSTER"}]},
            "invalid-acl",
        ),
        ("GET", "/v1/acls?resource_type=TABLE", None, "invalid-filter"),
        ("GET", "/v1/acls?topic=orders", None, "unknown-parameter"),
        ("DELETE", "/v1/acls", None, "missing-filter"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(
    http: httpx.Client, method: str, url: str, body: object, code: str
) -> None:
    http.post("/v1/acls", json={"acls": [ALICE_READS]})
    r = http.request(method, url, json=body)
    assert r.status_code == 400 and error_code(r) == code
    assert len(http.get("/v1/acls").json()["acls"]) == 1  # nothing changed


def test_delete_takes_what_the_filter_matches(http: httpx.Client) -> None:
    bob = {**ALICE_READS, "principal": "User:bob", "pattern_type": "PREFIXED"}
    http.post("/v1/acls", json={"acls": [ALICE_READS, bob]})
    r = http.delete("/v1/acls", params={"principal": "User:bob"})
    assert r.status_code == 200 and [a["principal"] for a in r.json()["acls"]] == ["User:bob"]
    assert [a["principal"] for a in http.get("/v1/acls").json()["acls"]] == ["User:alice"]
    assert http.delete("/v1/acls", params={"resource_type": "ANY"}).status_code == 200
    assert http.get("/v1/acls").json() == {"acls": []}


def test_an_unknown_authorizer_stops_start_up_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"authorizer\.class\.name=SimpleAclAuthorizer"):
        BrokerConfig({"authorizer.class.name": "SimpleAclAuthorizer"})
    for name in ("", "acl", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"):
        BrokerConfig({"authorizer.class.name": name})
