"""The quota store: entities, Kafka's value rules, atomic persistence, reload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trio_broker.server.quotas.store import (
    QUOTA_KEYS,
    EntityType,
    QuotaEntity,
    QuotaError,
    QuotaStore,
)


def test_entities_are_canonical_and_print_as_kafka_does() -> None:
    a = QuotaEntity.of({"client-id": "app", "user": "alice"})
    b = QuotaEntity.of({"user": "alice", "client-id": "app"})
    assert a == b and hash(a) == hash(b)
    assert a.types == (EntityType.USER, EntityType.CLIENT_ID)
    assert str(a) == "user=alice,client-id=app"
    assert str(QuotaEntity.client(None)) == "client-id=<default>"
    assert QuotaEntity.client(None).as_dict() == {"client-id": None}
    with pytest.raises(QuotaError, match="unknown entity type 'ip'"):
        QuotaEntity.of({"ip": "1.2.3.4"})
    with pytest.raises(QuotaError):
        QuotaEntity.of({})


def test_values_follow_kafkas_types(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path)
    entity = QuotaEntity.client("app")
    assert store.validate(entity, {"producer_byte_rate": 1024.0}) == {"producer_byte_rate": 1024}
    assert store.validate(entity, {"request_percentage": 150}) == {"request_percentage": 150.0}
    for key, value, why in [
        ("producer_byte_rate", 0, "positive"),
        ("consumer_byte_rate", -1, "positive"),
        ("consumer_byte_rate", 10.5, "whole"),
        ("producer_byte_rate", 2**63, "at most"),
        ("request_percentage", float("inf"), "positive"),
        ("request_percentage", True, "positive"),
        ("request_percentage", "5", "positive"),
        ("controller_mutation_rate", 1, "unknown quota key"),
    ]:
        with pytest.raises(QuotaError, match=why) as caught:
            store.validate(entity, {key: value})
        assert caught.value.key == key
    assert set(QUOTA_KEYS) == {"producer_byte_rate", "consumer_byte_rate", "request_percentage"}


def test_kafkas_entity_shapes_are_accepted(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path)
    for entity in ({"user": "alice"}, {"user": None}, {"user": "bob", "client-id": "app"}):
        store.alter(QuotaEntity.of(entity), {"producer_byte_rate": 1})
    assert len(store.entries()) == 3
    with pytest.raises(QuotaError, match="unknown entity type"):
        store.alter(QuotaEntity.of({"ip": "127.0.0.1"}), {"producer_byte_rate": 1})


def test_alter_merges_removes_and_persists(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path)
    app, default = QuotaEntity.client("app"), QuotaEntity.client(None)
    assert store.alter(app, {"producer_byte_rate": 100}) == {"producer_byte_rate": 100}
    assert store.alter(app, {"consumer_byte_rate": 200, "producer_byte_rate": None}) == {
        "consumer_byte_rate": 200
    }
    store.alter(default, {"request_percentage": 10})
    assert [e for e, _ in store.entries()] == [default, app]
    on_disk = json.loads((tmp_path / "quotas.json").read_text())
    assert on_disk == {
        "version": 1,
        "quotas": [
            {"entity": {"client-id": None}, "values": {"request_percentage": 10.0}},
            {"entity": {"client-id": "app"}, "values": {"consumer_byte_rate": 200}},
        ],
    }
    assert not list(tmp_path.glob(".*.tmp"))

    again = QuotaStore(tmp_path)
    again.load()
    assert again.entries() == store.entries()

    assert store.alter(app, {"consumer_byte_rate": None}) == {}  # no values left: removed
    assert store.get(app) is None
    assert store.delete(default) == {"request_percentage": 10.0}
    assert store.delete(default) is None
    assert json.loads((tmp_path / "quotas.json").read_text())["quotas"] == []


def test_a_refused_change_changes_nothing(tmp_path: Path) -> None:
    store = QuotaStore(tmp_path)
    app = QuotaEntity.client("app")
    store.alter(app, {"producer_byte_rate": 100})
    with pytest.raises(QuotaError):
        store.alter(app, {"producer_byte_rate": 5, "consumer_byte_rate": -1})
    assert store.get(app) == {"producer_byte_rate": 100}


def test_a_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = QuotaStore(tmp_path)
    app = QuotaEntity.client("app")
    store.alter(app, {"producer_byte_rate": 100})

    def broken(path: Path, data: bytes) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("trio_broker.server.datadir.json_store.atomic_write", broken)
    with pytest.raises(OSError):
        store.alter(app, {"producer_byte_rate": 5})
    assert store.get(app) == {"producer_byte_rate": 100}


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '{"version": 2, "quotas": []}',
        '{"version": 1, "quotas": [{"entity": {"ip": "x"}, "values": {}}]}',
        '{"version": 1, "quotas": [{"entity": {"client-id": "a"}, "values": {"x": 1}}]}',
        '{"version": 1, "quotas": [{"entity": {"client-id": "a"}}]}',
        "[]",
    ],
)
def test_a_damaged_file_stops_start_up(tmp_path: Path, text: str) -> None:
    (tmp_path / "quotas.json").write_text(text)
    with pytest.raises(RuntimeError, match="not a valid quota file"):
        QuotaStore(tmp_path).load()
