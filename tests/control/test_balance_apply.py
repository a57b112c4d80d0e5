"""``python -m spark_jobs.balance ... --apply`` on a real ZooKeeper cluster: the sampler
measures the tables from the brokers, the plan is applied through Kafka's own APIs
(AlterPartitionReassignments with throttles, ElectLeaders), nothing acknowledged is lost,
the throttles are gone afterwards, at most --max-concurrent-moves move at once, and the
execution stops when the cluster degrades. Real ZooKeeper, broker processes, Kafka
clients; the balance job runs as its own process, as an operator runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from trio_broker.protocol.messages.configs import DescribeConfigsRequest
from trio_broker.tools.client import WireClient

from ..support.brokers import BrokerProcess
from .test_replication import bootstrap, consume_all, produce, start, stop_all
from .test_zookeeper_cluster import until

ROOT = Path(__file__).resolve().parents[2]
THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
DYNAMIC = (1, 2, 3)  # DescribeConfigs' sources: dynamic topic, broker, default broker
SETTINGS = ("admin.listeners=http://127.0.0.1:0", "metrics.window.seconds=5")


def admins(brokers: dict[int, BrokerProcess]) -> list[str]:
    out = []
    for b in brokers.values():
        if b.proc is not None and b.proc.poll() is None:
            assert b.admin_url is not None
            out += ["--admin", b.admin_url]
    return out


def cluster(b: BrokerProcess) -> dict[str, Any]:
    assert b.admin_url is not None
    found: dict[str, Any] = httpx.get(f"{b.admin_url}/v1/cluster", timeout=10).json()
    return found


def job(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def sample_and_plan(
    brokers: dict[int, BrokerProcess], trends: Path, *command: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    sampled = job(
        "spark_jobs.balance.sample",
        *admins(brokers),
        *("--out", str(trends), "--seconds", "4", "--interval", "2"),
    )
    assert sampled.returncode == 0, sampled.stderr[-3000:]
    # the brokers report per-partition counters (issue 32): the sampler uses them
    assert "partition rates: per-partition counters" in sampled.stdout
    done = job(
        "spark_jobs.balance",
        *("--in", str(trends), "--engine", "python", *admins(brokers)),
        *("--effect-seconds", "1", *command),
    )
    plan: dict[str, Any] = json.loads((trends / "balance" / "plan.json").read_text())
    return done, plan


def watch_progress(path: Path) -> tuple[list[str], threading.Event]:
    """The execution states plan.json goes through while the job runs (read every 20 ms,
    until the event is set): another process's file, so polled."""
    seen: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.02):
            try:
                state = json.loads(path.read_text()).get("execution", {}).get("status")
            except (OSError, ValueError):
                continue  # not there yet
            if state and (not seen or seen[-1] != state):
                seen.append(state)

    threading.Thread(target=watch, daemon=True).start()
    return seen, stop


def throttles_set(brokers: dict[int, BrokerProcess], topic: str) -> dict[str, str | None]:
    """Every throttle key set on a broker (asked of that broker) or on the topic."""
    found = {}
    for i, b in brokers.items():
        if b.proc is None or b.proc.poll() is not None:
            continue
        for kind, name in ((4, str(i)), (2, topic)):
            res = DescribeConfigsRequest.Resource(
                resource_type=kind, resource_name=name, configuration_keys=None
            )
            with WireClient(b.bootstrap) as wire:
                (result,) = wire.request(DescribeConfigsRequest(resources=[res]), 1).results
            for c in result.configs:
                if c.name in THROTTLE_KEYS and c.config_source in DYNAMIC:
                    found[f"{name}/{c.name}"] = c.value
    return found


def create(brokers: dict[int, BrokerProcess], topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
    spec = NewTopic(topic, len(assignment), replica_assignment=assignment)
    admin.create_topics([spec])[topic].result(30)
    until(
        f"{topic} in sync everywhere",
        lambda: (
            all(
                len(p["isr"]) == len(p["replicas"])
                for p in cluster(brokers[0])["partitions"]
                if p["topic"] == topic
            )
            and sum(1 for p in cluster(brokers[0])["partitions"] if p["topic"] == topic)
            == len(assignment)
        ),
    )


def test_balance_apply_spreads_the_leadership_of_one_broker(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, _ = zk
    brokers = start(tmp_path, connect, [0, 1, 2], *SETTINGS)
    try:
        create(brokers, "orders", [[0, 1, 2], [0, 2, 1]] * 3)
        values = [b"m%05d" % i for i in range(3000)]
        reports = produce(bootstrap(brokers), "orders", values, acks="all")
        assert all(err is None for err, _ in reports)

        seen, stop = watch_progress(tmp_path / "trends" / "balance" / "plan.json")
        try:
            done, plan = sample_and_plan(brokers, tmp_path / "trends", "--apply", "balance")
        finally:
            stop.set()
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert plan["summary"]["replica_moves"] == 0 and plan["summary"]["leadership_moves"] >= 3
        # while it ran, plan.json said so (what the dashboard shows as its progress)
        assert "running" in seen, seen
        execution = plan["execution"]
        assert execution["status"] == "done"
        assert all(m["status"] == "done" for m in execution["moves"])
        assert all(e["outcome"] == "ok" for e in execution["elections"])
        assert "measured effect" in done.stdout

        # Each partition is led as planned: broker 0 within the leader count band (mean 2,
        # 1..3 leaders a broker), the rest by the others.
        planned = {(m["topic"], m["partition"]): m["leader_after"] for m in plan["moves"]}
        orders = [p for p in cluster(brokers[1])["partitions"] if p["topic"] == "orders"]
        assert {(p["topic"], p["partition"]): p["leader"] for p in orders} == {
            (p["topic"], p["partition"]): planned.get((p["topic"], p["partition"]), 0)
            for p in orders
        }
        leaders = [p["leader"] for p in orders]
        assert all(1 <= leaders.count(b) <= 3 for b in (0, 1, 2)), leaders
        assert throttles_set(brokers, "orders") == {}  # a change of leaders copies nothing
        got = consume_all(bootstrap(brokers), "orders", 6, len(values))
        assert sorted(v for vs in got.values() for v in vs) == values
        lines = (tmp_path / "trends" / "balance" / "actions.jsonl").read_text().splitlines()
        assert len(lines) == 1 and json.loads(lines[0])["status"] == "done"
    finally:
        stop_all(brokers)


def test_remove_broker_apply_empties_it_with_throttles_that_are_then_removed(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, _ = zk
    brokers = start(tmp_path, connect, [0, 1, 2], *SETTINGS)
    try:
        create(brokers, "orders", [[0, 1], [1, 2], [2, 0], [1, 0], [2, 1], [0, 2]])
        values = [b"m%05d" % i for i in range(3000)]
        reports = produce(bootstrap(brokers), "orders", values, acks="all")
        assert all(err is None for err, _ in reports)

        done, plan = sample_and_plan(
            brokers,
            tmp_path / "trends",
            *("--apply", "--max-concurrent-moves", "2", "--throttle", "50000000"),
            *("remove-broker", "1"),
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        execution = plan["execution"]
        assert execution["status"] == "done" and execution["max_in_flight"] <= 2
        assert execution["throttle"]["rate"] == 50_000_000
        assert 1 in execution["throttle"]["brokers"] and execution["throttle"]["errors"] == []
        assert execution["throttle_restore_failed"] == []

        view = cluster(brokers[0])
        orders = [p for p in view["partitions"] if p["topic"] == "orders"]
        assert all(
            1 not in p["replicas"] and sorted(p["isr"]) == sorted(p["replicas"]) for p in orders
        )
        assert throttles_set(brokers, "orders") == {}
        # Broker 1 holds nothing now: stopping it loses nothing acknowledged.
        brokers[1].proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        brokers[1].proc.wait(30)  # type: ignore[union-attr]
        got = consume_all(bootstrap(brokers), "orders", 6, len(values))
        assert sorted(v for vs in got.values() for v in vs) == values
    finally:
        stop_all(brokers)


def test_the_execution_stops_when_a_broker_dies_under_it(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2, 3], *SETTINGS)
    try:
        # Twelve partitions to move off broker 1, 2 MB each, one at a time at 1 MB/s.
        create(brokers, "big", [[1, 0], [1, 2], [1, 3]] * 4)
        value = b"v" * 1000
        produce(bootstrap(brokers), "big", [value] * 24_000, acks="all", linger_ms=20)
        trends = tmp_path / "trends"
        sampled = job(
            "spark_jobs.balance.sample",
            *admins(brokers),
            *("--out", str(trends), "--seconds", "2", "--interval", "2"),
        )
        assert sampled.returncode == 0, sampled.stderr[-3000:]
        command = [
            *("--in", str(trends), "--engine", "python", *admins(brokers), "--apply"),
            *("--throttle", "1000000", "--max-concurrent-moves", "1"),
            *("--degraded-grace-seconds", "1", "--move-timeout-seconds", "30"),
            *("--effect-seconds", "0", "remove-broker", "1"),
        ]
        runner = subprocess.Popen(
            [sys.executable, "-m", "spark_jobs.balance", *command],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

        def moving() -> bool:
            node = json.loads(client.get("/brokers/topics/big")[0])
            return bool(node.get("adding_replicas"))

        until("a move under way", moving, timeout=60)
        brokers[2].kill()  # a broker dies: the cluster degrades
        out, _ = runner.communicate(timeout=120)
        assert runner.returncode == 1, out[-3000:]
        execution = json.loads((trends / "balance" / "plan.json").read_text())["execution"]
        assert execution["status"] == "stopped", out[-3000:]
        (event,) = [e for e in execution["events"] if "stopped" in e]
        assert "the cluster degraded: broker(s) [2] left the cluster" in event
        statuses = [m["status"] for m in execution["moves"]]
        assert statuses.count("not started") >= 4, statuses
        assert execution["max_in_flight"] == 1
        assert "execution: stopped" in out
    finally:
        stop_all(brokers)


def test_a_plan_with_an_unmet_hard_goal_is_refused_and_nothing_moves(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, _ = zk
    brokers = start(tmp_path, connect, [0, 1, 2], *SETTINGS)
    try:
        create(brokers, "orders", [[0, 1, 2], [1, 2, 0]])
        before = cluster(brokers[0])["partitions"]
        # Replication factor 3 on three brokers: broker 1 cannot be emptied.
        done, plan = sample_and_plan(brokers, tmp_path / "trends", "--apply", "remove-broker", "1")
        assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
        assert plan["unmet_hard_goals"] == ["replica placement"]
        assert plan["execution"]["status"] == "refused"
        assert "hard goal(s) unmet: replica placement" in plan["execution"]["reason"]
        assert cluster(brokers[0])["partitions"] == before
    finally:
        stop_all(brokers)


def test_detect_with_self_heal_recreates_a_dead_brokers_replicas(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, _ = zk
    brokers = start(tmp_path, connect, [0, 1, 2, 3], *SETTINGS)
    try:
        create(brokers, "orders", [[0, 3], [1, 3], [2, 3], [0, 1]])
        values = [b"m%05d" % i for i in range(2000)]
        reports = produce(bootstrap(brokers), "orders", values, acks="all")
        assert all(err is None for err, _ in reports)
        trends = tmp_path / "trends"
        sampled = job(
            "spark_jobs.balance.sample",
            *admins(brokers),
            *("--out", str(trends), "--seconds", "2", "--interval", "2"),
        )
        assert sampled.returncode == 0, sampled.stderr[-3000:]
        everyone = admins(brokers)
        brokers[3].kill()
        until("broker 3 gone", lambda: 3 not in [b["id"] for b in cluster(brokers[0])["brokers"]])
        detect = [*("--in", str(trends), "--engine", "python", *everyone)]
        detect += ["--down-after-seconds", "1", "--effect-seconds", "0", "detect"]

        found = job("spark_jobs.balance", *detect)  # without --self-heal: a plan, not applied
        assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-3000:]
        assert "anomaly: broker down: broker 3 is not live" in found.stdout
        plan = json.loads((trends / "balance" / "plan.json").read_text())
        assert plan["command"] == "fix-offline" and "execution" not in plan
        assert all(3 in p["replicas"] for p in cluster(brokers[0])["partitions"][:3])

        healed = job("spark_jobs.balance", *detect, "--self-heal")
        assert healed.returncode == 0, healed.stdout[-3000:] + healed.stderr[-3000:]
        plan = json.loads((trends / "balance" / "plan.json").read_text())
        assert plan["execution"]["status"] == "done", healed.stdout[-3000:]
        orders = [p for p in cluster(brokers[0])["partitions"] if p["topic"] == "orders"]
        assert all(3 not in p["replicas"] and len(p["replicas"]) == 2 for p in orders)
        until(
            "every replica in sync again",
            lambda: all(
                sorted(p["isr"]) == sorted(p["replicas"])
                for p in cluster(brokers[0])["partitions"]
                if p["topic"] == "orders"
            ),
        )
        got = consume_all(bootstrap(brokers), "orders", 4, len(values))
        assert sorted(v for vs in got.values() for v in vs) == values
    finally:
        stop_all(brokers)
