"""Running out of file descriptors is a Kafka error, never a half-made topic.

Real broker processes with a lowered open files limit (``ulimit -n``) and Kafka clients
over TCP: a CreateTopics (or CreatePartitions) that would pass the limit is refused with
POLICY_VIOLATION naming it, before anything is made; one that runs out part-way (the
descriptors taken by connections) is KAFKA_STORAGE_ERROR and removes what it made; either
way Metadata shows no trace of the topic, its folders are gone and the next smaller
creation succeeds. A broker whose logs on disk need more than its limit stops at start-up
with one line naming the limit and the count.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewPartitions as KNewPartitions
from kafka.errors import PolicyViolationError

from ..support.brokers import BrokerProcess

DEADLINE_S = 30
LIMIT = 400


def broker(data: Path, nofile: int | None = LIMIT) -> BrokerProcess:
    return BrokerProcess(data, [f"log.dirs={data}"], nofile=nofile)


def wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def open_fds(b: BrokerProcess) -> int:
    assert b.proc is not None
    return len(os.listdir(f"/proc/{b.proc.pid}/fd"))


def create_error(admin: AdminClient, topic: NewTopic, **options: object) -> KafkaError | None:
    try:
        admin.create_topics([topic], **options)[topic.topic].result(DEADLINE_S)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return error
    return None


def no_trace(admin: AdminClient, data: Path, name: str) -> None:
    """Metadata does not list the topic and no folder of it is left (the renamed
    ``-delete`` folders of what it made are removed in the background: waited for)."""
    assert name not in admin.list_topics(timeout=DEADLINE_S).topics
    wait_for(
        "no folder of the topic",
        lambda: not [p for p in data.iterdir() if p.name.startswith(f"{name}-")],
    )


def test_a_creation_past_the_limit_is_refused_naming_it_and_leaves_no_trace(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    b = broker(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        # 200 partitions need 600 descriptors; 400 minus 128 spare can never hold them.
        for options in ({}, {"validate_only": True}):
            error = create_error(admin, NewTopic("wide", 200, 1), **options)
            assert error is not None and error.code() == KafkaError.POLICY_VIOLATION, error
            message = error.str()
            assert "RLIMIT_NOFILE) is 400" in message and "need 600 file descriptors" in message
            no_trace(admin, data, "wide")
        # An absurd count (librdkafka will not send one; kafka-python does) is refused at
        # once, before any placement is built: creating a topic and growing one.
        absurd = 2**31 - 1
        other = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=30_000)
        try:
            began = time.monotonic()
            with pytest.raises(PolicyViolationError, match="RLIMIT_NOFILE"):
                other.create_topics({"absurd": {"num_partitions": absurd, "replication_factor": 1}})
            assert time.monotonic() - began < 5
            no_trace(admin, data, "absurd")
            # The next smaller creation succeeds, and so does a small growth; a large one not.
            assert create_error(admin, NewTopic("narrow", 20, 1)) is None
            with pytest.raises(PolicyViolationError, match="RLIMIT_NOFILE"):
                other.create_partitions({"narrow": KNewPartitions(total_count=absurd)})
        finally:
            other.close()
        admin.create_partitions([NewPartitions("narrow", 30)])["narrow"].result(DEADLINE_S)
        wait_for(
            "30 partitions in Metadata",
            lambda: len(admin.list_topics(timeout=DEADLINE_S).topics["narrow"].partitions) == 30,
        )
        assert len([p for p in data.iterdir() if p.name.startswith("narrow-")]) == 30
    finally:
        assert b.terminate() == 0


@contextmanager
def connections(address: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` idle TCP connections to the broker: each holds one of its descriptors."""
    host, port = address.rsplit(":", 1)
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            held.append(socket.create_connection((host, int(port)), timeout=DEADLINE_S))
        yield held
    finally:
        for s in held:
            s.close()


def test_a_creation_that_runs_out_part_way_removes_what_it_made(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = broker(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.list_topics(timeout=DEADLINE_S)  # the client's connection is open
        idle = open_fds(b)
        # Connections take what the check keeps spare and more: about 60 descriptors are
        # left when 80 partitions (240 descriptors, within the check's 269) are asked for.
        taken = LIMIT - idle - 60
        with connections(b.bootstrap, taken):
            wait_for("the connections", lambda: open_fds(b) >= idle + taken)
            error = create_error(admin, NewTopic("crowded", 80, 1))
            assert error is not None and error.code() == KafkaError.KAFKA_STORAGE_ERROR, error
            assert "Too many open files" in error.str()
            no_trace(admin, data, "crowded")
        wait_for("the connections to close", lambda: open_fds(b) <= idle + 5)
        # Nothing of it holds a descriptor: the same creation now succeeds, whole.
        assert create_error(admin, NewTopic("crowded", 80, 1)) is None
        topics = admin.list_topics(timeout=DEADLINE_S).topics
        assert len(topics["crowded"].partitions) == 80
        assert len([p for p in data.iterdir() if p.name.startswith("crowded-")]) == 80
    finally:
        assert b.terminate() == 0


def test_a_broker_whose_logs_need_more_than_its_limit_stops_in_one_line(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    first = broker(data, nofile=None).start()
    try:
        admin = AdminClient({"bootstrap.servers": first.bootstrap})
        assert create_error(admin, NewTopic("many", 100, 1)) is None
    finally:
        assert first.terminate() == 0

    # A segment each (the topic's 100 and __consumer_offsets'): 3 descriptors a segment,
    # and 128 stay spare.
    segments = len([p for p in data.iterdir() if p.is_dir()])
    assert segments == 101
    need = 3 * segments + 128
    code, lines = broker(data, nofile=350).run_to_failure()
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith("trio-broker: the open files limit (RLIMIT_NOFILE) is 350")
    assert f"hold {segments} segments" in lines[0] and f"at least {need}" in lines[0]

    again = broker(data, nofile=need).start()  # enough: it starts and serves the topic
    try:
        admin = AdminClient({"bootstrap.servers": again.bootstrap})
        assert len(admin.list_topics(timeout=DEADLINE_S).topics["many"].partitions) == 100
    finally:
        assert again.terminate() == 0
