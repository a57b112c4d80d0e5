"""ACLs seen by real clients: a broker with ``authorizer.class.name=acl`` on a PLAINTEXT
listener, where every client is ``User:ANONYMOUS``; ACLs are set through the admin API (the
bootstrap path: it needs no Kafka permission) and through Kafka's ACL APIs."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ACLResourcePatternType as KPattern
from kafka.admin import ResourceType as KResource
from kafka.errors import ClusterAuthorizationFailedError

from ..support.brokers import BrokerThread

ANON = "User:ANONYMOUS"
SECURED = {
    "authorizer.class.name": "acl",
    "allow.everyone.if.no.acl.found": "false",
    "admin.listeners": "http://127.0.0.1:0",
    "group.initial.rebalance.delay.ms": "0",
}


def rule(
    resource_type: str,
    name: str,
    operation: str,
    permission: str = "ALLOW",
    pattern: str = "LITERAL",
) -> dict[str, str]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": ANON,
        "host": "*",
        "operation": operation,
        "permission_type": permission,
    }


def grant(b: BrokerThread, *rules: dict[str, str]) -> None:
    r = httpx.post(f"{b.admin_url}/v1/acls", json={"acls": list(rules)}, timeout=10)
    assert r.status_code == 201, r.text


def listed(b: BrokerThread, **query: str) -> list[dict[str, str]]:
    r = httpx.get(f"{b.admin_url}/v1/acls", params=query, timeout=10)
    assert r.status_code == 200, r.text
    acls: list[dict[str, str]] = r.json()["acls"]
    return acls


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", SECURED).start()
    yield b
    b.stop()


def create_topics(b: BrokerThread, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        f.result(10)


def produce(b: BrokerThread, topic: str, value: bytes) -> KafkaError | None:
    """Produce one record; the delivery report's error (None: stored)."""
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "message.timeout.ms": 10000})
    reports: list[KafkaError | None] = []
    p.produce(topic, value, on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(15) == 0
    return reports[0]


def log_end(b: BrokerThread, topic: str) -> int:
    assert b.broker is not None
    broker = b.broker
    return int(b.call(lambda: broker.log_size(topic, 0)))


def test_kafka_clients_and_the_admin_api_see_one_store(secured: BrokerThread) -> None:
    b = secured
    grant(
        b, rule("CLUSTER", "kafka-cluster", "ALTER"), rule("CLUSTER", "kafka-cluster", "DESCRIBE")
    )
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    topic_rule = AclBinding(
        ResourceType.TOPIC,
        "orders-",
        ResourcePatternType.PREFIXED,
        ANON,
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for f in admin.create_acls([topic_rule]).values():
        f.result(10)
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    seen = admin.describe_acls(everything).result(10)
    assert len(seen) == 3 and topic_rule in seen
    assert sorted(map(str, listed(b))) == sorted(
        map(
            str,
            [
                rule("CLUSTER", "kafka-cluster", "ALTER"),
                rule("CLUSTER", "kafka-cluster", "DESCRIBE"),
                rule("TOPIC", "orders-", "READ", pattern="PREFIXED"),
            ],
        )
    )
    # the rules that apply to one topic: MATCH
    assert listed(b, resource_type="TOPIC", resource_name="orders-eu", pattern_type="MATCH") == [
        rule("TOPIC", "orders-", "READ", pattern="PREFIXED")
    ]

    only_topics = AclBindingFilter(
        ResourceType.TOPIC,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    # (the futures' map must stay whole: the client fills in the futures through it)
    deleted = next(iter(admin.delete_acls([only_topics]).values())).result(10)
    assert deleted == [topic_rule]

    # kafka-python's admin client reads and changes the same store
    kp = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
    groups = ACLFilter(
        ANON,
        "*",
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(KResource.GROUP, None, KPattern.ANY),
    )
    try:
        group_rule = ACL(
            ANON,
            "*",
            ACLOperation.DESCRIBE,
            ACLPermissionType.ALLOW,
            ResourcePattern(KResource.GROUP, "app", KPattern.LITERAL),
        )
        result = kp.create_acls([group_rule])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        acls, _ = kp.describe_acls(groups)
        assert [a.resource_pattern.resource_name for a in acls] == ["app"]
        assert rule("GROUP", "app", "DESCRIBE") in listed(b)

        r = httpx.delete(f"{b.admin_url}/v1/acls", params={"resource_type": "CLUSTER"}, timeout=10)
        assert r.status_code == 200 and len(r.json()["acls"]) == 2
        # without DESCRIBE on the cluster, the Kafka API refuses to describe ACLs
        with pytest.raises(ClusterAuthorizationFailedError):
            kp.describe_acls(groups)
    finally:
        kp.close()


def test_prefixed_allow_deny_wins_and_a_denied_producer_stores_nothing(
    secured: BrokerThread,
) -> None:
    b = secured
    grant(
        b,
        rule("TOPIC", "pay", "ALL", pattern="PREFIXED"),
        rule("TOPIC", "payments-eu", "WRITE", permission="DENY"),
    )
    create_topics(b, "payments-us", "payments-eu")
    assert produce(b, "payments-us", b"ok") is None
    err = produce(b, "payments-eu", b"refused")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert log_end(b, "payments-us") > 0
    assert log_end(b, "payments-eu") == 0  # nothing stored


def test_metadata_shows_only_what_the_principal_may_describe(secured: BrokerThread) -> None:
    b = secured
    grant(b, rule("CLUSTER", "kafka-cluster", "CREATE"), rule("TOPIC", "visible", "DESCRIBE"))
    create_topics(b, "visible", "hidden")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert set(admin.list_topics(timeout=10).topics) == {"visible"}
    named = admin.list_topics("hidden", timeout=10).topics["hidden"]
    assert named.error is not None
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def consume_error(config: dict[str, Any], start: Any) -> tuple[KafkaError | None, list[bytes]]:
    """Poll until an error or a record arrives (10 s at most)."""
    c = Consumer({"enable.auto.commit": False, "auto.offset.reset": "earliest", **config})
    try:
        start(c)
        values: list[bytes] = []
        for _ in range(100):
            msg = c.poll(0.1)
            if msg is None:
                continue
            if msg.error() is not None:
                return msg.error(), values
            values.append(msg.value())
            return None, values
        return None, values
    finally:
        c.close()


def test_consumers_without_read_or_group_rights_get_no_data(secured: BrokerThread) -> None:
    b = secured
    grant(
        b,
        rule("TOPIC", "orders", "WRITE"),
        rule("CLUSTER", "kafka-cluster", "CREATE"),
        rule("GROUP", "app", "READ"),
    )
    create_topics(b, "orders")
    assert produce(b, "orders", b"secret") is None
    app = {"bootstrap.servers": b.bootstrap, "group.id": "app"}

    # the group is allowed, the topic's READ is not
    err, values = consume_error(app, lambda c: c.assign([TP("orders", 0, OFFSET_BEGINNING)]))
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert values == []

    # a group without ACLs
    other = {**app, "group.id": "other"}
    err, values = consume_error(other, lambda c: c.subscribe(["orders"]))
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert values == []

    # granted at run time: the consumer reads
    grant(b, rule("TOPIC", "orders", "READ"))
    err, values = consume_error(app, lambda c: c.subscribe(["orders"]))
    assert err is None and values == [b"secret"]


def test_a_super_user_needs_no_acl(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", {**SECURED, "super.users": ANON}).start()
    try:
        create_topics(b, "t")
        assert produce(b, "t", b"v") is None
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        assert "t" in admin.list_topics(timeout=10).topics
    finally:
        b.stop()


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    rules = [rule("TOPIC", "t", "ALL"), rule("CLUSTER", "kafka-cluster", "CREATE")]
    b = BrokerThread(tmp_path / "data", SECURED).start()
    try:
        grant(b, *rules)
        create_topics(b, "t", "u")
    finally:
        b.stop()
    b = BrokerThread(tmp_path / "data", SECURED).start()
    try:
        assert sorted(map(str, listed(b))) == sorted(map(str, rules))
        assert produce(b, "t", b"kept") is None
        err = produce(b, "u", b"still refused")
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        b.stop()


ATTEMPTS = 5


def test_a_burst_of_denials_is_logged_once_and_counted_in_full(
    secured: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    b = secured
    grant(b, rule("TOPIC", "t", "DESCRIBE"), rule("CLUSTER", "kafka-cluster", "CREATE"))
    create_topics(b, "t")
    caplog.set_level(logging.WARNING, logger="trio_broker.authorizer")
    # librdkafka gives up on a topic after one denial: each attempt is a new client
    errors = [produce(b, "t", f"attempt {i}".encode()) for i in range(ATTEMPTS)]
    assert [e.code() if e else None for e in errors] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    ] * ATTEMPTS
    lines = [r for r in caplog.records if r.name == "trio_broker.authorizer"]
    assert len(lines) == 1
    assert "User:ANONYMOUS" in lines[0].getMessage() and "WRITE" in lines[0].getMessage()
    auth = httpx.get(f"{b.admin_url}/v1/metrics", timeout=10).json()["authorization"]
    assert auth["enabled"] is True and auth["acls"] == 2
    assert auth["denied_by_resource"]["TOPIC"]["WRITE"] == ATTEMPTS


def test_kcat_reports_the_denials(secured: BrokerThread) -> None:
    b = secured
    grant(b, rule("TOPIC", "t", "DESCRIBE"), rule("CLUSTER", "kafka-cluster", "CREATE"))
    create_topics(b, "t")
    base = ["kcat", "-b", b.bootstrap, "-t", "t", "-p", "0"]
    produced = subprocess.run(
        [*base, "-P"], input="hello\n", capture_output=True, text=True, timeout=60
    )
    assert produced.returncode != 0 and "Topic authorization failed" in produced.stderr
    consumed = subprocess.run(
        [*base, "-C", "-o", "beginning", "-e"], capture_output=True, text=True, timeout=60
    )
    assert consumed.returncode != 0 and "Topic authorization failed" in consumed.stderr
    assert consumed.stdout.strip() == ""


def init_error(b: BrokerThread, transactional_id: str) -> KafkaError:
    """The error a transactional producer's init_transactions() raises."""
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": transactional_id})
    with pytest.raises(KafkaException) as raised:
        p.init_transactions(15)
    error: KafkaError = raised.value.args[0]
    return error


def test_a_transactional_id_needs_write_on_it(secured: BrokerThread) -> None:
    b = secured
    grant(b, rule("TOPIC", "tx-out", "ALL"))
    create_topics(b, "tx-out")
    # No right on the id (FindCoordinator), then DESCRIBE only (InitProducerId wants WRITE).
    assert init_error(b, "app").code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(b, rule("TRANSACTIONAL_ID", "app", "DESCRIBE"))
    assert init_error(b, "app").code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert log_end(b, "tx-out") == 0
    grant(b, rule("TRANSACTIONAL_ID", "app", "WRITE"))
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "app"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("tx-out", b"committed")
    p.commit_transaction(15)
    assert b.broker is not None
    broker = b.broker
    end = b.call(lambda: broker.replica_manager.partition("tx-out", 0).log_end_offset)
    assert end == 2  # the record and the commit marker
    # WRITE on one id is no right on another
    assert init_error(b, "other").code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
