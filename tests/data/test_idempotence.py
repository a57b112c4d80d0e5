"""Idempotent producers: no duplicates and no reordering when connections break."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.produce import InitProducerIdRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient


def read_partition(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(topic, partition, 0)])
    out = []
    while True:
        m = c.poll(10)
        assert m is not None
        if m.error() is not None:
            assert m.error().code() == KafkaError._PARTITION_EOF
            break
        out.append(m.value())
    c.close()
    return out


def test_no_duplicates_when_the_broker_drops_connections(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("idem", 2, 1)])["idem"].result(10)
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
            "reconnect.backoff.ms": 10,
        }
    )
    n = 20_000
    failures: list[object] = []
    acked = threading.Event()
    count = [0]

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            failures.append(err)
        count[0] += 1
        if count[0] == n:
            acked.set()

    def drop_all() -> int:
        conns = broker.broker.socket_server.all_connections()
        for c in conns:
            c.close("test: dropped by the broker")
        return len(conns)

    dropped = 0
    sent = 0
    while sent < n:
        for i in range(sent, sent + 1000):
            p.produce("idem", value=b"%06d" % i, partition=i % 2, on_delivery=on_delivery)
        sent += 1000
        # Let about half of this chunk be acknowledged, then drop every connection while
        # the rest is in flight: some appends land with their responses lost.
        while count[0] < sent - 500:
            p.poll(0.01)
        dropped += broker.call(drop_all)
    assert p.flush(60) == 0
    assert not failures and dropped >= 10
    # Retries of batches whose responses were lost were answered, not appended again.
    assert broker.call(lambda: broker.broker.replica_manager.duplicate_batches) > 0
    for part in (0, 1):
        values = read_partition(broker.bootstrap, "idem", part)
        assert values == [b"%06d" % i for i in range(part, n, 2)]  # once each, in order


def test_kafka_python_idempotent_producer(broker: BrokerThread) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")  # idempotent
    metas = [producer.send("kp-idem", value=b"%d" % i).get(10) for i in range(50)]
    producer.close()
    assert [m.offset for m in metas] == list(range(50))
    assert read_partition(broker.bootstrap, "kp-idem", 0) == [b"%d" % i for i in range(50)]


@pytest.mark.parametrize("version", range(5))
def test_init_producer_id_every_version(broker: BrokerThread, version: int) -> None:
    with WireClient(broker.bootstrap) as c:
        ids = set()
        for _ in range(3):
            r = c.request(
                InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), version
            )
            assert (r.error_code, r.producer_epoch) == (ErrorCode.NONE, 0)
            ids.add(r.producer_id)
        assert len(ids) == 3
        # An empty transactional id is refused; a real one gets its own producer id,
        # whose epoch each new start bumps (fencing the producer before it).
        r = c.request(
            InitProducerIdRequest(transactional_id="", transaction_timeout_ms=60000), version
        )
        assert r.error_code == ErrorCode.INVALID_REQUEST
        first = c.request(
            InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), version
        )
        again = c.request(
            InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), version
        )
        assert (first.error_code, again.error_code) == (0, 0)
        assert first.producer_id not in ids and again.producer_id == first.producer_id
        assert again.producer_epoch == first.producer_epoch + 1
        too_long = c.request(
            InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=900001), version
        )
        assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
