"""``trio-broker-admin topics`` and ``topic list|describe|create|delete`` against a real
broker (port 0, with an admin token), as confluent-kafka's clients see the result.

Most calls go through the tool's ``main`` in this process; the exit status and standard
error of a refusal are checked on the installed command itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from trio_broker.tools.admin_cli.cli import TOKEN_VARIABLE, main
from trio_broker.tools.admin_cli.topics import parse_assignment

from ..support.brokers import BrokerThread
from .conftest import ADMIN, TOKEN

COMMAND = Path(sys.executable).parent / "trio-broker-admin"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    data = tmp_path_factory.mktemp("topics-cli") / "data"
    b = BrokerThread(data, {**ADMIN, "admin.token": TOKEN}).start()
    yield b
    b.stop()


@pytest.fixture
def cli(broker: BrokerThread, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    def run(*args: str) -> Result:
        code = main(["--admin", broker.admin_url, "--token", TOKEN, *args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def kafka_topics(broker: BrokerThread) -> dict[str, int]:
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def test_create_describe_list_and_delete_as_kafka_clients_see_them(
    broker: BrokerThread, cli: Any
) -> None:
    made = cli(
        "topic",
        "create",
        "payments",
        "--partitions",
        "2",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=86400000",
        "--config",
        "cleanup.policy=compact",
    )
    assert made.code == 0, made.err
    lines = made.out.splitlines()
    assert lines[0] == "created topic payments"
    assert lines[2].startswith("topic payments  id ") and lines[2].endswith(
        "partitions 2  replication 1"
    )
    assert lines[3] == "configs: cleanup.policy=compact, retention.ms=86400000"
    assert lines[5].split() == ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE"]
    rows = [line.split() for line in lines[6:]]
    assert rows == [[str(p), "0", "0", "0", "0", "-"] for p in (0, 1)]

    # What Kafka clients see: the topic, its configs; and it takes messages.
    assert kafka_topics(broker)["payments"] == 2
    kafka = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "payments")
    configs = kafka.describe_configs([resource])[resource].result(10)
    assert (configs["retention.ms"].value, configs["cleanup.policy"].value) == (
        "86400000",
        "compact",
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("payments", key=b"k", value=b"v")
    assert producer.flush(15) == 0

    described = cli("topic", "describe", "payments", "--json").json()
    assert described["partition_count"] == 2 and described["configs"] == {
        "retention.ms": "86400000",
        "cleanup.policy": "compact",
    }
    assert cli("topic", "describe", "payments").out.splitlines()[0] == lines[2]
    listed = cli("topics", "--json").json()["topics"]
    assert {k: v for k, v in described.items() if k != "partitions"} in listed
    assert cli("topic", "--json").json()["topics"] == listed  # no action: the list
    row = next(r for r in cli("topic", "list").out.splitlines() if r.startswith("payments "))
    assert row.split() == [
        "payments",
        "2",
        "1",
        "no",
        described["topic_id"],
        "cleanup.policy=compact,",
        "retention.ms=86400000",
    ]

    gone = cli("topic", "delete", "payments")
    assert gone.code == 0, gone.err
    assert gone.out.strip() == f"deleted topic payments (id {described['topic_id']})"
    assert "payments" not in kafka_topics(broker)
    again = cli("topic", "delete", "payments")
    assert again.code == 1
    assert "topic 'payments' does not exist (HTTP 404, UNKNOWN_TOPIC_OR_PARTITION)" in again.err


def test_assignment_validate_only_and_refusals(broker: BrokerThread, cli: Any) -> None:
    checked = cli("topic", "create", "placed", "--assignment", "0:0", "--validate-only")
    assert checked.code == 0, checked.err
    assert checked.out.splitlines()[:2] == [
        "validate only: valid, nothing was created",
        "topic placed  partitions 2  replication 1  replicas 0:0",
    ]
    assert "placed" not in kafka_topics(broker)
    assert cli("topic", "describe", "placed").code == 1

    made = cli("topic", "create", "placed", "--assignment", "0", "--assignment", "0", "--json")
    topic = made.json()
    assert [p["replicas"] for p in topic["partitions"]] == [[0], [0]]
    assert kafka_topics(broker)["placed"] == 2

    taken = cli("topic", "create", "placed")
    assert taken.code == 1 and taken.out == ""
    assert "topic 'placed' already exists (HTTP 409, TOPIC_ALREADY_EXISTS)" in taken.err
    wide = cli("topic", "create", "wide", "--replication-factor", "3")
    assert wide.code == 1 and "(HTTP 400, INVALID_REPLICATION_FACTOR)" in wide.err
    elsewhere = cli("topic", "create", "elsewhere", "--assignment", "0,5")
    assert elsewhere.code == 1 and "(HTTP 400, INVALID_REPLICA_ASSIGNMENT)" in elsewhere.err
    config = cli("topic", "create", "cfg", "--config", "retention.ms=soon")
    assert config.code == 1 and "(HTTP 400, INVALID_CONFIG)" in config.err
    both = cli("topic", "create", "both", "--partitions", "2", "--assignment", "0")
    assert both.code == 1 and "(HTTP 400, INVALID_REQUEST)" in both.err
    internal = cli("topic", "delete", "__consumer_offsets")
    assert internal.code == 1 and "(HTTP 400, INVALID_TOPIC_EXCEPTION)" in internal.err
    # Malformed command lines: nothing sent, exit status 2.
    assert cli("topic", "create", "x", "--config", "retention.ms").code == 2
    assert cli("topic", "create", "x", "--assignment", "0,a").code == 2
    assert not {"wide", "elsewhere", "cfg", "both", "x"} & set(kafka_topics(broker))


def test_parse_assignment() -> None:
    assert parse_assignment(["0,1:1,2", "2,0"]) == [[0, 1], [1, 2], [2, 0]]
    assert parse_assignment(["3"]) == [[3]]


def test_the_command_exits_1_with_the_brokers_message(broker: BrokerThread) -> None:
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
    proc = subprocess.run(
        [str(COMMAND), "--admin", broker.admin_url, "topic", "create", "bad!"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, TOKEN_VARIABLE: TOKEN},
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == (
        "trio-broker-admin: topic name 'bad!' has characters other than ASCII "
        "alphanumerics, '.', '_', '-' (HTTP 400, INVALID_TOPIC_EXCEPTION)"
    )
