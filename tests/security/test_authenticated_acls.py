"""Authentication and authorization together: the principal SASL/SCRAM or a TLS client
certificate gives a connection is the one ACLs are checked against. Real clients
(confluent-kafka); the set-up goes through the PLAINTEXT listener, whose anonymous
principal is a super user here."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.security.acl import AclBinding, AclFilter

from ..support.brokers import BrokerThread
from .conftest import PASSWORD, Pki, add_user, client_config, secure_settings


@pytest.fixture
def guarded(pki: Pki, tmp_path: Path) -> Iterator[BrokerThread]:
    settings = secure_settings(
        pki, **{"authorizer.class.name": "acl", "super.users": "User:ANONYMOUS"}
    )
    b = BrokerThread(tmp_path / "data", settings).start()
    add_user(b, "alice", PASSWORD)
    add_user(b, "bob", "bob-secret")
    assert b.broker is not None
    b.broker.acls.add(
        [
            AclBinding.of("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
            AclBinding.of(
                "TOPIC", "orders", "LITERAL", f"User:{pki.client_subject}", "*", "WRITE", "ALLOW"
            ),
        ]
    )
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(10)
    yield b
    b.stop()


def produce(conf: dict[str, Any]) -> KafkaError | None:
    p = Producer({**conf, "linger.ms": 0, "message.timeout.ms": 10000})
    reports: list[KafkaError | None] = []
    p.produce("orders", b"x", on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(15) == 0
    return reports[0]


def stored(b: BrokerThread) -> int:
    """Bytes in the topic's log."""
    assert b.broker is not None
    broker = b.broker
    return int(b.call(lambda: broker.log_size("orders", 0)))


def test_acls_apply_to_the_sasl_user_and_a_denial_is_logged_once(
    guarded: BrokerThread, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="trio_broker.authorizer")
    alice = client_config(guarded, pki, "SASL_SSL", mechanism="SCRAM-SHA-512")
    assert produce(alice) is None
    before = stored(guarded)
    assert before > 0
    bob = client_config(
        guarded, pki, "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", user="bob", password="bob-secret"
    )
    err = produce(bob)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert stored(guarded) == before  # bob stored nothing
    denials = [r.getMessage() for r in caplog.records if r.name == "trio_broker.authorizer"]
    assert len(denials) == 1 and "User:bob" in denials[0] and "orders" in denials[0]


def test_acls_apply_to_the_client_certificate_subject(guarded: BrokerThread, pki: Pki) -> None:
    with_cert = client_config(guarded, pki, "SSL", client_cert=True)
    assert produce(with_cert) is None
    before = stored(guarded)
    assert before > 0
    assert guarded.broker is not None
    guarded.broker.acls.remove([AclFilter.of(principal=f"User:{pki.client_subject}")])
    err = produce(with_cert)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert stored(guarded) == before
