"""``trio-broker-admin`` round trips against a real broker process (every port 0).

The broker runs as a user runs it, with an admin token; a confluent-kafka producer stays
connected so that ``connections`` has a real client to show. Most calls go through the
tool's ``main`` in this process (the same code as the command, faster); the exit status,
standard error and the token variable are checked on the installed ``trio-broker-admin``
command itself.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ScramMechanism

from trio_broker.tools.admin_cli.cli import TOKEN_VARIABLE, main
from trio_broker.tools.admin_cli.client import DEFAULT_ADMIN_URL, AdminError, admin_url

from ..support.brokers import BrokerProcess
from .conftest import TOKEN

COMMAND = Path(sys.executable).parent / "trio-broker-admin"
WATCHED = "cli-watched"  # the client id of the producer that stays connected


@dataclass
class Running:
    broker: BrokerProcess
    producer: Producer

    @property
    def url(self) -> str:
        assert self.broker.admin_url is not None
        return self.broker.admin_url


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    data = tmp_path_factory.mktemp("cli") / "data"
    broker = BrokerProcess(
        data,
        [
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "control.plane.listener.name=CONTROLLER",
            "admin.listeners=http://127.0.0.1:0",
            f"admin.token={TOKEN}",
            f"log.dirs={data}",
        ],
    ).start()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": WATCHED})
    try:
        producer.produce("cli-topic", value=b"hello")
        assert producer.flush(15) == 0
        yield Running(broker, producer)
    finally:
        producer.flush(5)
        assert broker.terminate() == 0


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)


@pytest.fixture
def cli(running: Running, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """``cli(*args)``: run the tool on the broker (its URL and token given), in process."""

    def run(*args: str, admin: bool = True) -> Result:
        where = ["--admin", running.url] if admin else []
        code = main([*where, "--token", TOKEN, *args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def command(*args: str, env: dict[str, str] | None = None) -> Result:
    """The installed ``trio-broker-admin`` command, as a user runs it."""
    clean = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
    proc = subprocess.run(
        [str(COMMAND), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


# ------------------------------------------------------------------ status, pools


def test_status_from_the_log_dir_names_the_broker_and_its_listeners(
    running: Running, cli: Any
) -> None:
    log_dir = str(running.broker.data_dir)
    got = cli("--log-dir", log_dir, "status", "--json", admin=False).json()
    assert got["ready"] is True and got["admin"] == running.url
    bound = {lis["name"]: f"{lis['host']}:{lis['port']}" for lis in got["listeners"]}
    assert bound == running.broker.listeners
    text = cli("--log-dir", log_dir, "status", admin=False)
    assert text.code == 0 and "ready: yes" in text.out
    assert running.broker.bootstrap in text.out


def test_resize_changes_the_pools_live(running: Running, cli: Any) -> None:
    assert cli("--json", "resize", "io", "6").json()["io"]["size"] == 6
    answered = cli("resize", "network", "plaintext", "2")
    assert answered.code == 0 and "network pool of PLAINTEXT resized to 2" in answered.out
    pools = cli("pools", "--json").json()
    assert pools["io"]["size"] == 6 and pools["network"]["PLAINTEXT"]["size"] == 2
    # the producer connected before the resize is still served
    running.producer.produce("cli-topic", value=b"after the resize")
    assert running.producer.flush(15) == 0
    table = cli("pools").out.splitlines()
    assert table[0].split() == ["POOL", "PLANE", "SIZE", "BUSY", "IDLE", "CONNECTIONS"]
    assert table[1].split()[:3] == ["io", "data", "6"]


# -------------------------------------------------------------------- connections


def test_connections_show_the_real_client_and_filter_by_client_and_mute_state(
    cli: Any,
) -> None:
    mine = cli("connections", "--client-id", WATCHED, "--json").json()["connections"]
    assert mine and {c["client_id"] for c in mine} == {WATCHED}
    assert all(c["client_software_name"] == "confluent-kafka-python" for c in mine)
    everyone = cli("connections", "--json").json()["connections"]
    assert {c["id"] for c in mine} <= {c["id"] for c in everyone}

    idle = cli("connections", "--client-id", WATCHED, "--mute-state", "NOT_MUTED", "--json")
    assert {c["id"] for c in idle.json()["connections"]} == {c["id"] for c in mine}
    throttled = cli("connections", "--mute-state", "muted_and_throttled", "--json")
    assert throttled.json() == {"connections": []}

    text = cli("connections", "--client-id", WATCHED).out.splitlines()
    assert text[0].split()[:4] == ["ID", "LISTENER", "REMOTE", "PRINCIPAL"]
    assert len(text) == 1 + len(mine) and all(WATCHED in line for line in text[1:])
    assert cli("connections", "--client-id", "nobody").out.strip() == "(no connections)"


# ------------------------------------------------------------------------- quotas


def test_quota_set_list_and_delete(cli: Any) -> None:
    got = cli("quota", "set", "app-q", "producer_byte_rate=1048576", "request_percentage=12.5")
    assert got.code == 0, got.err
    assert got.out.strip() == (
        "client-id=app-q: producer_byte_rate=1048576, request_percentage=12.5"
    )
    assert cli("quota", "set", "--default", "consumer_byte_rate=2048").code == 0
    listed = {
        json.dumps(q["entity"]): q["values"]
        for q in cli("quota", "list", "--json").json()["quotas"]
    }
    assert listed['{"client-id": "app-q"}'] == {
        "producer_byte_rate": 1048576,
        "request_percentage": 12.5,
    }
    assert listed['{"client-id": null}'] == {"consumer_byte_rate": 2048}
    rows = {line.split()[0]: line.split()[1:] for line in cli("quota").out.splitlines()[1:]}
    assert rows["client-id=app-q"] == ["1048576", "-", "12.5"]

    # one value, then the whole entity
    assert cli("quota", "delete", "app-q", "request_percentage", "--json").json() == {
        "entity": {"client-id": "app-q"},
        "values": {"producer_byte_rate": 1048576},
    }
    assert cli("quota", "delete", "app-q").out.strip() == (
        "removed client-id=app-q: producer_byte_rate=1048576"
    )
    assert cli("quota", "delete", "--default").code == 0
    assert cli("quota", "list", "--json").json() == {"quotas": []}
    again = cli("quota", "delete", "app-q")
    assert again.code == 1 and "no quota for client-id=app-q (HTTP 404" in again.err

    malformed = cli("quota", "set", "app-q", "producer_byte_rate=lots")
    assert malformed.code == 2 and "producer_byte_rate=lots: not a number" in malformed.err


# ------------------------------------------------------------------------- config


def test_config_set_dry_run_changes_nothing_and_set_changes_what_kafka_clients_see(
    running: Running, cli: Any
) -> None:
    broker_configs = ConfigResource(ConfigResource.Type.BROKER, "0")
    kafka = AdminClient({"bootstrap.servers": running.broker.bootstrap})

    def seen_by_kafka() -> str:
        configs = kafka.describe_configs([broker_configs])[broker_configs].result(10)
        return str(configs["max.connections"].value)

    before = cli("config", "get", "max.connections", "--json").json()["config"]
    dry = cli("config", "set", "max.connections=1000", "--dry-run", "--json").json()
    assert dry["dry_run"] is True and dry["changed"] == {"max.connections": "1000"}
    assert cli("config", "get", "max.connections", "--json").json()["config"] == before
    assert seen_by_kafka() == before["max.connections"]
    text = cli("config", "set", "max.connections=1000", "--dry-run").out
    assert text.startswith("dry run: valid, nothing was changed")

    changed = cli("config", "set", "max.connections=1000")
    assert changed.code == 0
    assert changed.out.splitlines()[1].split() == [
        "max.connections",
        before["max.connections"],
        "1000",
    ]
    assert seen_by_kafka() == "1000"
    row = cli("config", "get", "max.connections").out.splitlines()[1].split()
    assert row == ["max.connections", "1000", "run", "time", "run", "time"]

    assert cli("config", "delete", "max.connections").code == 0  # back to start-up value
    assert seen_by_kafka() == before["max.connections"]

    static = cli("config", "set", "broker.id=3", "--dry-run")
    assert static.code == 1
    assert "broker.id cannot be changed at run time" in static.err
    assert "(HTTP 400, static-config)" in static.err


# ---------------------------------------------------------- metrics, users, acls


def test_metrics_show_what_the_client_did(cli: Any) -> None:
    snapshot = cli("metrics", "--json").json()
    assert snapshot["schema"] == "trio-broker.metrics/1"
    assert snapshot["requests"]["Produce"]["count"] >= 1
    text = cli("metrics").out
    produce = next(line for line in text.splitlines() if line.startswith("Produce "))
    assert int(produce.split()[1]) >= 1
    assert "cli-topic" in text


def test_users_set_list_delete_as_kafka_clients_see_them(
    running: Running, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = AdminClient({"bootstrap.servers": running.broker.bootstrap})
    monkeypatch.setattr(sys, "stdin", io.StringIO("alice-secret\n"))
    got = cli("users", "set", "alice", "--mechanism", "scram-sha-256", "--iterations", "8192")
    assert got.code == 0, got.err
    assert cli("users", "--json").json() == {
        "users": [
            {"name": "alice", "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}]}
        ]
    }
    described = kafka.describe_user_scram_credentials(["alice"])["alice"].result(10)
    (info,) = described.scram_credential_infos
    assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_256, 8192)
    assert cli("users").out.splitlines()[1].split() == ["alice", "SCRAM-SHA-256", "(8192)"]
    assert cli("users", "delete", "alice").code == 0
    assert cli("users", "list", "--json").json() == {"users": []}
    gone = cli("users", "delete", "alice")
    assert gone.code == 1 and "HTTP 404" in gone.err


def test_acls_add_list_delete(cli: Any) -> None:
    binding = [
        *("--principal", "User:alice", "--operation", "read", "--permission-type", "allow"),
        *("--resource-type", "topic", "--resource-name", "orders"),
    ]
    added = cli("acls", "add", *binding, "--json").json()["acls"]
    assert added == [
        {
            "resource_type": "TOPIC",
            "resource_name": "orders",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": "READ",
            "permission_type": "ALLOW",
        }
    ]
    assert cli("acls", "--principal", "User:alice", "--json").json()["acls"] == added
    assert cli("acls", "list", "--principal", "User:bob", "--json").json() == {"acls": []}
    everything = cli("acls", "delete")
    assert everything.code == 1 and "name at least one filter" in everything.err
    # a filter given before the action counts too
    assert cli("acls", "--resource-name", "orders", "delete", "--json").json()["acls"] == added
    assert cli("acls", "--json").json() == {"acls": []}


# ------------------------------------------------------------- the command itself


def test_the_command_exits_1_with_the_servers_message(running: Running) -> None:
    refused = command("--admin", running.url, "resize", "io", "300", env={TOKEN_VARIABLE: TOKEN})
    assert refused.code == 1 and refused.out == ""
    assert refused.err.strip() == (
        "trio-broker-admin: size must be between 1 and 256, not 300 (HTTP 400, invalid-size)"
    )
    no_token = command("--admin", running.url, "pools")
    assert no_token.code == 1
    assert "requires an Authorization: Bearer <admin.token> header (HTTP 401" in no_token.err
    # the variable that sets the broker's admin.token also gives the tool its token
    ok = command("--admin", running.url, "pools", "--json", env={TOKEN_VARIABLE: TOKEN})
    assert ok.code == 0 and json.loads(ok.out)["io"]["size"] >= 1


def test_the_command_says_when_no_admin_api_answers(tmp_path: Path) -> None:
    with socket.socket() as closed:  # bound, not listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        got = command("--admin", url, "status")
    assert got.code == 1
    assert got.err.startswith(f"trio-broker-admin: cannot reach the admin API at {url}")
    missing = command("--log-dir", str(tmp_path), "status")
    assert missing.code == 1 and "listeners.json" in missing.err
    usage = command("resize", "io", "many")
    assert usage.code == 2 and "invalid int value" in usage.err


def test_the_admin_url_comes_from_the_option_the_log_dir_or_the_default(
    tmp_path: Path,
) -> None:
    assert admin_url(None, None) == DEFAULT_ADMIN_URL == "http://127.0.0.1:9644"
    assert admin_url("broker-1:9644/", None) == "http://broker-1:9644"
    (tmp_path / "listeners.json").write_text(json.dumps({"admin": "http://10.0.0.5:19644"}))
    assert admin_url(None, tmp_path) == "http://10.0.0.5:19644"
    assert admin_url("https://admin.example:443", tmp_path) == "https://admin.example:443"
    (tmp_path / "listeners.json").write_text(json.dumps({"listeners": {}}))
    with pytest.raises(AdminError, match="serves no admin API"):
        admin_url(None, tmp_path)
