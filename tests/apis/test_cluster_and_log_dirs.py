"""DescribeCluster and DescribeLogDirs with real admin clients: the same brokers,
controller and cluster id as Metadata; each log dir with its partitions, their sizes on
disk, and the volume's room; the cluster ACL they need."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.cluster import DescribeClusterRequest
from trio_broker.protocol.messages.log_dirs import DescribeLogDirsRequest

from ..security.test_acls_wire import SETTINGS, allow, connect
from ..support.brokers import BrokerThread


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    yield b
    b.stop()


def test_describe_cluster_tells_what_metadata_tells(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics(timeout=10)
    described = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert described.cluster_id == md.cluster_id
    assert described.controller.id == md.controller_id == 0
    assert [(n.id, n.host, n.port) for n in described.nodes] == [
        (b.id, b.host, b.port) for b in md.brokers.values()
    ]
    assert "ALTER_CONFIGS" in {op.name for op in described.authorized_operations}
    # kafka-python reads the same
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        seen = kp.describe_cluster()
    finally:
        kp.close()
    assert seen["cluster_id"] == md.cluster_id and seen["controller_id"] == 0
    assert [b["port"] for b in seen["brokers"]] == [md.brokers[0].port]
    # kafka-python asks v2 with IncludeFencedBrokers (KIP-1073): no broker here is fenced
    assert [b["is_fenced"] for b in seen["brokers"]] == [False]


def test_describe_log_dirs_counts_what_is_on_disk(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("sized", 2, 1)])["sized"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for _ in range(50):
        p.produce("sized", value=b"x" * 1000, partition=0)
    assert p.flush(10) == 0
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (answer,) = kp.describe_log_dirs()
        (only,) = kp.describe_log_dirs({"sized": [1]})[0]["log_dirs"]
    finally:
        kp.close()
    (log_dir,) = answer["log_dirs"]
    data = broker.config.log_dirs[0]
    assert log_dir["error_code"] == 0 and log_dir["log_dir"] == str(data.resolve())
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    assert log_dir["is_cordoned"] is False  # v5 (KIP-1066): no dir is ever cordoned here
    sizes = {
        (t["name"], part["partition_index"]): part["partition_size"]
        for t in log_dir["topics"]
        for part in t["partitions"]
    }
    on_disk = sum(f.stat().st_size for f in (data / "sized-0").glob("*.log"))
    assert sizes[("sized", 0)] == on_disk > 50 * 1000
    assert sizes[("sized", 1)] == 0
    assert [
        (t["name"], [x["partition_index"] for x in t["partitions"]]) for t in only["topics"]
    ] == [("sized", [1])]


async def test_log_dirs_need_describe_on_the_cluster(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(SETTINGS)
    client = await connect(broker)
    ask_all = DescribeLogDirsRequest(topics=None)
    denied = await client.request(ask_all, 4)
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and denied.results == []
    await broker.create_acls([allow("CLUSTER", "kafka-cluster", "DESCRIBE")])
    allowed = await client.request(ask_all, 4)
    assert allowed.error_code == ErrorCode.NONE and len(allowed.results) == 1
    # DescribeCluster needs nothing; v1 describes brokers only (no KRaft controllers here)
    kraft = await client.request(DescribeClusterRequest(endpoint_type=2), 1)
    assert kraft.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE and kraft.brokers == []
    for fenced_too in (False, True):  # v2: nothing is fenced, so both ask the same
        v2 = await client.request(DescribeClusterRequest(include_fenced_brokers=fenced_too), 2)
        assert [(b.broker_id, b.is_fenced) for b in v2.brokers] == [(0, False)]
    await client.aclose()
