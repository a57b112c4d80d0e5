"""Transactions with real clients: confluent-kafka's and kafka-python's transactional
producers commit and abort, read_committed consumers see only what was committed (and
read_uncommitted everything), a second producer with the same transactional id fences the
first, offsets sent in a transaction count only once it commits, a transaction left open
past its timeout is aborted by the coordinator, and a restarted broker keeps it all."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from ..support.brokers import BrokerThread

FAST_TIMEOUTS = {
    # the coordinator looks for timed-out transactions every 100 ms (Kafka: 10 s)
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", dict(FAST_TIMEOUTS)).start()
    yield b
    b.stop()


def make_topic(b: BrokerThread, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def txn_producer(b: BrokerThread, txn_id: str, **more: Any) -> Producer:
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": txn_id, **more})
    p.init_transactions(15)
    return p


def read_all(b: BrokerThread, topic: str, isolation: str, partitions: int = 1) -> list[bytes]:
    """Every record a consumer with ``isolation`` sees, up to the end it can read."""
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": f"check-{isolation}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[bytes] = []
    ends = 0
    while ends < partitions:
        m = c.poll(10)
        assert m is not None, "no end of partition within 10 s"
        if m.error() is not None:
            assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
            ends += 1
            continue
        out.append(m.value())
    c.close()
    return out


def until(what: str, check: Callable[[], Any], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)


def test_committed_records_are_read_and_aborted_ones_are_not(node: BrokerThread) -> None:
    make_topic(node, "txn", 2)
    p = txn_producer(node, "app-1")
    for batch, commit in ((range(0, 5), True), (range(5, 8), False), (range(8, 10), True)):
        p.begin_transaction()
        for i in batch:
            p.produce("txn", value=b"%d" % i, partition=i % 2)
        if commit:
            p.commit_transaction(15)
        else:
            assert p.flush(10) == 0  # in the log before the abort (else librdkafka drops them)
            p.abort_transaction(15)
    committed = [b"%d" % i for i in (0, 1, 2, 3, 4, 8, 9)]
    assert sorted(read_all(node, "txn", "read_committed", 2)) == sorted(committed)
    everything = [b"%d" % i for i in range(10)]
    assert sorted(read_all(node, "txn", "read_uncommitted", 2)) == sorted(everything)


def test_an_open_transaction_holds_read_committed_consumers_back(node: BrokerThread) -> None:
    make_topic(node, "open")
    plain = Producer({"bootstrap.servers": node.bootstrap})
    plain.produce("open", value=b"before")
    plain.flush(10)
    p = txn_producer(node, "app-open")
    p.begin_transaction()
    p.produce("open", value=b"inside")
    p.flush(10)
    plain.produce("open", value=b"after")  # past the open transaction's first offset
    plain.flush(10)
    assert read_all(node, "open", "read_committed") == [b"before"]
    assert read_all(node, "open", "read_uncommitted") == [b"before", b"inside", b"after"]
    p.commit_transaction(15)
    assert read_all(node, "open", "read_committed") == [b"before", b"inside", b"after"]


def test_a_second_producer_with_the_same_id_fences_the_first(node: BrokerThread) -> None:
    make_topic(node, "zombie")
    first = txn_producer(node, "app-z")
    first.begin_transaction()
    first.produce("zombie", value=b"from the zombie")
    first.flush(10)
    second = txn_producer(node, "app-z")  # aborts the first's transaction, bumps the epoch
    second.begin_transaction()
    second.produce("zombie", value=b"from the new one")
    second.commit_transaction(15)
    with pytest.raises(KafkaException) as info:
        first.commit_transaction(15)
    err = info.value.args[0]
    assert err.fatal(), err
    assert err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), err
    assert read_all(node, "zombie", "read_committed") == [b"from the new one"]


def test_offsets_sent_in_a_transaction_count_once_it_commits(node: BrokerThread) -> None:
    # consume-transform-produce: input read by a group, output and offsets in one transaction
    make_topic(node, "in")
    make_topic(node, "out")
    feed = Producer({"bootstrap.servers": node.bootstrap})
    for i in range(10):
        feed.produce("in", value=b"%d" % i)
    feed.flush(10)
    p = txn_producer(node, "app-ctp")

    def step(n: int, commit: bool) -> None:
        c = Consumer(
            {
                "bootstrap.servers": node.bootstrap,
                "group.id": "ctp",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        c.subscribe(["in"])
        got: list[Any] = []
        while len(got) < n:
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(m)
        p.begin_transaction()
        for m in got:
            p.produce("out", value=b"x" + m.value())
        # twice in one transaction (the second wins), as a loop that commits per batch does
        half = [TopicPartition("in", 0, got[len(got) // 2].offset() + 1)]
        p.send_offsets_to_transaction(half, c.consumer_group_metadata(), 15)
        positions = [TopicPartition("in", 0, got[-1].offset() + 1)]
        p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 15)
        if commit:
            p.commit_transaction(15)
        else:
            p.abort_transaction(15)
        c.close()

    step(4, commit=True)
    step(3, commit=False)  # aborted: its output and its offsets go
    step(6, commit=True)  # starts again after the first four
    out = read_all(node, "out", "read_committed")
    assert out == [b"x%d" % i for i in range(10)]
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = ConsumerGroupTopicPartitions("ctp", [TopicPartition("in", 0)])
    listed = admin.list_consumer_group_offsets([request])["ctp"].result(10)
    assert [tp.offset for tp in listed.topic_partitions] == [10]


def test_a_transaction_past_its_timeout_is_aborted(node: BrokerThread) -> None:
    make_topic(node, "slow")
    p = txn_producer(node, "app-slow", **{"transaction.timeout.ms": 1000})
    p.begin_transaction()
    p.produce("slow", value=b"never committed")
    p.flush(10)
    # The coordinator aborts it: read_committed consumers are no longer held back.
    until("the LSO passes the aborted record", lambda: _end(node, "slow", "read_committed") == 2)
    assert read_all(node, "slow", "read_committed") == []
    with pytest.raises(KafkaException):
        p.commit_transaction(15)


def _end(b: BrokerThread, topic: str, isolation: str) -> int:
    c = Consumer(
        {"bootstrap.servers": b.bootstrap, "group.id": "ends", "isolation.level": isolation}
    )
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        return int(high)
    finally:
        c.close()


def test_kafka_python_commits_and_aborts(node: BrokerThread) -> None:
    make_topic(node, "kp")
    p = KafkaProducer(bootstrap_servers=node.bootstrap, transactional_id="app-kp")
    p.init_transactions()
    p.begin_transaction()
    p.send("kp", b"kept").get(10)
    p.commit_transaction()
    p.begin_transaction()
    p.send("kp", b"dropped").get(10)
    p.abort_transaction()
    p.close()
    for isolation, expected in (
        ("read_committed", [b"kept"]),
        ("read_uncommitted", [b"kept", b"dropped"]),
    ):
        c = KafkaConsumer(
            "kp",
            bootstrap_servers=node.bootstrap,
            auto_offset_reset="earliest",
            isolation_level=isolation,
            consumer_timeout_ms=3000,
        )
        assert [m.value for m in c] == expected
        c.close()


def test_a_restarted_broker_keeps_its_transactions(node: BrokerThread) -> None:
    make_topic(node, "durable")
    p = txn_producer(node, "app-d")
    p.begin_transaction()
    p.produce("durable", value=b"committed")
    p.commit_transaction(15)
    p.begin_transaction()
    p.produce("durable", value=b"open at the restart")
    p.flush(10)
    node.restart()
    # The open transaction is still open: the producer that has it can commit it.
    assert read_all(node, "durable", "read_committed") == [b"committed"]
    again = txn_producer(node, "app-d")  # the same id starting again: the open one aborts
    again.begin_transaction()
    again.produce("durable", value=b"after")
    again.commit_transaction(15)
    assert read_all(node, "durable", "read_committed") == [b"committed", b"after"]


def test_kafka_python_admin_lists_and_describes_transactions(node: BrokerThread) -> None:
    # What kafka-transactions.sh asks: ListTransactions, DescribeTransactions and
    # DescribeProducers (through kafka-python's admin client, which speaks all three).
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpPartition
    from kafka.errors import KafkaError, TransactionalIdNotFoundError

    make_topic(node, "intro", 2)
    p = txn_producer(node, "app-intro")
    p.begin_transaction()
    p.produce("intro", value=b"open", partition=1)
    p.flush(10)
    done = txn_producer(node, "app-done")
    done.begin_transaction()
    done.produce("intro", value=b"kept", partition=0)
    done.commit_transaction(15)

    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        listed = {
            t.transactional_id: t.state.value
            for ts in admin.list_transactions().values()
            for t in ts
        }
        assert listed == {"app-intro": "Ongoing", "app-done": "CompleteCommit"}
        ongoing = admin.list_transactions(state_filters=["Ongoing"])
        assert [t.transactional_id for ts in ongoing.values() for t in ts] == ["app-intro"]
        # ListTransactions v2 (KIP-1152): a pattern the whole id matches
        for pattern, ids in (("app-d.*", ["app-done"]), ("app-", []), (".*-in.*", ["app-intro"])):
            found = admin.list_transactions(transactional_id_pattern=pattern)
            assert [t.transactional_id for ts in found.values() for t in ts] == ids, pattern
        with pytest.raises(KafkaError) as refused:  # kafka-python does not name error 128
            admin.list_transactions(transactional_id_pattern="app-[")
        assert refused.value.errno == 128  # INVALID_REGULAR_EXPRESSION

        described = admin.describe_transactions(["app-intro"])["app-intro"]
        assert described.state.value == "Ongoing"
        assert described.topic_partitions == {KpPartition("intro", 1)}
        assert described.transaction_timeout_ms == 60000  # librdkafka's default
        with pytest.raises(TransactionalIdNotFoundError):
            admin.describe_transactions(["nobody"])

        states = admin.describe_producers([KpPartition("intro", 1)])[KpPartition("intro", 1)]
        (producer,) = states.active_producers
        assert producer.producer_id == described.producer_id
        assert producer.current_transaction_start_offset == 0  # the open transaction's first
    finally:
        admin.close()
    p.abort_transaction(15)


def test_aiokafka_commits_and_aborts(node: BrokerThread) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioPartition

    make_topic(node, "aio")

    async def main() -> dict[str, list[bytes]]:
        p = AIOKafkaProducer(bootstrap_servers=node.bootstrap, transactional_id="app-aio")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("aio", b"kept")
            await p.begin_transaction()
            await p.send_and_wait("aio", b"dropped")
            await p.abort_transaction()
        finally:
            await p.stop()
        seen: dict[str, list[bytes]] = {}
        for isolation in ("read_committed", "read_uncommitted"):
            c = AIOKafkaConsumer(
                bootstrap_servers=node.bootstrap,
                auto_offset_reset="earliest",
                isolation_level=isolation,
            )
            await c.start()
            try:
                tp = AioPartition("aio", 0)
                c.assign([tp])
                end = (await c.end_offsets([tp]))[tp]  # read_committed: the LSO
                got: list[bytes] = []
                async with asyncio.timeout(20):
                    while await c.position(tp) < end:
                        batches = await c.getmany(timeout_ms=1000)
                        got += [m.value for ms in batches.values() for m in ms]
                seen[isolation] = got
            finally:
                await c.stop()
        return seen

    seen = asyncio.run(main())
    assert seen == {"read_committed": [b"kept"], "read_uncommitted": [b"kept", b"dropped"]}


def test_offsets_sent_twice_in_one_transaction_keep_the_second(node: BrokerThread) -> None:
    # Both TxnOffsetCommits are written (the second is no "duplicate" of the first: a
    # coordinator's batch has no sequence) and the later offsets count after the commit.
    from confluent_kafka import ConsumerGroupTopicPartitions

    make_topic(node, "twice", 2)
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    group = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "twice"})
    p = txn_producer(node, "app-twice")
    wanted = [TopicPartition("twice", 0), TopicPartition("twice", 1)]
    for first, second in ((3, 4), (5, 6)):
        p.begin_transaction()
        for offset, partitions in ((first, (0,)), (second, (0, 1))):
            positions = [TopicPartition("twice", i, offset) for i in partitions]
            p.send_offsets_to_transaction(positions, group.consumer_group_metadata(), 15)
        p.commit_transaction(15)

        def committed() -> list[int]:
            request = ConsumerGroupTopicPartitions("twice", wanted)
            listed = admin.list_consumer_group_offsets([request])["twice"].result(10)
            return [tp.offset for tp in listed.topic_partitions]

        until(f"offsets {second} committed", lambda s=second: committed() == [s, s])
    group.close()


def test_the_admin_api_and_metrics_show_transactions(tmp_path: Path) -> None:
    import httpx

    settings = {**FAST_TIMEOUTS, "admin.listeners": "http://127.0.0.1:0"}
    b = BrokerThread(tmp_path / "data", settings).start()
    try:
        make_topic(b, "seen")
        p = txn_producer(b, "app-seen")
        for commit in (True, False):
            p.begin_transaction()
            p.produce("seen", value=b"x")
            assert p.flush(10) == 0
            (p.commit_transaction if commit else p.abort_transaction)(15)
        p.begin_transaction()
        p.produce("seen", value=b"open")
        assert p.flush(10) == 0
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            body = http.get("/v1/transactions").json()
            (txn,) = body["transactions"]
            assert (txn["transactional_id"], txn["state"]) == ("app-seen", "Ongoing")
            assert txn["partitions"] == ["seen-0"]
            coordinator = body["coordinator"]
            assert coordinator["commits"] == 1 and coordinator["aborts"]["client"] == 1
            assert coordinator["ongoing"] == 1
            # the open transaction holds read_committed consumers one record back
            assert body["lso_lag"] == {"seen-0": 1}
            snapshot = http.get("/v1/metrics").json()
            assert snapshot["transactions"]["lso_lag"] == {"seen-0": 1}
            text = http.get("/metrics").text
            assert 'kafka_log_last_stable_offset_lag{partition="0",topic="seen"} 1.0' in text
            assert 'kafka_transaction_coordinator_aborts_total{reason="client"} 1.0' in text
            # on its own a broker sends no markers to others: none given up
            given_up = "kafka_transaction_coordinator_marker_sends_given_up_total"
            assert f'{given_up}{{reason="moved"}} 0.0' in text
        p.commit_transaction(15)
    finally:
        b.stop()
