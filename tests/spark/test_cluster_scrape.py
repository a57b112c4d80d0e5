"""Cluster-wide scraping and the per-broker and per-partition trend tables, on a real
three-broker ZooKeeper cluster under a paced produce load and a consumer:
``spark_jobs.scrape --cluster`` started against one broker's admin API writes every
broker's files, a fourth broker's from the moment it joins, and an open gap for one that
stops; the trends job (Spark local[2]) over that scrape writes ``brokers`` and
``partitions`` whose rates add up to exactly what was produced, consumed and replicated,
and run at the paced rate."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from spark_jobs import trends
from spark_jobs.balance.cli import make_plan, state_from_tables
from spark_jobs.balance.model import Settings
from spark_jobs.balance.monitor import observe_files, observe_spark
from trio_broker.tools.zookeeper import ZooKeeperServer

from ..control.test_replication import bootstrap, consume_all, partition_state, start, stop_all
from ..control.test_zookeeper_cluster import broker, until
from .conftest import ROOT

RATES = {0: 50, 1: 30, 2: 20}  # messages per second per partition, paced
SIZE = 200
LOAD_S = 12.0
BUCKET_S = 4
INTERVAL = "0.5"
ADMIN = "admin.listeners=http://127.0.0.1:0"
MS = 0.002  # a snapshot's ts is to the millisecond; a message's send time is read before produce()


@dataclass
class Scrape:
    out: Path
    stderr: str
    exit_code: int
    sent: dict[int, int]  # messages per partition
    leaders: dict[int, int]  # partition -> leader
    sends: list[tuple[int, float, float]]  # partition, wall time handed over, latency (s)


def snapshots(out: Path, broker_id: int) -> list[dict[str, Any]]:
    lines = [
        json.loads(line)
        for path in sorted((out / f"broker={broker_id}").rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    return lines


def held(s: dict[str, Any], topic: str) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in s.get("partitions", []) if p["topic"] == topic}


def paced_load(servers: str) -> list[tuple[int, float, float]]:
    """``RATES`` messages per second per partition for ``LOAD_S`` seconds, each sent at its
    own deadline from the start (no drift), acks=all; per message its partition, the wall
    time it was handed to the client and its latency to the acknowledgement (librdkafka's
    ``Message.latency()``): the broker appended it within that span."""
    sends: list[tuple[int, float, float]] = []
    errors: list[Any] = []

    def delivered(err: Any, msg: Any, at: float) -> None:
        errors.append(err)
        sends.append((msg.partition(), at, msg.latency()))

    p = Producer({"bootstrap.servers": servers, "linger.ms": 5, "acks": "all"})
    schedule = sorted(
        (k / rate, partition)
        for partition, rate in RATES.items()
        for k in range(int(rate * LOAD_S))
    )
    gate = threading.Event()  # never set: a deadline-bounded wait for the next send
    start = time.time()
    for due, partition in schedule:
        delay = start + due - time.time()
        if delay > 0:
            gate.wait(delay)
        at = time.time()
        p.produce(
            "load",
            value=b"x" * SIZE,
            partition=partition,
            on_delivery=lambda err, msg, at=at: delivered(err, msg, at),
        )
        p.poll(0)
    assert p.flush(60) == 0
    assert errors == [None] * len(schedule), errors[:3]
    return sends


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def scrape(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scrape]:
    base = tmp_path_factory.mktemp("cluster_scrape")
    setup = KazooClient(hosts=zookeeper.connect)
    setup.start(30)
    setup.ensure_path("/scrape")
    connect = zookeeper.connect + "/scrape"
    client = KazooClient(hosts=connect)
    client.start(30)
    brokers = start(base, connect, [0, 1, 2], ADMIN)
    out = base / "scraped"
    scraper = subprocess.Popen(
        [
            sys.executable, "-m", "spark_jobs.scrape", "--cluster",
            "--admin", str(brokers[0].admin_url), "--out", str(out),
            "--interval", INTERVAL, "--discover-interval", INTERVAL, "--max-backoff", INTERVAL,
            "--duration", "300",
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )  # fmt: skip
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("load", len(RATES), 3)])["load"].result(30)
        leaders = {p: partition_state(client, "load", p)["leader"] for p in RATES}
        # Every broker's scrape shows the new partitions twice before the load: no load
        # falls in a pair whose earlier snapshot did not have them.
        until(
            "the partitions in two snapshots of every broker",
            lambda: all(
                sum(1 for s in snapshots(out, i) if len(held(s, "load")) == len(RATES)) >= 2
                for i in brokers
            ),
        )
        sends = paced_load(bootstrap(brokers))
        sent = {p: sum(1 for q, _, _ in sends if q == p) for p in RATES}
        got = consume_all(bootstrap(brokers), "load", len(RATES), sum(sent.values()))
        assert {p: len(v) for p, v in got.items()} == sent

        def scraped_all() -> bool:
            """The load whole in the last snapshot of each leader and follower."""
            for i in brokers:
                last = [s for s in snapshots(out, i) if "marker" not in s][-1]
                for p, n in sent.items():
                    r = held(last, "load")[p]
                    if r["log_end_offset"] != n or (i == leaders[p] and r["bytes_out"] == 0):
                        return False
            return True

        until("the load's end in every broker's scrape", scraped_all, timeout=60)
        brokers[3] = broker(base, connect, 3, ADMIN).start()  # joins mid-run
        until("two snapshots of the broker that joined", lambda: len(snapshots(out, 3)) >= 2)
        brokers[1].terminate()  # leaves: its scrape has a gap
        until(
            "broker 1 gone from the cluster's view",
            lambda: (
                1
                not in [
                    b["id"]
                    for b in httpx.get(f"{brokers[0].admin_url}/v1/cluster", timeout=10).json()[
                        "brokers"
                    ]
                ]
            ),
        )
        seen = len(snapshots(out, 0))
        until("three more rounds after broker 1 left", lambda: len(snapshots(out, 0)) >= seen + 3)
        scraper.send_signal(signal.SIGTERM)
        code = scraper.wait(60)
        assert scraper.stderr is not None
        yield Scrape(out, scraper.stderr.read(), code, sent, leaders, sends)
    finally:
        if scraper.poll() is None:
            scraper.kill()
        stop_all(brokers)
        client.stop()
        client.close()
        setup.stop()
        setup.close()


def test_the_cluster_scraper_follows_brokers_as_they_join_and_leave(scrape: Scrape) -> None:
    assert scrape.exit_code == 0, scrape.stderr
    for line in ("broker 0 found", "broker 1 found", "broker 2 found", "broker 3 found"):
        assert line in scrape.stderr, scrape.stderr
    assert "broker 1 left the cluster" in scrape.stderr
    firsts = {}
    for i in range(4):
        lines = snapshots(scrape.out, i)
        snaps = [s for s in lines if "marker" not in s]
        assert snaps and {s["broker_id"] for s in snaps} == {i}
        seqs = [s["seq"] for s in snaps]
        assert seqs == sorted(set(seqs)), f"broker {i}: a snapshot lost or repeated"
        firsts[i] = snaps[0]["ts"]
        markers = [s for s in lines if "marker" in s]
        if i == 1:  # stopped before the scraper: its file ends in an open gap
            assert lines[-1]["marker"] == "gap" and lines[-1]["open"] is True
        else:
            assert markers == [], markers
    assert firsts[3] > max(firsts[i] for i in range(3))  # scraped from when it joined


@pytest.fixture(scope="module")
def tables(spark: Any, scrape: Scrape) -> dict[str, list[dict[str, Any]]]:
    out = scrape.out.parent / "trends"
    report = trends.run(spark, str(scrape.out), str(out), bucket_s=BUCKET_S, trend_window_s=60)  # type: ignore[arg-type]
    assert report["tables"]["brokers"] > 0 and report["tables"]["partitions"] > 0
    return {t: pq.read_table(out / t).to_pylist() for t in ("brokers", "partitions")}


def epoch(t: dt.datetime) -> float:
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


def total(rows: list[dict[str, Any]], rate: str) -> float:
    """What a rate column adds up to over its buckets: the counter's increase."""
    return sum((r[rate] or 0.0) * (r["seconds"] or 0.0) for r in rows)


def test_partition_rates_add_up_to_the_load_on_leaders_and_followers(
    scrape: Scrape, tables: dict[str, list[dict[str, Any]]]
) -> None:
    rows = [r for r in tables["partitions"] if r["topic"] == "load"]
    for p, n in scrape.sent.items():
        leader = scrape.leaders[p]
        led = [r for r in rows if r["partition"] == p and r["broker_id"] == leader]
        assert total(led, "messages_in_per_s") == pytest.approx(n, abs=1e-6)
        log_bytes = led[-1]["log_size_bytes"] if led else 0
        assert led and max(r["log_end_offset"] for r in led) == n
        assert total(led, "bytes_in_per_s") == pytest.approx(log_bytes, abs=1e-3)
        assert total(led, "bytes_out_per_s") == pytest.approx(log_bytes, abs=1e-3)
        assert total(led, "replication_bytes_out_per_s") == pytest.approx(2 * log_bytes, abs=1e-3)
        for f in (b for b in range(3) if b != leader):
            follows = sorted(
                (r for r in rows if r["partition"] == p and r["broker_id"] == f),
                key=lambda r: r["bucket"],
            )
            assert follows[0]["role"] == "follower"  # (a leader after broker 1 stopped)
            assert total(follows, "messages_in_per_s") == 0
            assert total(follows, "replication_bytes_in_per_s") == pytest.approx(
                log_bytes, abs=1e-3
            )


def test_each_buckets_rate_is_the_load_produced_in_the_time_it_covers(
    scrape: Scrape, tables: dict[str, list[dict[str, Any]]]
) -> None:
    """A bucket's rate times its seconds is what the leader appended between the snapshot
    before the bucket and the bucket's last one: at least the messages handed over and
    acknowledged within that span, at most those handed over or acknowledged within it.
    The only slack is each message's own measured time to its acknowledgement (and the
    snapshots' time stamps, to the millisecond)."""
    checked = 0
    for p in RATES:
        leader = scrape.leaders[p]
        times = sorted(
            epoch(dt.datetime.fromisoformat(s["ts"].replace("Z", "+00:00")))
            for s in snapshots(scrape.out, leader)
            if "marker" not in s and p in held(s, "load")
        )
        mine = [(t, t + lat) for q, t, lat in scrape.sends if q == p]
        for r in tables["partitions"]:
            if (r["topic"], r["partition"], r["broker_id"]) != ("load", p, leader):
                continue
            begin = epoch(r["bucket"])
            inside = [t for t in times if begin <= t < begin + BUCKET_S]
            before = [t for t in times if t < begin]
            if not before:
                continue  # the bucket's first pair has no predecessor: not all covered
            a, b = before[-1], inside[-1]
            counted = (r["messages_in_per_s"] or 0.0) * (r["seconds"] or 0.0)
            surely = sum(1 for sent, acked in mine if a + MS < sent and acked + MS <= b)
            maybe = sum(1 for sent, acked in mine if acked > a - MS and sent <= b + MS)
            assert surely - 0.5 < counted < maybe + 0.5, (p, r["bucket"], surely, counted, maybe)
            checked += surely > 0
    assert checked >= len(RATES) * 2  # buckets under load were checked, not only idle ones


def test_broker_rates_are_their_replicas_summed(
    scrape: Scrape, tables: dict[str, list[dict[str, Any]]]
) -> None:
    parts = tables["partitions"]
    by_broker = {k: list(g) for k, g in itertools.groupby(
        sorted(tables["brokers"], key=lambda r: r["broker_id"]), key=lambda r: r["broker_id"]
    )}  # fmt: skip
    assert set(by_broker) == {0, 1, 2, 3}
    for b in range(3):
        mine = [r for r in parts if r["broker_id"] == b]
        for rate in ("bytes_in_per_s", "bytes_out_per_s", "replication_bytes_in_per_s"):
            assert total(by_broker[b], rate) == pytest.approx(total(mine, rate), rel=1e-9, abs=1e-3)
        assert max(r["replicas"] for r in by_broker[b]) >= len(RATES)
        led = sum(1 for p, leader in scrape.leaders.items() if leader == b)
        assert max(r["leaders"] for r in by_broker[b]) >= led
        for r in by_broker[b]:
            assert 0 <= r["loop_busy_ratio"] <= 1 and 0 <= r["io_idle_ratio"] <= 1
            assert 0 <= r["network_idle_ratio"] <= 1
            assert r["disk_total_bytes"] >= r["disk_free_bytes"] > 0
    assert sum(r["leaders"] for r in by_broker[3]) == 0  # joined after the topics were placed


def test_the_balance_job_reads_the_real_scrapes_tables_and_plans_broker_1_away(
    spark: Any, scrape: Scrape, tables: dict[str, list[dict[str, Any]]]
) -> None:
    out = scrape.out.parent / "trends"
    observed = observe_spark(spark, str(out), 3600.0)
    assert asdict(observed) == asdict(observe_files(out, 3600.0))  # both engines, same figures
    assert [b.broker_id for b in observed.brokers] == [0, 1, 2, 3]
    load = {p.partition: p for p in observed.partitions if p.topic == "load"}
    assert sorted(load) == sorted(RATES)
    for p, seen in load.items():
        assert sorted(seen.replicas) == [0, 1, 2]
        assert seen.log_size_bytes is not None and seen.log_size_bytes > scrape.sent[p] * SIZE
        assert (seen.follower_replication_in_per_s or 0) > 0
    # The paced rates, averaged over the same buckets, keep their order (50 > 30 > 20/s).
    rate = {p: load[p].leader_rates["messages_in_per_s"] or 0.0 for p in load}
    assert sorted(rate, key=rate.__getitem__) == sorted(RATES, key=RATES.__getitem__), rate

    # Broker 1 left: fix-offline re-creates its replicas on broker 3, the only live broker
    # without them (the tables' newest replicas and leaders; the live brokers as the
    # cluster's view said them at the end of the scrape).
    from_tables = state_from_tables(observed, down_after_s=3600.0)
    state = replace(from_tables, brokers={0: None, 2: None, 3: None})
    assert state.dead() == [1]
    doc = make_plan("fix-offline", [], observed, state, Settings())
    assert doc["unmet_hard_goals"] == []
    moved = {mv["partition"]: mv for mv in doc["moves"] if mv["topic"] == "load"}
    assert sorted(moved) == sorted(RATES)
    for mv in moved.values():
        assert mv["adding"] == [3] and sorted(mv["replicas_after"]) == [0, 2, 3]
        assert mv["bytes_to_copy"] == load[mv["partition"]].log_size_bytes
    assert all(1 not in mv["replicas_after"] for mv in doc["moves"])
