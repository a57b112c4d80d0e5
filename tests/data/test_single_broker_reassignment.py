"""AlterPartitionReassignments and ListPartitionReassignments on a broker on its own, as a
Kafka broker on its own serves them: a reassignment to the broker itself completes at
once, any other target is refused with the controller's INVALID_REPLICA_ASSIGNMENT, and
nothing is listed as moving. kafka-python's admin client (the calls of its own integration
tests, test_alter_partition_reassignments and test_list_partition_reassignments);
confluent-kafka, which has no reassignment calls, sees the partition where it was and
ElectLeaders as before; the exact answers over the wire."""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as RdkTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as RdkNewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from trio_broker.apis.services import NewTopic
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)

from ..support.brokers import BrokerThread
from ..support.wire import AsyncWireClient


def test_kafka_python_reassigns_to_the_broker_itself_and_is_refused_elsewhere(
    broker: BrokerThread,
) -> None:
    rdk = AdminClient({"bootstrap.servers": broker.bootstrap})
    rdk.create_topics([RdkNewTopic("moved", 2, 1)])["moved"].result(10)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        [me] = [b.node_id for b in admin._manager.cluster.brokers()]
        p0, p1 = KpTopicPartition("moved", 0), KpTopicPartition("moved", 1)
        assert admin.alter_partition_reassignments({p0: [me], p1: [me]}) == {p0: None, p1: None}
        # nothing is left moving, whether all partitions or these are asked for
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_reassignments([p0, p1]) == {}

        refused = admin.alter_partition_reassignments(
            {
                p0: [me, me + 1],  # a broker that does not exist
                p1: [me, me],  # the same broker twice
                KpTopicPartition("moved", 7): [me],
                KpTopicPartition("nowhere", 0): [me],
            }
        )
        assert refused == {
            p0: InvalidReplicationAssignmentError,
            p1: InvalidReplicationAssignmentError,
            KpTopicPartition("moved", 7): UnknownTopicOrPartitionError,
            KpTopicPartition("nowhere", 0): UnknownTopicOrPartitionError,
        }
        # a cancel: there is never a reassignment in progress to cancel
        assert admin.alter_partition_reassignments({p0: None}) == {
            p0: NoReassignmentInProgressError
        }
    finally:
        admin.close()

    # confluent-kafka sees the partitions where they were, led by this broker
    topic = rdk.list_topics("moved", timeout=10).topics["moved"]
    assert {p: (m.leader, m.replicas, m.isrs) for p, m in topic.partitions.items()} == {
        0: (me, [me], [me]),
        1: (me, [me], [me]),
    }
    # and ElectLeaders answers as before: each partition already has its preferred leader
    elected = rdk.elect_leaders(ElectionType.PREFERRED, [RdkTopicPartition("moved", 0)]).result(10)
    assert elected[RdkTopicPartition("moved", 0)].name() == "ELECTION_NOT_NEEDED"


@pytest.mark.parametrize("version", [0])
async def test_the_answers_on_the_wire(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    host, port = broker.bound_listeners()["PLAINTEXT"]
    client = await AsyncWireClient.connect(f"{host}:{port}")
    await broker.create_topic(NewTopic("w", 1))
    T = AlterPartitionReassignmentsRequest.ReassignableTopic
    P = T.ReassignablePartition
    answer = await client.request(
        AlterPartitionReassignmentsRequest(
            topics=[T(name="w", partitions=[P(partition_index=0, replicas=[0, 5])])]
        ),
        version,
    )
    assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, None)
    [refused] = answer.responses[0].partitions
    assert refused.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert refused.error_message == (
        "Replica assignment has brokers that are not alive. Replica list: [0, 5], "
        "live broker list: [0]"
    )
    answer = await client.request(
        AlterPartitionReassignmentsRequest(
            topics=[T(name="w", partitions=[P(partition_index=0, replicas=[0])])]
        ),
        version,
    )
    [done] = answer.responses[0].partitions
    assert (done.error_code, done.error_message) == (ErrorCode.NONE, None)
    listed = await client.request(ListPartitionReassignmentsRequest(topics=None), version)
    assert (listed.error_code, listed.error_message, listed.topics) == (ErrorCode.NONE, None, [])
    assert [p.replicas for p in broker.topic("w").partitions] == [(0,)]
