"""ListGroups v5 through librdkafka's ListConsumerGroups: the group type filter and the type
of each group (every group here is a classic one), as librdkafka's own test 0081 checks."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient, NewTopic

from ..support.brokers import BrokerThread


def test_list_consumer_groups_by_type_and_state(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}).start()
    consumer = Consumer(
        {"bootstrap.servers": b.bootstrap, "group.id": "g", "session.timeout.ms": 6000}
    )
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer never joined"
            consumer.poll(0.2)

        def listed(**kw: object) -> list[tuple[str, object, object]]:
            result = admin.list_consumer_groups(request_timeout=10, **kw).result()
            return [(g.group_id, g.type, g.state) for g in result.valid]

        stable = ConsumerGroupState.STABLE
        assert listed() == [("g", ConsumerGroupType.CLASSIC, stable)]
        assert listed(types={ConsumerGroupType.CLASSIC}) == [
            ("g", ConsumerGroupType.CLASSIC, stable)
        ]
        assert listed(types={ConsumerGroupType.CONSUMER}) == []
        assert listed(states={ConsumerGroupState.EMPTY}) == []
    finally:
        consumer.close()
        b.stop()
