"""Kafka's incremental operations on current values (pure): SET, DELETE, APPEND and
SUBTRACT on list keys, starting from the value in force, and the refusals; the two levels of
run-time broker changes (this broker's own over the cluster-wide default), their store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trio_broker.apis.services import broker_name_problem
from trio_broker.server.config.broker_config import BrokerConfig, ConfigSource
from trio_broker.server.config.changes import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    ChangeRefused,
    Refusal,
    incremental,
    plan_broker_change,
)
from trio_broker.server.config.dynamic import DynamicConfigStore, StoredChanges


def test_append_and_subtract_work_on_the_list_in_force() -> None:
    effective = {"log.cleanup.policy": "delete", "listeners": "A://h:1"}
    changes = incremental(
        {},
        [("log.cleanup.policy", APPEND, "compact,delete"), ("num.io.threads", SET, "4")],
        topic=False,
        effective=effective,
    )
    assert changes == {"log.cleanup.policy": "delete,compact", "num.io.threads": "4"}
    assert incremental(
        {"cleanup.policy": "delete,compact"},
        [("cleanup.policy", SUBTRACT, "delete"), ("retention.ms", DELETE, None)],
        topic=True,
        effective={},
    ) == {"cleanup.policy": "compact", "retention.ms": None}


@pytest.mark.parametrize(
    ("operations", "kind"),
    [
        ([("retention.ms", APPEND, "1")], Refusal.INVALID),  # not a list
        ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], Refusal.REQUEST),
        ([("retention.ms", 9, "1")], Refusal.REQUEST),
    ],
)
def test_refusals(operations: list[tuple[str, int, str | None]], kind: Refusal) -> None:
    with pytest.raises(ChangeRefused) as info:
        incremental({}, operations, topic=True, effective={})
    assert info.value.kind is kind and info.value.key == "retention.ms"


# ---- the two levels of run-time broker changes (Kafka's per-broker and cluster default)


def test_this_brokers_setting_wins_over_the_cluster_default_which_wins_over_static() -> None:
    static = BrokerConfig({"num.io.threads": "4", "log.retention.hours": "100"})
    config = plan_broker_change(
        static, {"num.io.threads": "3", "log.retention.ms": "5000"}, cluster_default=True
    )
    assert (config["num.io.threads"], config["log.retention.ms"]) == (3, 5000)
    assert config.source("num.io.threads") is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert config.origin("log.retention.ms") == "dynamic-default"
    assert config.dynamic_raw == {}
    config = plan_broker_change(config, {"num.io.threads": "5"})
    assert config["num.io.threads"] == 5
    assert config.source("num.io.threads") is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert config.default_raw == {"num.io.threads": "3", "log.retention.ms": "5000"}
    # Removing one level's change lets the level below count.
    config = plan_broker_change(config, {"num.io.threads": None})
    assert (config["num.io.threads"], config.origin("num.io.threads")) == (3, "dynamic-default")
    config = plan_broker_change(config, {"num.io.threads": None}, cluster_default=True)
    assert (config["num.io.threads"], config.origin("num.io.threads")) == (4, "file")


def test_the_cluster_default_describes_only_its_own_keys_and_refuses_static_ones() -> None:
    config = plan_broker_change(
        BrokerConfig({"num.io.threads": "4"}), {"message.max.bytes": "2000"}, cluster_default=True
    )
    config = plan_broker_change(config, {"num.io.threads": "6"})
    entries = config.describe(cluster_default=True)
    assert [(e.name, e.text, e.source) for e in entries.values()] == [
        ("message.max.bytes", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]
    with pytest.raises(ChangeRefused) as refused:
        plan_broker_change(config, {"log.dirs": "/x"}, cluster_default=True)
    assert refused.value.kind is Refusal.STATIC


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", None),
        ("0", None),
        ("7", "Unexpected broker id, expected 0 or empty string, but received 7"),
        ("b0", "Broker id must be an integer, but it is: b0"),
    ],
)
def test_broker_resource_names(name: str, problem: str | None) -> None:
    assert broker_name_problem(name, 0) == problem
    # AlterConfigs words it without the empty string, as Kafka's does.
    altering = problem and problem.replace(" or empty string", "")
    assert broker_name_problem(name, 0, describe=False) == altering


def test_the_store_keeps_both_levels_and_reads_a_one_level_file(tmp_path: Path) -> None:
    store = DynamicConfigStore(tmp_path)
    assert store.load() == StoredChanges({}, {})
    store.document.write({"settings": {"num.io.threads": "3"}})  # as written before
    assert store.load() == StoredChanges({"num.io.threads": "3"}, {})
    store.save({"num.io.threads": "3"}, {"message.max.bytes": "2000"})
    assert store.load() == StoredChanges({"num.io.threads": "3"}, {"message.max.bytes": "2000"})
    stored = json.loads(store.path.read_text())
    assert stored["cluster_default"] == {"message.max.bytes": "2000"}
