"""Every admin endpoint over real HTTP against a real broker: answers and refusals."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest

from trio_broker import __version__
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient
from .conftest import error_code

CONNECTION_FIELDS = {
    "id",
    "listener",
    "processor",
    "remote",
    "principal",
    "client_id",
    "client_software_name",
    "client_software_version",
    "mute_state",
    "throttle_remaining_ms",
    "idle_ms",
    "requests",
    "bytes_in",
    "bytes_out",
}


def pools(http: httpx.Client) -> dict[str, Any]:
    r = http.get("/v1/pools")
    assert r.status_code == 200
    return r.json()


def config(http: httpx.Client) -> dict[str, Any]:
    r = http.get("/v1/config")
    assert r.status_code == 200
    return r.json()


# ----------------------------------------------------------------------- broker


def test_broker_describes_itself(admin_broker: BrokerThread, http: httpx.Client) -> None:
    r = http.get("/v1/broker")
    assert r.status_code == 200
    body = r.json()
    broker = admin_broker.broker
    assert broker is not None
    assert body["broker_id"] == 0
    assert body["cluster_id"] == broker.cluster_id
    assert body["version"] == __version__
    assert 0 <= body["uptime_s"] < 60
    assert body["started_at"].endswith("Z")
    assert body["admin"] == admin_broker.admin_url
    bound = broker.bound_listeners()
    assert body["listeners"] == [
        {
            "name": "PLAINTEXT",
            "host": bound["PLAINTEXT"][0],
            "port": bound["PLAINTEXT"][1],
            "security_protocol": "PLAINTEXT",
            "plane": "data",
        },
        {
            "name": "CONTROLLER",
            "host": bound["CONTROLLER"][0],
            "port": bound["CONTROLLER"][1],
            "security_protocol": "PLAINTEXT",
            "plane": "control",
        },
    ]
    assert body["pools"] == {"io": 4, "network": {"PLAINTEXT": 2, "CONTROLLER": 1}}


def test_unknown_paths_and_methods_answer_json(http: httpx.Client) -> None:
    r = http.get("/v1/nothing-here")
    assert r.status_code == 404 and error_code(r) == "not-found"
    r = http.post("/v1/pools")
    assert r.status_code == 405 and error_code(r) == "method-not-allowed"
    assert "GET" in r.headers["allow"]
    r = http.delete("/v1/config")
    assert r.status_code == 405 and error_code(r) == "method-not-allowed"
    assert {"GET", "PUT"} <= {m.strip() for m in r.headers["allow"].split(",")}


def test_an_answer_before_the_body_was_read_does_not_stall_the_connection(
    admin_broker: BrokerThread,
) -> None:
    # A 405 (or 401, 404) is decided before the body is read; the next request on the
    # same keep-alive connection must still be answered at once.
    with httpx.Client(base_url=admin_broker.admin_url, timeout=2) as http:
        for _ in range(20):
            assert http.post("/v1/pools", json={"size": 3}).status_code == 405
            assert http.put("/v1/nowhere", json={"size": 3}).status_code == 404
            assert http.get("/v1/pools").status_code == 200


# ------------------------------------------------------------------------ pools


def test_pools_show_sizes_queues_and_idle_ratios(http: httpx.Client) -> None:
    body = pools(http)
    assert set(body) == {"io", "network", "request_queue"}
    assert body["io"]["size"] == 4 and body["io"]["busy"] == 0
    assert 0 <= body["io"]["idle_ratio"] <= 1
    assert set(body["network"]) == {"PLAINTEXT", "CONTROLLER"}
    assert body["network"]["PLAINTEXT"]["size"] == 2
    assert body["network"]["PLAINTEXT"]["plane"] == "data"
    assert body["network"]["CONTROLLER"] == {
        "plane": "control",
        "size": 1,
        "idle_ratio": body["network"]["CONTROLLER"]["idle_ratio"],
        "connections": 0,
    }
    for p in body["network"].values():
        assert 0 <= p["idle_ratio"] <= 1
    assert body["request_queue"] == {
        "data": {"size": 0, "capacity": 500},
        "control": {"size": 0, "capacity": 20},
    }


def test_idle_ratios_come_from_the_metrics_snapshot_when_it_has_them(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    broker = admin_broker.broker
    assert broker is not None
    snapshot = {
        "pools": {
            "io": {"idle_ratio": 0.25},
            "network": {"PLAINTEXT": {"idle_ratio": 0.5}, "CONTROLLER": {"idle_ratio": 7}},
        }
    }
    admin_broker.call(setattr, broker, "metrics_snapshot", lambda: snapshot)
    body = pools(http)
    assert body["io"]["idle_ratio"] == 0.25
    assert body["network"]["PLAINTEXT"]["idle_ratio"] == 0.5
    assert body["network"]["CONTROLLER"]["idle_ratio"] == 1.0  # clamped into 0..1


def test_resize_io_pool(admin_broker: BrokerThread, http: httpx.Client) -> None:
    broker = admin_broker.broker
    assert broker is not None
    r = http.put("/v1/pools/io", json={"size": 2})
    assert r.status_code == 200
    assert r.json()["io"]["size"] == 2
    assert r.json() == {**pools(http), "io": r.json()["io"]}
    assert pools(http)["io"]["size"] == 2
    assert admin_broker.call(lambda: broker.data_pool.size) == 4  # two handlers a thread
    assert admin_broker.call(lambda: broker.io_pool.size) == 2
    cfg = config(http)
    assert cfg["config"]["num.io.threads"] == "2"
    assert cfg["dynamic_settings"] == {"num.io.threads": "2"}
    assert cfg["sources"]["num.io.threads"] == "dynamic"
    r = http.put("/v1/pools/io", json={"size": 256})
    assert r.status_code == 200 and r.json()["io"]["size"] == 256
    assert admin_broker.call(lambda: broker.io_pool.size) == 256


def test_resize_network_pool(admin_broker: BrokerThread, http: httpx.Client) -> None:
    broker = admin_broker.broker
    assert broker is not None
    r = http.put("/v1/pools/network/PLAINTEXT", json={"size": 5})
    assert r.status_code == 200
    assert r.json()["network"]["PLAINTEXT"]["size"] == 5
    assert (
        admin_broker.call(lambda: len(broker.socket_server.listener("PLAINTEXT").processors)) == 5
    )
    # stored as Kafka's per-listener key, with the other dynamic changes
    assert config(http)["dynamic_settings"] == {"listener.name.plaintext.num.network.threads": "5"}
    r = http.put("/v1/pools/network/plaintext", json={"size": 1})  # names are case-insensitive
    assert r.status_code == 200 and r.json()["network"]["PLAINTEXT"]["size"] == 1
    assert r.json()["network"]["CONTROLLER"]["size"] == 1


BAD_SIZES: list[Any] = [True, False, 2.0, 2.5, "4", None, [4], {"n": 4}, 0, -3, 257, 10**30]


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
def test_a_bad_pool_size_is_refused_and_changes_nothing(http: httpx.Client, size: Any) -> None:
    before = pools(http)
    for path in ("/v1/pools/io", "/v1/pools/network/PLAINTEXT"):
        r = http.put(path, json={"size": size})
        assert r.status_code == 400, (path, r.text)
        assert error_code(r) == "invalid-size"
    assert pools(http)["io"]["size"] == before["io"]["size"]
    assert pools(http)["network"] == before["network"]
    assert config(http)["dynamic_settings"] == {}


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"", "malformed-json"),
        (b"{size: 3}", "malformed-json"),
        (b'{"size": NaN}', "malformed-json"),
        (b"[3]", "malformed-json"),
        (b"3", "malformed-json"),
        (b"{}", "missing-field"),
        (b'{"size": 3, "extra": 1}', "unknown-field"),
    ],
)
def test_a_bad_resize_body_is_refused(http: httpx.Client, content: bytes, code: str) -> None:
    r = http.put("/v1/pools/io", content=content, headers={"content-type": "application/json"})
    assert r.status_code == 400 and error_code(r) == code
    assert pools(http)["io"]["size"] == 4


def test_resizing_an_unknown_or_the_control_plane_listener_is_refused(
    http: httpx.Client,
) -> None:
    r = http.put("/v1/pools/network/NOPE", json={"size": 2})
    assert r.status_code == 404 and error_code(r) == "unknown-listener"
    assert "NOPE" in r.json()["error"]["message"]
    r = http.put("/v1/pools/network/CONTROLLER", json={"size": 2})
    assert r.status_code == 400 and error_code(r) == "control-plane-listener"
    assert pools(http)["network"]["CONTROLLER"]["size"] == 1
    assert config(http)["dynamic_settings"] == {}


# ------------------------------------------------------------------ connections


def test_connections_list_every_connection_with_its_state(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    with (
        WireClient(admin_broker.address(), client_id="app-1") as one,
        WireClient(admin_broker.address(), client_id="app-2") as two,
        WireClient(admin_broker.address("CONTROLLER"), client_id="ctl") as ctl,
    ):
        one.request(
            ApiVersionsRequest(client_software_name="wire", client_software_version="9.1"), 3
        )
        one.request(MetadataRequest(topics=[]), 4)
        two.request(MetadataRequest(topics=[]), 4)
        ctl.request(MetadataRequest(topics=[]), 4)
        r = http.get("/v1/connections")
        assert r.status_code == 200
        conns = r.json()["connections"]
        assert len(conns) == 3
        for c in conns:
            assert set(c) == CONNECTION_FIELDS
        by_client = {c["client_id"]: c for c in conns}
        first = by_client["app-1"]
        assert first["listener"] == "PLAINTEXT"
        assert first["remote"] == f"127.0.0.1:{one.sock.getsockname()[1]}"
        assert first["principal"] == "User:ANONYMOUS"
        assert first["client_software_name"] == "wire"
        assert first["client_software_version"] == "9.1"
        assert first["mute_state"] == "NOT_MUTED"
        assert first["requests"] == 2
        assert first["bytes_in"] > 0 and first["bytes_out"] > first["bytes_in"]
        assert first["throttle_remaining_ms"] == 0
        assert first["idle_ms"] >= 0
        assert by_client["app-2"]["client_software_name"] is None
        broker = admin_broker.broker
        assert broker is not None
        plaintext = admin_broker.call(
            lambda: [p.id for p in broker.socket_server.listener("PLAINTEXT").processors]
        )
        assert {first["processor"], by_client["app-2"]["processor"]} <= set(plaintext)
        assert by_client["ctl"]["listener"] == "CONTROLLER"

        def ids(query: str) -> set[str | None]:
            r = http.get("/v1/connections" + query)
            assert r.status_code == 200, r.text
            return {c["client_id"] for c in r.json()["connections"]}

        assert ids("?listener=PLAINTEXT") == {"app-1", "app-2"}
        assert ids("?listener=controller") == {"ctl"}
        assert ids("?client_id=app-2") == {"app-2"}
        assert ids("?client_id=nobody") == set()
        assert ids("?mute_state=NOT_MUTED") == {"app-1", "app-2", "ctl"}
        assert ids("?mute_state=MUTED_AND_THROTTLED") == set()
        assert ids("?listener=PLAINTEXT&client_id=app-1&mute_state=NOT_MUTED") == {"app-1"}

        r = http.get("/v1/connections?mute_state=SLEEPING")
        assert r.status_code == 400 and error_code(r) == "unknown-mute-state"
        assert "SLEEPING" in r.json()["error"]["message"]
        r = http.get("/v1/connections?listener=NOPE")
        assert r.status_code == 400 and error_code(r) == "unknown-listener"
        r = http.get("/v1/connections?mute=MUTED")  # a misspelt filter is not ignored
        assert r.status_code == 400 and error_code(r) == "unknown-parameter"
        assert "'mute'" in r.json()["error"]["message"]


def test_a_throttled_connection_shows_the_time_left(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    broker = admin_broker.broker
    assert broker is not None
    with WireClient(admin_broker.address(), client_id="slow") as client:
        client.request(MetadataRequest(topics=[]), 4)

        def throttle() -> None:
            (conn,) = broker.socket_server.all_connections()
            conn.throttle_until_ns = time.monotonic_ns() + 5_000_000_000

        admin_broker.call(throttle)
        (c,) = http.get("/v1/connections?client_id=slow").json()["connections"]
        assert 0 < c["throttle_remaining_ms"] <= 5000


# ----------------------------------------------------------------------- quotas


def test_client_quotas_are_set_merged_listed_and_deleted(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    assert http.get("/v1/quotas").json() == {"quotas": []}
    r = http.put("/v1/quotas/clients/app-1", json={"producer_byte_rate": 1048576})
    assert r.status_code == 200
    assert r.json() == {"entity": {"client-id": "app-1"}, "values": {"producer_byte_rate": 1048576}}
    r = http.put(
        "/v1/quotas/clients/app-1", json={"consumer_byte_rate": 2048.0, "request_percentage": 50}
    )
    assert r.json()["values"] == {
        "producer_byte_rate": 1048576,
        "consumer_byte_rate": 2048,
        "request_percentage": 50.0,
    }
    r = http.put("/v1/quotas/clients/app-1", json={"request_percentage": None})  # removes one
    assert r.json()["values"] == {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048}
    r = http.put("/v1/quotas/clients/<default>", json={"request_percentage": 12.5})
    assert r.json() == {"entity": {"client-id": None}, "values": {"request_percentage": 12.5}}
    r = http.put("/v1/quotas/clients/team%2Fapp", json={"producer_byte_rate": 10})
    assert r.json()["entity"] == {"client-id": "team/app"}

    listed = http.get("/v1/quotas").json()["quotas"]
    assert [q["entity"]["client-id"] for q in listed] == [None, "app-1", "team/app"]

    stored = json.loads((admin_broker.config.log_dirs[0] / "quotas.json").read_text())
    assert {"entity": {"client-id": None}, "values": {"request_percentage": 12.5}} in stored[
        "quotas"
    ]

    r = http.delete("/v1/quotas/clients/app-1")
    assert r.status_code == 200
    assert r.json() == {
        "entity": {"client-id": "app-1"},
        "values": {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048},
    }
    r = http.delete("/v1/quotas/clients/app-1")
    assert r.status_code == 404 and error_code(r) == "unknown-quota"
    assert http.delete("/v1/quotas/clients/<default>").status_code == 200
    assert [q["entity"] for q in http.get("/v1/quotas").json()["quotas"]] == [
        {"client-id": "team/app"}
    ]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"producer_byte_rate": 0}, "invalid-quota"),
        ({"producer_byte_rate": -5}, "invalid-quota"),
        ({"consumer_byte_rate": 1.5}, "invalid-quota"),  # whole bytes, as Kafka's LONG
        ({"consumer_byte_rate": 2**64}, "invalid-quota"),
        ({"request_percentage": "50"}, "invalid-quota"),
        ({"request_percentage": True}, "invalid-quota"),
        ({"request_percentage": [1]}, "invalid-quota"),
        ({"controller_mutation_rate": 5}, "unknown-field"),
        ({"producer_byte_rate": 10, "bogus": 1}, "unknown-field"),
        ({}, "missing-field"),
    ],
    ids=repr,
)
def test_a_bad_quota_is_refused_and_changes_nothing(
    http: httpx.Client, body: dict[str, Any], code: str
) -> None:
    r = http.put("/v1/quotas/clients/app", json=body)
    assert r.status_code == 400 and error_code(r) == code, r.text
    assert http.get("/v1/quotas").json() == {"quotas": []}


def test_a_malformed_quota_body_is_refused(http: httpx.Client) -> None:
    r = http.put("/v1/quotas/clients/app", content=b'{"producer_byte_rate": ')
    assert r.status_code == 400 and error_code(r) == "malformed-json"


# ---------------------------------------------------------------------- metrics


def test_metrics_are_the_brokers_snapshot_and_prometheus_text(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    r = http.get("/v1/metrics")
    assert r.status_code == 200
    snapshot = r.json()
    assert snapshot["schema"] == "trio-broker.metrics/1"
    assert snapshot["broker_id"] == 0

    broker = admin_broker.broker
    assert broker is not None
    text = b"# TYPE kafka_server_up gauge\nkafka_server_up 1\n"
    admin_broker.call(setattr, broker, "prometheus_text", lambda: text)
    admin_broker.call(setattr, broker, "metrics_snapshot", lambda: {"schema": "x", "n": [1, 2]})
    r = http.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert r.content == text
    assert http.get("/v1/metrics").json() == {"schema": "x", "n": [1, 2]}


# ----------------------------------------------------------------------- config


def test_config_shows_every_effective_key(http: httpx.Client) -> None:
    body = config(http)
    assert set(body) == {
        "config",
        "dynamic_keys",
        "dynamic_settings",
        "default_settings",
        "sources",
    }
    assert body["config"]["num.io.threads"] == "4"
    assert set(body["sources"]) == set(body["config"])
    assert body["sources"]["num.io.threads"] == "override"  # BrokerThread: overrides
    assert body["sources"]["admin.token"] == "default"
    assert body["config"]["admin.token"] is None
    assert body["config"]["control.plane.listener.name"] == "CONTROLLER"
    assert {"num.io.threads", "num.network.threads", "max.connections"} <= set(body["dynamic_keys"])
    assert "broker.id" not in body["dynamic_keys"]
    assert body["dynamic_settings"] == {}


def test_dry_run_validates_only(admin_broker: BrokerThread, http: httpx.Client) -> None:
    r = http.put(
        "/v1/config",
        json={"settings": {"num.io.threads": 6, "max.connections": 100}, "dry_run": True},
    )
    assert r.status_code == 200
    body = r.json()
    assert body["dry_run"] is True
    assert body["changed"] == {"num.io.threads": "6", "max.connections": "100"}
    assert body["config"]["num.io.threads"] == "6"
    assert pools(http)["io"]["size"] == 4
    assert config(http)["config"]["num.io.threads"] == "4"
    assert config(http)["dynamic_settings"] == {}


def test_applying_pool_keys_resizes_the_pools(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    broker = admin_broker.broker
    assert broker is not None
    r = http.put(
        "/v1/config",
        json={
            "settings": {"num.io.threads": 6, "num.network.threads": "3", "max.connections": 100}
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["dry_run"] is False
    assert body["changed"] == {
        "num.io.threads": "6",
        "num.network.threads": "3",
        "max.connections": "100",
    }
    assert body["dynamic_settings"] == {
        "num.io.threads": "6",
        "num.network.threads": "3",
        "max.connections": "100",
    }
    now = pools(http)
    assert now["io"]["size"] == 6
    assert now["network"]["PLAINTEXT"]["size"] == 3
    assert now["network"]["CONTROLLER"]["size"] == 1  # the control plane keeps one
    assert admin_broker.call(lambda: broker.io_pool.size) == 6
    assert admin_broker.call(lambda: broker.config["max.connections"]) == 100

    # null reverts a run-time change to the static value
    r = http.put("/v1/config", json={"settings": {"num.io.threads": None, "max.connections": None}})
    assert r.status_code == 200
    assert r.json()["dynamic_settings"] == {"num.network.threads": "3"}
    assert pools(http)["io"]["size"] == 4


@pytest.mark.parametrize(
    ("settings", "code", "named"),
    [
        ({"broker.id": 7}, "static-config", ["broker.id"]),
        ({"listeners": "PLAINTEXT://:9092"}, "static-config", ["listeners"]),
        ({"admin.token": "x"}, "static-config", ["admin.token"]),
        ({"num.io.thread": 4}, "unknown-config", ["num.io.thread"]),
        ({"num.io.threads": "zero"}, "invalid-config", ["num.io.threads", "zero"]),
        ({"num.io.threads": 0}, "invalid-config", ["num.io.threads", "0"]),
        ({"num.io.threads": 1000}, "invalid-config", ["num.io.threads", "1000"]),
        ({"num.network.threads": 257}, "invalid-config", ["num.network.threads", "257"]),
        ({"max.connections": -1}, "invalid-config", ["max.connections", "-1"]),
        ({"unclean.leader.election.enable": "maybe"}, "invalid-config", ["maybe"]),
        ({"num.io.threads": 6, "broker.id": 7}, "static-config", ["broker.id"]),
        ({"num.io.threads": 6, "max.connections": "lots"}, "invalid-config", ["lots"]),
        ({"num.io.threads": {"n": 1}}, "invalid-config", ["num.io.threads"]),
    ],
    ids=repr,
)
def test_a_refused_setting_is_named_and_nothing_changes(
    http: httpx.Client, settings: dict[str, Any], code: str, named: list[str]
) -> None:
    for dry_run in (False, True):
        r = http.put("/v1/config", json={"settings": settings, "dry_run": dry_run})
        assert r.status_code == 400, r.text
        assert error_code(r) == code
        for word in named:
            assert word in r.json()["error"]["message"]
    assert config(http)["dynamic_settings"] == {}
    assert pools(http)["io"]["size"] == 4


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing-field"),
        ({"settings": ["num.io.threads=4"]}, "missing-field"),
        ({"settings": {}, "dry_run": "yes"}, "invalid-field"),
        ({"settings": {}, "apply": True}, "unknown-field"),
    ],
    ids=repr,
)
def test_a_bad_config_body_is_refused(http: httpx.Client, body: Any, code: str) -> None:
    r = http.put("/v1/config", json=body)
    assert r.status_code == 400 and error_code(r) == code


# ---------------------------------------------------------------------- openapi


def test_the_openapi_document_describes_every_route(http: httpx.Client) -> None:
    from admin.app import create_app

    r = http.get("/v1/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"].startswith("3.")
    assert "security" not in doc  # no token configured
    app = create_app(None)  # type: ignore[arg-type]  # routes need no view to be listed
    routes = set()
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)  # <int:id> -> {id}
        for method in rule.methods or ():
            if method not in ("HEAD", "OPTIONS"):
                routes.add((method.lower(), path))
    documented = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert documented == routes
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert op["responses"], (method, path)
            params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert params == {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
