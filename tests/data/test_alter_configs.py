"""AlterConfigs and IncrementalAlterConfigs with real clients (confluent-kafka's
AdminClient, kafka-python's): topic and broker resources, SET / DELETE / APPEND /
SUBTRACT, validate_only, Kafka's errors per resource, ACLs, DescribeConfigs' sources and
synonyms, changes in force at once (a produce over a new max.message.bytes is refused) and
stored (a broker key survives a restart, and reads the same through the admin API)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from trio_broker.protocol.messages.configs import IncrementalAlterConfigsRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient

ADMIN = {"admin.listeners": "http://127.0.0.1:0"}
TOPIC_CONFIG, DYNAMIC_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 4, 5


@pytest.fixture
def node(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", {**ADMIN, "log.retention.hours": "100"}).start()
    yield b
    b.stop()


def admin_for(b: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap})


def topic(name: str) -> ConfigResource:
    return ConfigResource(ConfigResource.Type.TOPIC, name)


def op(name: str, kind: AlterConfigOpType, value: str | None = None) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=kind)


def described(admin: AdminClient, res: ConfigResource) -> dict[str, Any]:
    return admin.describe_configs([res])[res].result(10)  # type: ignore[no-any-return]


def error_name(
    admin: AdminClient, res: ConfigResource, entries: list[ConfigEntry], **kw: Any
) -> str:
    res.set_config  # noqa: B018 (the type has it)
    for e in entries:
        res.add_incremental_config(e)
    try:
        admin.incremental_alter_configs([res], **kw)[res].result(10)
    except KafkaException as exc:
        return str(exc.args[0].name())
    return "NONE"


def alter(admin: AdminClient, res: ConfigResource, entries: list[ConfigEntry], **kw: Any) -> None:
    for e in entries:
        res.add_incremental_config(e)
    admin.incremental_alter_configs([res], **kw)[res].result(10)


def test_topic_changes_are_in_force_at_once_and_described_with_their_sources(
    node: BrokerThread,
) -> None:
    admin = admin_for(node)
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
    alter(
        admin,
        topic("t"),
        [
            op("max.message.bytes", AlterConfigOpType.SET, "2000"),
            op("retention.ms", AlterConfigOpType.SET, "3600000"),
        ],
    )
    entries = described(admin, topic("t"))
    assert entries["max.message.bytes"].value == "2000"
    assert entries["max.message.bytes"].source == TOPIC_CONFIG
    # Synonyms: the topic's own, then the broker's static log.retention.hours, the default.
    syn = [(s.name, s.value, s.source) for s in entries["retention.ms"].synonyms.values()]
    assert syn[0] == ("retention.ms", "3600000", TOPIC_CONFIG)
    assert ("log.retention.hours", "100", STATIC_BROKER) in syn
    assert syn[-1][2] == DEFAULT

    # In force: a batch over the new limit is refused, one under it goes in.
    p = Producer({"bootstrap.servers": node.bootstrap, "compression.type": "none"})
    errors: list[Any] = []
    p.produce("t", b"x" * 5000, on_delivery=lambda err, _m: errors.append(err))
    p.flush(10)
    p.produce("t", b"y" * 100, on_delivery=lambda err, _m: errors.append(err))
    p.flush(10)
    assert [e.code() if e else None for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE, None]

    # DELETE: the broker's value again; AlterConfigs (not incremental) replaces the set.
    alter(admin, topic("t"), [op("max.message.bytes", AlterConfigOpType.DELETE)])
    assert described(admin, topic("t"))["max.message.bytes"].source != TOPIC_CONFIG
    res = topic("t")
    res.set_config("segment.bytes", "1048576")
    admin.alter_configs([res])[res].result(10)
    entries = described(admin, topic("t"))
    assert entries["segment.bytes"].value == "1048576"
    assert entries["retention.ms"].source != TOPIC_CONFIG  # not named: no longer set


def test_list_keys_take_append_and_subtract_and_others_refuse_them(node: BrokerThread) -> None:
    admin = admin_for(node)
    admin.create_topics([NewTopic("l", 1, 1)])["l"].result(10)
    alter(admin, topic("l"), [op("cleanup.policy", AlterConfigOpType.APPEND, "delete")])
    entries = described(admin, topic("l"))
    assert (entries["cleanup.policy"].value, entries["cleanup.policy"].source) == (
        "delete",
        TOPIC_CONFIG,
    )
    # The result is checked like any value ...
    shred = op("cleanup.policy", AlterConfigOpType.APPEND, "shred")
    assert error_name(admin, topic("l"), [shred]) == "INVALID_CONFIG"
    alter(admin, topic("l"), [op("cleanup.policy", AlterConfigOpType.APPEND, "compact")])
    assert described(admin, topic("l"))["cleanup.policy"].value == "delete,compact"
    # ... and an empty list is no setting of the topic's own: the broker's counts again.
    alter(
        admin,
        topic("l"),
        [op("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete,compact")],
    )
    assert described(admin, topic("l"))["cleanup.policy"].source != TOPIC_CONFIG
    assert error_name(admin, topic("l"), [op("retention.ms", AlterConfigOpType.APPEND, "1")]) == (
        "INVALID_CONFIG"
    )
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    assert error_name(admin, broker, [op("num.io.threads", AlterConfigOpType.SUBTRACT, "2")]) == (
        "INVALID_CONFIG"
    )


def test_refusals_name_the_problem_per_resource_and_change_nothing(node: BrokerThread) -> None:
    admin = admin_for(node)
    admin.create_topics([NewTopic("r", 1, 1)])["r"].result(10)
    cases = [
        (topic("r"), [op("retention.ms", AlterConfigOpType.SET, "soon")], "INVALID_CONFIG"),
        (topic("r"), [op("no.such.key", AlterConfigOpType.SET, "1")], "INVALID_CONFIG"),
        (
            topic("missing"),
            [op("retention.ms", AlterConfigOpType.SET, "1")],
            "UNKNOWN_TOPIC_OR_PART",
        ),
        (
            ConfigResource(ConfigResource.Type.BROKER, "0"),
            [op("log.dirs", AlterConfigOpType.SET, "/elsewhere")],
            "INVALID_CONFIG",
        ),
        (
            ConfigResource(ConfigResource.Type.BROKER, "0"),
            [op("num.io.threads", AlterConfigOpType.SET, "1000")],
            "INVALID_CONFIG",
        ),
    ]
    for res, entries, expected in cases:
        assert error_name(admin, res, entries) == expected, (res, entries)
    # validate_only checks and changes nothing
    res = topic("r")
    assert (
        error_name(
            admin, res, [op("retention.ms", AlterConfigOpType.SET, "5000")], validate_only=True
        )
        == "NONE"
    )
    assert described(admin, topic("r"))["retention.ms"].source != TOPIC_CONFIG
    # On the wire: the cluster-wide default ("") may change; another id is Kafka's error.
    with WireClient(node.bootstrap) as client:
        req = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=4,
                    resource_name=name,
                    configs=[
                        IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                            name="num.io.threads", config_operation=0, value="2"
                        )
                    ],
                )
                for name in ("7", "", "x")
            ],
            validate_only=True,
        )
        answers = client.request(req, 1).responses
        assert [(a.resource_name, a.error_code) for a in answers] == [
            ("7", 42),
            ("", 0),
            ("x", 42),
        ]
        assert answers[0].error_message == ("Unexpected broker id, expected 0, but received 7")
        assert answers[2].error_message == "Broker id must be an integer, but it is: x"
    # kafka-python's AlterConfigs reads the error message: it names the key.
    k = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        resp = k.alter_configs(
            [KConfigResource(ConfigResourceType.TOPIC, "r", configs={"retention.ms": "soon"})]
        )
        assert resp == {
            "topic": {
                "r": "[Error 40] InvalidConfigurationError: "
                "retention.ms=soon: expected -1 or an integer >= 1"
            }
        }
    finally:
        k.close()


def test_a_broker_key_changed_by_the_protocol_is_the_admin_apis_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    b = BrokerThread(tmp_path / "data", dict(ADMIN)).start()
    try:
        admin = admin_for(b)
        alter(
            admin,
            ConfigResource(ConfigResource.Type.BROKER, "0"),
            [op("num.io.threads", AlterConfigOpType.SET, "3")],
        )
        entries = described(admin, ConfigResource(ConfigResource.Type.BROKER, "0"))
        assert entries["num.io.threads"].value == "3"
        assert entries["num.io.threads"].source == DYNAMIC_BROKER
        assert httpx.get(f"{b.admin_url}/v1/pools", timeout=10).json()["io"]["size"] == 3
        config = httpx.get(f"{b.admin_url}/v1/config", timeout=10).json()
        assert config["config"]["num.io.threads"] == "3"
    finally:
        b.stop()
    b = BrokerThread(tmp_path / "data", dict(ADMIN)).start()
    try:
        entries = described(admin_for(b), ConfigResource(ConfigResource.Type.BROKER, "0"))
        assert entries["num.io.threads"].value == "3"
    finally:
        b.stop()


def test_without_alter_configs_permission_each_resource_is_refused(tmp_path: Path) -> None:
    b = BrokerThread(
        tmp_path / "data",
        {**ADMIN, "authorizer.class.name": "acl", "allow.everyone.if.no.acl.found": "false"},
    ).start()
    try:
        allow_create = {
            "resource_type": "CLUSTER",
            "resource_name": "kafka-cluster",
            "pattern_type": "LITERAL",
            "principal": "User:ANONYMOUS",
            "host": "*",
            "operation": "CREATE",
            "permission_type": "ALLOW",
        }
        r = httpx.post(f"{b.admin_url}/v1/acls", json={"acls": [allow_create]}, timeout=10)
        assert r.is_success, r.text
        admin = admin_for(b)
        admin.create_topics([NewTopic("locked", 1, 1)])["locked"].result(10)
        assert error_name(
            admin, topic("locked"), [op("retention.ms", AlterConfigOpType.SET, "1000")]
        ) == ("TOPIC_AUTHORIZATION_FAILED")
        assert error_name(
            admin,
            ConfigResource(ConfigResource.Type.BROKER, "0"),
            [op("num.io.threads", AlterConfigOpType.SET, "2")],
        ) == ("CLUSTER_AUTHORIZATION_FAILED")
    finally:
        b.stop()


def test_the_broker_keys_librdkafkas_admin_tests_change_are_kafkas(node: BrokerThread) -> None:
    """What librdkafka's 0081 sets on a broker: a Kerberos key with legacy AlterConfigs
    (stored: no GSSAPI here, as its doc says) and background.threads, which bounds the
    threads of the scheduled log jobs at once, and reverts to its default when deleted."""
    admin = admin_for(node)
    broker = ConfigResource(
        ConfigResource.Type.BROKER,
        "0",
        set_config={"sasl.kerberos.min.time.before.relogin": "58000"},
    )
    admin.alter_configs([broker])[broker].result(10)
    entry = described(admin, ConfigResource(ConfigResource.Type.BROKER, "0"))[
        "sasl.kerberos.min.time.before.relogin"
    ]
    assert (entry.value, entry.source) == ("58000", DYNAMIC_BROKER)

    def limit() -> int:
        assert node.broker is not None
        return int(node.call(lambda: node.broker.replica_manager.background.total_tokens))

    assert limit() == 10
    alter(
        admin,
        ConfigResource(ConfigResource.Type.BROKER, "0"),
        [op("background.threads", AlterConfigOpType.SET, "1")],
    )
    assert limit() == 1
    alter(
        admin,
        ConfigResource(ConfigResource.Type.BROKER, "0"),
        [op("background.threads", AlterConfigOpType.DELETE)],
    )
    assert limit() == 10
