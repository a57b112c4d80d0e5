"""The replication throttles' parts that need no cluster (KIP-73): the throttled-replicas
lists as Kafka's ThrottledReplicaListValidator and TopicConfigHandler read them, the keys
in the config tables, and the throttle's rate and decisions on a fake clock."""

from __future__ import annotations

import pytest

from trio_broker.server.config.broker_config import BrokerConfig
from trio_broker.server.config.changes import ChangeRefused, plan_broker_change
from trio_broker.server.config.configdef import ConfigError, ConfigSource
from trio_broker.server.config.topic_config import (
    effective_topic_config,
    throttled_replicas_problem,
    validate_topic_configs,
)
from trio_broker.server.replication.throttles import (
    NO_THROTTLE,
    ReplicationQuota,
    ReplicationQuotas,
    split_list,
    throttled_partitions,
)

LEADER = "leader.replication.throttled.replicas"
FOLLOWER = "follower.replication.throttled.replicas"


@pytest.mark.parametrize(
    ("value", "broker", "partitions"),
    [
        ("", 0, frozenset()),
        ("*", 3, None),
        (" * ", 3, None),
        ("0:1,1:2,2:1", 1, frozenset({0, 2})),
        ("0:1, 1:2 ,2:1", 2, frozenset({1})),
        ("0:1,1:2", 7, frozenset()),
        ("10:0", 0, frozenset({10})),
    ],
)
def test_a_broker_takes_the_entries_naming_it(
    value: str, broker: int, partitions: frozenset[int] | None
) -> None:
    items = split_list(value)
    assert throttled_replicas_problem(items) is None
    assert throttled_partitions(items, broker) == partitions


@pytest.mark.parametrize("value", ["*,0:1", "0:1,*", "all", "0:x", "0-1", "0:1:2", ":1", "-1:0"])
def test_bad_lists_are_refused_naming_the_key(value: str) -> None:
    for key in (LEADER, FOLLOWER):
        with pytest.raises(ConfigError) as info:
            validate_topic_configs({key: value})
        assert info.value.key == key
        assert str(info.value).startswith(f"{key}={value}: must be the literal '*'")


def test_the_topic_keys_default_to_no_throttled_replica() -> None:
    entries = effective_topic_config(BrokerConfig(), {FOLLOWER: "0:1"})
    assert (entries[LEADER].text, entries[LEADER].source) == ("", ConfigSource.DEFAULT_CONFIG)
    assert (entries[FOLLOWER].text, entries[FOLLOWER].source) == ("0:1", ConfigSource.TOPIC_CONFIG)
    assert validate_topic_configs({LEADER: "", FOLLOWER: "*"}) == {LEADER: None, FOLLOWER: ("*",)}


def test_the_broker_keys_rates_dynamic_windows_static() -> None:
    config = BrokerConfig()
    assert config["leader.replication.throttled.rate"] == NO_THROTTLE
    assert config["follower.replication.throttled.rate"] == NO_THROTTLE
    assert config["replication.quota.window.num"] == 11
    assert config["replication.quota.window.size.seconds"] == 1
    both = {"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "5"}
    new = plan_broker_change(config, both)
    assert new["leader.replication.throttled.rate"] == 1000
    default = plan_broker_change(config, both, cluster_default=True)
    assert default["follower.replication.throttled.rate"] == 5
    with pytest.raises(ChangeRefused, match=r"follower\.replication\.throttled\.rate=-1"):
        plan_broker_change(config, {"follower.replication.throttled.rate": "-1"})
    with pytest.raises(ChangeRefused, match="restart"):
        plan_broker_change(config, {"replication.quota.window.num": "5"})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def quota(rate: int, clock: Clock, broker: int = 1) -> ReplicationQuota:
    q = ReplicationQuota("follower", broker, lambda: rate, samples=11, window_s=1.0, clock=clock)
    q.note_topic("t", {FOLLOWER: "0:1,1:2"})
    return q


def test_the_rate_holds_from_the_first_second_not_after_ten() -> None:
    clock = Clock()
    q = quota(1_000_000, clock)
    assert not q.exceeded()
    q.record(1_000_000)  # one window's worth: at the rate, not over it
    assert not q.exceeded()
    q.record(1)
    assert q.exceeded()  # Kafka's Rate would allow ten windows' worth first
    clock.now += 1.5
    assert not q.exceeded()  # 1 MB over 1.5 s
    # A steady sender is held to the rate: what it may send over 20 s is about 20 MB.
    sent = 0
    for _ in range(200):
        clock.now += 0.1
        if not q.exceeded():
            q.record(250_000)
            sent += 250_000
    assert 19_000_000 <= sent <= 21_500_000
    assert q.byte_rate() == pytest.approx(1_000_000, rel=0.15)


def test_holding_back_needs_a_throttled_replica_out_of_the_isr_over_the_rate() -> None:
    clock = Clock()
    q = quota(1000, clock)
    assert not q.holds("t", 0, in_sync=False)  # under the rate
    q.record(5000)
    assert q.holds("t", 0, in_sync=False)
    assert not q.holds("t", 0, in_sync=True)  # in-sync replicas are never throttled
    assert not q.holds("t", 1, in_sync=False)  # 1:2 names another broker
    assert not q.holds("other", 0, in_sync=False)
    assert q.held_back == 1
    clock.now += 30  # the samples expire
    assert not q.holds("t", 0, in_sync=False)


def test_no_rate_means_no_throttle_and_the_lists_follow_the_configs() -> None:
    clock = Clock()
    q = quota(NO_THROTTLE, clock)
    q.record(10**12)
    assert not q.exceeded() and not q.holds("t", 0, in_sync=False)
    assert q.figures([("t", 0), ("t", 1), ("u", 0)]) == {
        "rate_limit": None,
        "byte_rate": pytest.approx(10**12, rel=0.01),
        "throttled_partitions": 1,
        "bytes": 10**12,
        "held_back": 0,
    }
    q.note_topic("t", {FOLLOWER: "*"})
    assert q.is_throttled("t", 5)
    q.note_topic("t", {})
    assert not q.is_throttled("t", 0)
    q.note_topic("t", {FOLLOWER: "0:1"})
    q.forget_topic("t")
    assert not q.is_throttled("t", 0)


def test_each_side_reads_its_own_list_and_rate() -> None:
    config = {"leader.replication.throttled.rate": 10, "follower.replication.throttled.rate": 20}
    quotas = ReplicationQuotas(2, lambda: config, samples=11, window_s=1.0, clock=Clock())
    quotas.note_topic("t", {LEADER: "0:2", FOLLOWER: "1:2"})
    assert quotas.leader.is_throttled("t", 0) and not quotas.leader.is_throttled("t", 1)
    assert quotas.follower.is_throttled("t", 1) and not quotas.follower.is_throttled("t", 0)
    assert (quotas.leader.bound, quotas.follower.bound) == (10, 20)
    config["leader.replication.throttled.rate"] = 30  # a dynamic change applies at once
    assert quotas.leader.bound == 30
    quotas.leader.record_sent([("t", 0, 100), ("t", 1, 1000)])  # only t-0 is throttled
    assert quotas.leader.bytes_total == 100
