"""SCRAM credentials managed two ways that agree: the admin API's /v1/users and Kafka's
Describe/AlterUserScramCredentials (confluent-kafka's AdminClient). Stored salted and
hashed only, kept across a restart; user quotas apply to SASL users; the metrics count
authentications."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from trio_broker.server.quotas.manager import PRODUCE
from trio_broker.server.quotas.store import QuotaEntity

from ..admin.conftest import error_code
from ..support.brokers import BrokerThread
from ..support.metrics import validate_snapshot
from .clients import authenticates, first_error, round_trip
from .conftest import Pki, client_config, secure_settings

ADMIN = {"admin.listeners": "http://127.0.0.1:0"}


@pytest.fixture
def broker(pki: Pki, tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", secure_settings(pki, **ADMIN)).start()
    yield b
    b.stop()


def _admin_client(broker: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.address("PLAINTEXT")})


def _described(admin: AdminClient) -> dict[str, Any]:
    """Every user's credentials as Kafka's API describes them (one future for all)."""
    result = admin.describe_user_scram_credentials().result(15)
    return {
        user: sorted((i.mechanism.name, i.iterations) for i in d.scram_credential_infos)
        for user, d in result.items()
    }


def test_admin_api_and_kafka_api_agree(broker: BrokerThread, pki: Pki) -> None:
    admin = _admin_client(broker)
    with httpx.Client(base_url=broker.admin_url, timeout=30) as http:
        put = http.put(
            "/v1/users/alice",
            json={"mechanism": "SCRAM-SHA-256", "password": "alice-pw", "iterations": 8192},
        )
        assert put.status_code == 200, put.text
        assert put.json() == {
            "name": "alice",
            "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}],
        }
        assert _described(admin) == {"alice": [("SCRAM_SHA_256", 8192)]}
        # Kafka's API creates bob (the client sends salt and salted password only)
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("bob", info, b"bob-pw")]
        )
        futures["bob"].result(15)
        users = http.get("/v1/users").json()["users"]
        assert [u["name"] for u in users] == ["alice", "bob"]
        assert users[1]["credentials"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]
        # both can authenticate, with SCRAM and with PLAIN (the same store)
        for user, password, mechanism in (
            ("alice", "alice-pw", "SCRAM-SHA-256"),
            ("bob", "bob-pw", "SCRAM-SHA-512"),
            ("bob", "bob-pw", "PLAIN"),
        ):
            conf = client_config(
                broker, pki, "SASL_PLAINTEXT", mechanism=mechanism, user=user, password=password
            )
            assert authenticates(conf)
        # deleting through Kafka's API shows in the admin API, and the reverse
        deletion = UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)
        admin.alter_user_scram_credentials([deletion])["bob"].result(15)
        assert [u["name"] for u in http.get("/v1/users").json()["users"]] == ["alice"]
        gone = http.delete("/v1/users/alice", params={"mechanism": "SCRAM-SHA-256"})
        assert gone.status_code == 200
        assert _described(admin) == {}
        conf = client_config(
            broker, pki, "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", password="alice-pw"
        )
        conf["reconnect.backoff.ms"] = 10000
        assert first_error(conf).code() == -169  # _AUTHENTICATION: alice is gone


def test_kafka_api_errors(broker: BrokerThread) -> None:
    admin = _admin_client(broker)
    with pytest.raises(KafkaException) as caught:
        admin.describe_user_scram_credentials(["nobody"])["nobody"].result(15)
    assert caught.value.args[0].name() == "RESOURCE_NOT_FOUND"
    deletion = UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_256)
    with pytest.raises(KafkaException) as caught:
        admin.alter_user_scram_credentials([deletion])["nobody"].result(15)
    assert caught.value.args[0].name() == "RESOURCE_NOT_FOUND"
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100)
    upsert = UserScramCredentialUpsertion("carol", info, b"pw")
    with pytest.raises(KafkaException) as caught:
        admin.alter_user_scram_credentials([upsert])["carol"].result(15)
    assert caught.value.args[0].name() == "UNACCEPTABLE_CREDENTIAL"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"mechanism": "SCRAM-SHA-1", "password": "pw"}, "invalid-mechanism"),
        ({"mechanism": "SCRAM-SHA-256", "password": ""}, "invalid-password"),
        ({"mechanism": "SCRAM-SHA-256", "password": "pw", "iterations": 100}, "invalid-iterations"),
        ({"mechanism": "SCRAM-SHA-256", "password": "pw", "salt": "x"}, "unknown-field"),
    ],
)
def test_admin_api_refuses_bad_input(broker: BrokerThread, body: dict[str, Any], code: str) -> None:
    with httpx.Client(base_url=broker.admin_url, timeout=10) as http:
        response = http.put("/v1/users/dave", json=body)
        assert response.status_code == 400 and error_code(response) == code
        missing = http.delete("/v1/users/dave")
        assert missing.status_code == 404 and error_code(missing) == "unknown-user"
        assert http.get("/v1/users").json() == {"users": []}


def test_credentials_are_stored_hashed_and_survive_a_restart(pki: Pki, tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = secure_settings(pki, **ADMIN)
    b = BrokerThread(data, settings).start()
    try:
        with httpx.Client(base_url=b.admin_url, timeout=30) as http:
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                body = {"mechanism": mechanism, "password": "erin-clear-pw"}
                assert http.put("/v1/users/erin", json=body).status_code == 200
    finally:
        b.stop()
    stored = (data / "scram_credentials.json").read_text()
    assert "erin-clear-pw" not in stored
    creds = json.loads(stored)["users"]["erin"]
    assert sorted(creds) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    for cred in creds.values():
        assert set(cred) == {"salt", "iterations", "stored_key", "server_key"}
        assert cred["iterations"] >= 4096
    b = BrokerThread(data, settings).start()
    try:
        conf = client_config(
            b, pki, "SASL_SSL", mechanism="SCRAM-SHA-512", user="erin", password="erin-clear-pw"
        )
        assert len(round_trip(conf, "after-restart", 2)) == 2
    finally:
        b.stop()


def test_user_quotas_apply_to_sasl_users_and_metrics_count(broker: BrokerThread, pki: Pki) -> None:
    assert broker.broker is not None
    core = broker.broker
    with httpx.Client(base_url=broker.admin_url, timeout=30) as http:
        body = {"mechanism": "SCRAM-SHA-256", "password": "frank-pw"}
        assert http.put("/v1/users/frank", json=body).status_code == 200
    core.quotas.alter(QuotaEntity.of({"user": "frank"}), {"producer_byte_rate": 1_000_000})
    conf = client_config(
        broker, pki, "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", user="frank", password="frank-pw"
    )
    conf["client.id"] = "frank-app"
    assert len(round_trip(conf, "quota-frank", 3)) == 3

    def observed() -> float | None:
        return core.quota_manager.observed(PRODUCE, "frank", "frank-app")

    rate = broker.call(observed)
    assert rate is not None and rate > 0  # frank's produce bytes counted under his quota
    bad = dict(conf, **{"sasl.password": "nope", "reconnect.backoff.ms": 10000})
    assert first_error(bad).code() == -169
    snapshot = validate_snapshot(broker.call(core.metrics_snapshot))
    auth = snapshot["authentication"]
    assert auth["successful_by_mechanism"]["SCRAM-SHA-256"] >= 1
    assert auth["failed_by_mechanism"]["SCRAM-SHA-256"] >= 1
    text = broker.call(core.prometheus_text).decode()
    assert 'kafka_server_failed_authentication_total{mechanism="SCRAM-SHA-256"}' in text
