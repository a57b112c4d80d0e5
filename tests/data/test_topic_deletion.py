"""DeleteTopics answers before the files are gone, as Kafka's asynchronous log deletion.

A real broker (in a thread, so the test can hold its folder remover at a gate) and
confluent-kafka's AdminClient and Producer over TCP: the deleted partitions' folders are
renamed ``<topic>-<partition>.<id>-delete`` and their files closed before the answer, the
topic can be created again at once, and a restart finishes removals a stop cut short.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from ..support.brokers import BrokerThread

PARTITIONS = 100


def _create(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("doomed", PARTITIONS, 1)])["doomed"].result(60)


def _delete(admin: AdminClient) -> None:
    admin.delete_topics(["doomed"])["doomed"].result(60)


def _ends(admin: AdminClient) -> list[int]:
    wanted = {TopicPartition("doomed", p): OffsetSpec.latest() for p in range(PARTITIONS)}
    return [f.result(30).offset for f in admin.list_offsets(wanted).values()]


def _doomed(data: Path) -> list[Path]:
    return [p for p in data.iterdir() if p.name.endswith("-delete")]


def test_deletion_answers_first_and_a_restart_finishes_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = BrokerThread(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        _create(admin)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
        for part in range(PARTITIONS):
            p.produce("doomed", b"old", partition=part)
        assert p.flush(30) == 0
        assert b.broker is not None and b.broker.replica_manager.logs is not None
        logs = b.broker.replica_manager.logs
        gate, removed = threading.Event(), []

        def held(folder: Path) -> None:
            if gate.wait(60):
                shutil.rmtree(folder)
                removed.append(folder)

        logs.remove_folder = held
        _delete(admin)  # answered while every removal waits at the gate
        assert len(_doomed(data)) == PARTITIONS and not removed
        _create(admin)  # the same name again, at once
        assert _ends(admin) == [0] * PARTITIONS  # nothing of the old topic in it
        gate.set()
        assert logs.wait_removed(60) and len(removed) == PARTITIONS
        assert _doomed(data) == []

        # A deletion whose removals never happen before the stop (as after a crash).
        logs.remove_folder = lambda folder: None
        _delete(admin)
        assert len(_doomed(data)) == PARTITIONS
        b.restart()
        assert _doomed(data) == []
        assert not [f for f in data.iterdir() if f.name.startswith("doomed")]
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        assert "doomed" not in admin.list_topics(timeout=30).topics
    finally:
        b.stop()
