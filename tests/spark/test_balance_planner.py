"""The balance planner on hand-made rows of the contract's tables (no Spark, no broker):
each goal moves what it should and nothing a higher goal forbids, a goal the plan cannot
meet is named, the same input gives the same plan, and anomalies are found."""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

from spark_jobs.balance import anomaly, effect
from spark_jobs.balance.cli import make_plan, state_from_tables
from spark_jobs.balance.model import ClusterState, PartitionState, Scope, Settings, build
from spark_jobs.balance.monitor import Observed, observe_rows
from spark_jobs.balance.report import render, same_plan

from .balance_rows import BUCKET_S, T0, B, P, rows, skewed

WINDOW = 600.0
SETTINGS = Settings()


def observe(brokers: dict[int, B], parts: dict[Any, P], **kw: Any) -> Observed:
    brows, prows = rows(brokers, parts, **kw)
    return observe_rows(brows, prows, WINDOW, history_s=3600)


def plan(
    brokers: dict[int, B],
    parts: dict[Any, P],
    command: str = "balance",
    target: list[int] | None = None,
    settings: Settings = SETTINGS,
    state: ClusterState | None = None,
) -> dict[str, Any]:
    observed = observe(brokers, parts)
    state = state or state_from_tables(observed, 300)
    doc = make_plan(command, target or [], observed, state, settings)
    assert render(doc)  # prints without error
    return doc


def after(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {b["broker_id"]: b["after"] for b in doc["brokers"]}


def goal(doc: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [g for g in doc["goals"] if g["name"] == name]
    return found


def test_skewed_leadership_is_spread_by_preferred_leader_moves_alone() -> None:
    brokers, parts = skewed(12, rf=3)
    doc = plan(brokers, parts)
    leaders = {b: f["leaders"] for b, f in after(doc).items()}
    assert leaders == {0: 4, 1: 4, 2: 4}
    # Every broker holds every partition: only leadership moves, no byte copied.
    assert doc["summary"]["replica_moves"] == 0 and doc["summary"]["bytes_to_copy"] == 0
    assert len(doc["elections"]) == doc["summary"]["leadership_moves"] == 8
    for mv in doc["moves"]:
        assert sorted(mv["replicas_after"]) == sorted(mv["replicas_before"])
        assert mv["replicas_after"][0] == mv["leader_after"] != 0
        # Leader count brings broker 0 within its band (3..5), bytes out the rest of the way.
        assert mv["reasons"][0].startswith(
            ("leader count balance: broker 0 at", "bytes-out balance: broker 0 at")
        ), mv["reasons"]
    assert goal(doc, "leader count balance")["status"] == "met"
    # The slow broker's io threads are expected to be much less busy; the others more.
    before = {b["broker_id"]: b["before"] for b in doc["brokers"]}
    assert after(doc)[0]["io_busy"] < 0.6 * before[0]["io_busy"]
    assert all(after(doc)[b]["io_busy"] > before[b]["io_busy"] for b in (1, 2))


def test_the_slow_broker_costs_more_per_unit_of_work_and_a_new_one_gets_the_median() -> None:
    brokers, parts = skewed(6, rf=2)
    brokers[3] = B(buckets=[])  # live, no rows: a broker just added
    observed = observe(brokers, parts)
    state = ClusterState(
        {0: None, 1: None, 2: None, 3: None},
        {p.key: PartitionState(p.replicas, p.leader) for p in observed.partitions},
    )
    model = build(observed, state, SETTINGS, Scope())
    io = {b.id: b.io_cost for b in model.brokers.values()}
    assert io[0] > 2 * io[1] and io[1] == io[2]
    assert model.brokers[3].cost_sources == {
        "loop": "median of the others",
        "io": "median of the others",
    }
    # Observed busy ratios are what the model gives back at today's placement.
    assert abs(model.brokers[0].io_busy - 0.97) < 1e-9
    assert abs(model.brokers[1].loop_busy - 0.2) < 1e-9


def test_the_same_tables_give_the_same_plan_whatever_the_row_order() -> None:
    brokers, parts = skewed(12, rf=2)
    brows, prows = rows(brokers, parts)
    docs = []
    for seed in (1, 2, 3):
        random.Random(seed).shuffle(brows)
        random.Random(seed).shuffle(prows)
        observed = observe_rows(brows, prows, WINDOW)
        docs.append(make_plan("balance", [], observed, state_from_tables(observed, 300), SETTINGS))
    assert docs[0]["moves"], "the skewed cluster needs moves"
    assert same_plan(docs[0], docs[1]) and same_plan(docs[1], docs[2])
    assert docs[0]["generated_at"] and not same_plan(docs[0], {**docs[0], "moves": []})


def test_add_broker_moves_replicas_onto_the_new_broker_only() -> None:
    brokers = {i: B(loop_busy=0.4, io_idle=0.6) for i in range(3)}
    brokers[3] = B(buckets=[])
    parts = {
        ("t", i): P([i % 3, (i + 1) % 3], bytes_in=20_000.0, produce_rps=100.0, size=10**6)
        for i in range(12)
    }
    observed = observe(brokers, parts)
    state = ClusterState(
        {0: None, 1: None, 2: None, 3: None},
        {p.key: PartitionState(p.replicas, p.leader) for p in observed.partitions},
    )
    doc = make_plan("add-broker", [3], observed, state, SETTINGS)
    moved = [mv for mv in doc["moves"] if mv["kind"] == "replicas"]
    assert moved and all(mv["adding"] == [3] for mv in moved)
    assert after(doc)[3]["replicas"] >= 5  # 24 replicas over 4 brokers: 6 each, within 10%
    assert goal(doc, "replica count balance")["status"] == "met"
    assert {b["broker_id"]: b["role"] for b in doc["brokers"]}[3] == "new"
    assert doc["summary"]["bytes_to_copy"] == len(moved) * 10**6


def test_remove_broker_leaves_it_no_replica_and_plans_the_leaders_away() -> None:
    brokers, parts = skewed(9, rf=2)
    doc = plan(brokers, parts, "remove-broker", [1])
    assert after(doc)[1]["replicas"] == 0 and after(doc)[1]["leaders"] == 0
    assert goal(doc, "replica placement")["status"] == "met"
    assert doc["unmet_hard_goals"] == []
    for mv in doc["moves"]:
        if mv["kind"] == "replicas":
            assert mv["removing"] == [1] and 1 not in mv["replicas_after"]


def test_a_goal_the_plan_cannot_meet_is_named() -> None:
    # Three brokers, replication factor 3: broker 1 cannot be emptied.
    brokers, parts = skewed(3, rf=3)
    doc = plan(brokers, parts, "remove-broker", [1])
    assert doc["unmet_hard_goals"] == ["replica placement"]
    assert "replica placement" in doc["unmet_goals"]
    g = goal(doc, "replica placement")
    assert g["status"] == "unmet" and g["violations_after"] == ["broker 1 still holds 3 replica(s)"]
    assert "the plan cannot meet: replica placement" in render(doc)


def test_rack_awareness_is_restored_and_no_soft_goal_breaks_it() -> None:
    brokers = {0: B(rack="a"), 1: B(rack="a"), 2: B(rack="b"), 3: B(rack="b")}
    parts = {("t", i): P([0, 1] if i < 4 else [2, 3], size=1000) for i in range(8)}
    doc = plan(brokers, parts)
    assert goal(doc, "rack-aware placement")["status"] == "met"
    final = {(mv["topic"], mv["partition"]): mv["replicas_after"] for mv in doc["moves"]}
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    for key, p in parts.items():
        replicas = final.get(key, p.replicas)
        assert {racks[r] for r in replicas} == {"a", "b"}, (key, replicas)


def test_without_racks_on_every_broker_the_rack_goal_does_not_apply() -> None:
    brokers = {0: B(rack="a"), 1: B(rack=None), 2: B(rack="b")}
    parts = {("t", i): P([0, 1]) for i in range(3)}
    doc = plan(brokers, parts)
    g = goal(doc, "rack-aware placement")
    assert g["status"] == "not applicable" and g["reason"] == "not every live broker has a rack"


def test_a_full_disk_is_relieved_down_to_the_threshold() -> None:
    gb = 10**9
    brokers = {0: B(disk_total=100 * gb, disk_extra=0), 1: B(disk_total=100 * gb)}
    brokers[2] = B(disk_total=100 * gb)
    parts = {("big", i): P([0], size=10 * gb) for i in range(9)}  # 90% of broker 0's disk
    doc = plan(brokers, parts)
    assert goal(doc, "disk capacity")["violations_before"] == ["broker 0: disk 90% used, above 80%"]
    assert goal(doc, "disk capacity")["status"] == "met"
    assert after(doc)[0]["disk_used_ratio"] <= 0.8


def test_replica_capacity_caps_the_replicas_of_a_broker() -> None:
    brokers = {i: B() for i in range(3)}
    parts = {("t", i): P([0]) for i in range(10)}
    doc = plan(brokers, parts, settings=Settings(max_replicas_per_broker=4))
    assert goal(doc, "replica capacity")["status"] == "met"
    assert max(f["replicas"] for f in after(doc).values()) <= 4


def test_fix_offline_recreates_a_dead_brokers_replicas_on_live_ones() -> None:
    brokers = {0: B(), 1: B(), 2: B(buckets=[0])}  # broker 2: gone after the first bucket
    parts = {("t", i): P([i % 3, (i + 1) % 3], size=1000) for i in range(6)}
    observed = observe(brokers, parts)
    state = state_from_tables(observed, down_after_s=2 * BUCKET_S)
    assert sorted(state.brokers) == [0, 1] and state.dead() == [2]
    doc = make_plan("fix-offline", [], observed, state, SETTINGS)
    assert goal(doc, "replica placement")["status"] == "met"
    assert all(2 not in mv["replicas_after"] for mv in doc["moves"])
    assert sum(1 for mv in doc["moves"] if mv["removing"] == [2]) == 4


def test_an_idle_cluster_needs_no_byte_or_busy_moves() -> None:
    brokers = {0: B(loop_busy=0.04, io_idle=0.99), 1: B(loop_busy=0.01, io_idle=1.0)}
    parts = {("t", i): P([0, 1], bytes_in=100.0, produce_rps=1.0) for i in range(2)}
    doc = plan(brokers, parts)
    for name in ("bytes-in balance", "bytes-out balance", "event-loop busy balance"):
        assert goal(doc, name)["status"] == "met", name


def anomalies(brokers: dict[int, B], parts: dict[Any, P], **th: Any) -> list[dict[str, Any]]:
    observed = observe(brokers, parts)
    state = state_from_tables(observed, th.get("down_after_s", 300))
    found, _ = anomaly.detect(observed, state, SETTINGS, anomaly.Thresholds(**th))
    return found


def test_anomalies_a_broker_down_a_goal_violated_a_full_disk() -> None:
    balanced = {i: B() for i in range(3)}
    spread = {("t", i): P([i % 3, (i + 1) % 3]) for i in range(6)}
    assert anomalies(balanced, spread) == []

    down = {0: B(), 1: B(), 2: B(buckets=[0, 1])}
    found = anomalies(down, spread, down_after_s=120)
    assert [(a["kind"], a["broker_id"]) for a in found] == [("broker down", 2)]
    assert found[0]["down_for_s"] == 3 * BUCKET_S
    assert anomalies(down, spread, down_after_s=240) == []  # not down for long enough

    brokers, parts = skewed(6, rf=3)
    kinds = {(a["kind"], a.get("goal")) for a in anomalies(brokers, parts, violated_buckets=5)}
    assert ("goal violated", "leader count balance") in kinds
    assert ("goal violated", "io pool balance") in kinds
    assert not any(
        a["kind"] == "goal violated" for a in anomalies(brokers, parts, violated_buckets=6)
    )

    full = {0: B(disk_total=1000), 1: B(), 2: B()}
    disk = {("t", 0): P([0], size=900)}
    assert [a["kind"] for a in anomalies(full, disk)] == ["disk too full"]


def test_the_last_plans_effect_comes_from_the_buckets_either_side_of_it(tmp_path: Any) -> None:
    t0 = T0.timestamp()
    history = [
        {"bucket": t0 + i * BUCKET_S, "broker_id": b, "leaders": leaders, "io_idle_ratio": idle}
        for i in range(6)
        for b, (leaders, idle) in {
            0: (12 if i < 3 else 4, 0.05 if i < 3 else 0.5),
            1: (0, 0.9),
        }.items()
    ]
    actions = tmp_path / "actions.jsonl"
    start, end = (dt.datetime.fromtimestamp(t0 + s, dt.UTC) for s in (185, 200))
    record = {"started_at": start.isoformat(), "finished_at": end.isoformat(), "status": "done"}
    actions.write_text(json.dumps(record) + "\n" + '{"torn')  # a crash mid-line
    executed = effect.last_execution(actions)
    assert executed == record
    found = effect.table_effect(history, executed)
    assert found is not None
    b0 = found["brokers"][0]
    # Buckets 0-2 ended by the start (185 s), 4-5 began after the end (bucket 3 spans it).
    assert b0["before"]["buckets"] == 3 and b0["after"]["buckets"] == 2
    assert (b0["before"]["leaders"], b0["after"]["leaders"]) == (12.0, 4.0)
    assert (b0["before"]["io_idle_ratio"], b0["after"]["io_idle_ratio"]) == (0.05, 0.5)
    assert "broker 0: loop_busy_ratio None -> None, io_idle_ratio 0.05 -> 0.5" in (
        effect.render_effect(found)
    )
    late = {**record, "finished_at": dt.datetime.fromtimestamp(t0 + 999, dt.UTC).isoformat()}
    assert effect.table_effect(history, late) is None  # no bucket after it yet
