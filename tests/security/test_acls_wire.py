"""Every checked API on the wire: a principal without ACLs gets Kafka's authorization
error codes and no data, and partial rights show exactly what they allow. The broker runs
in the test's loop; ACLs are set through the broker's own store (as the admin API does)."""

from __future__ import annotations

from typing import Any

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.acls import CreateAclsRequest, DeleteAclsRequest
from trio_broker.protocol.messages.configs import DescribeConfigsRequest
from trio_broker.protocol.messages.controller import LeaderAndIsrRequest
from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.group_offsets import (
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from trio_broker.protocol.messages.groups import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    ListGroupsRequest,
)
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.offsets import (
    DeleteRecordsRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)
from trio_broker.protocol.messages.produce import InitProducerIdRequest
from trio_broker.protocol.messages.quotas import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
)
from trio_broker.protocol.messages.scram import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
)
from trio_broker.protocol.messages.topics import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from trio_broker.security.acl import AclBinding, AclFilter, AclOperation

from ..support.wire import AsyncWireClient

ANON = "User:ANONYMOUS"
SETTINGS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "control.plane.listener.name": "CONTROLLER",
    "group.initial.rebalance.delay.ms": "0",
}
TOPIC_AUTH, GROUP_AUTH, CLUSTER_AUTH = (
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


def allow(resource_type: str, name: str, operation: str) -> AclBinding:
    return AclBinding.of(resource_type, name, "LITERAL", ANON, "*", operation, "ALLOW")


async def connect(broker: Any, listener: str = "PLAINTEXT") -> AsyncWireClient:
    host, port = broker.bound_listeners()[listener]
    return await AsyncWireClient.connect(f"{host}:{port}")


def commit(group: str, topic: str, offset: int) -> OffsetCommitRequest:
    T = OffsetCommitRequest.Topic
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            T(
                name=topic,
                partitions=[
                    T.Partition(partition_index=0, committed_offset=offset, committed_metadata="")
                ],
            )
        ],
    )


def fetch_offsets(group: str, topics: list[str] | None) -> OffsetFetchRequest:
    G = OffsetFetchRequest.Group
    wanted = None if topics is None else [G.Topics(name=t, partition_indexes=[0]) for t in topics]
    return OffsetFetchRequest(groups=[G(group_id=group, topics=wanted)])


async def setup(run_broker: Any) -> Any:
    """A broker with topic ``t`` and group ``g`` (an offset committed on ``t``), then no
    ACL left for anyone. The commit needs READ on ``g`` and ``t`` only: the coordinator's
    own write to ``__consumer_offsets`` is not checked against client ACLs."""
    broker = await run_broker(SETTINGS)
    scaffolding = [
        allow("CLUSTER", "kafka-cluster", "CREATE"),
        allow("GROUP", "g", "READ"),
        allow("TOPIC", "t", "READ"),
    ]
    await broker.create_acls(scaffolding)
    client = await connect(broker)
    created = await client.request(
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name="t", num_partitions=1, replication_factor=1, assignments=[], configs=[]
                )
            ]
        ),
        7,
    )
    assert created.topics[0].error_code == ErrorCode.NONE
    committed = await client.request(commit("g", "t", 7), 8)
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE
    await broker.delete_acls([AclFilter()])
    await client.aclose()
    return broker


async def test_without_acls_every_api_answers_with_its_authorization_error(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await setup(run_broker)
    c = await connect(broker)

    async def ask(req: Any, version: int) -> Any:
        return await c.request(req, version)

    r = await ask(MetadataRequest(topics=None, include_cluster_authorized_operations=True), 10)
    assert r.topics == [] and r.cluster_authorized_operations == 0
    r = await ask(MetadataRequest(topics=[MetadataRequest.Topic(name="t")]), 12)
    assert r.topics[0].error_code == TOPIC_AUTH and r.topics[0].partitions == []
    r = await ask(MetadataRequest(topics=[MetadataRequest.Topic(name="nope")]), 12)
    assert r.topics[0].error_code == TOPIC_AUTH  # existing or not: nothing leaks
    assert broker.topic("nope") is None

    P = CreateTopicsRequest.CreatableTopic
    r = await ask(
        CreateTopicsRequest(
            topics=[
                P(name="new", num_partitions=1, replication_factor=1, assignments=[], configs=[])
            ]
        ),
        7,
    )
    assert r.topics[0].error_code == TOPIC_AUTH and broker.topic("new") is None
    r = await ask(DeleteTopicsRequest(topic_names=["t"]), 5)
    assert r.responses[0].error_code == TOPIC_AUTH and broker.topic("t") is not None
    r = await ask(
        CreatePartitionsRequest(
            topics=[CreatePartitionsRequest.Topic(name="t", count=3, assignments=None)],
            timeout_ms=1000,
        ),
        3,
    )
    assert r.results[0].error_code == TOPIC_AUTH
    D = DeleteRecordsRequest.Topic
    r = await ask(
        DeleteRecordsRequest(
            topics=[D(name="t", partitions=[D.Partition(partition_index=0, offset=-1)])],
            timeout_ms=1000,
        ),
        2,
    )
    assert r.topics[0].partitions[0].error_code == TOPIC_AUTH
    L = ListOffsetsRequest.Topic
    r = await ask(
        ListOffsetsRequest(
            replica_id=-1,
            topics=[L(name="t", partitions=[L.Partition(partition_index=0, timestamp=-1)])],
        ),
        7,
    )
    assert r.topics[0].partitions[0].error_code == TOPIC_AUTH
    E = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    r = await ask(
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                E(topic="t", partitions=[E.OffsetForLeaderPartition(partition=0, leader_epoch=0)])
            ],
        ),
        4,
    )
    assert r.topics[0].partitions[0].error_code == TOPIC_AUTH
    F = FetchRequest.Topic
    follower = FetchRequest(
        replica_id=0,
        max_wait_ms=0,
        min_bytes=1,
        topics=[
            F(
                topic="t",
                partitions=[F.Partition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
            )
        ],
    )
    r = await ask(follower, 12)
    assert r.responses[0].partitions[0].error_code == TOPIC_AUTH
    R = DescribeConfigsRequest.Resource
    r = await ask(
        DescribeConfigsRequest(
            resources=[
                R(resource_type=2, resource_name="t", configuration_keys=None),
                R(resource_type=4, resource_name="0", configuration_keys=None),
            ]
        ),
        4,
    )
    assert [x.error_code for x in r.results] == [TOPIC_AUTH, CLUSTER_AUTH]
    assert all(x.configs == [] for x in r.results)
    r = await ask(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
    assert r.error_code == CLUSTER_AUTH and r.producer_id == -1

    # groups
    r = await ask(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
    assert r.coordinators[0].error_code == GROUP_AUTH
    r = await ask(
        JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequest.Protocol(name="range", metadata=b"")],
        ),
        9,
    )
    assert r.error_code == GROUP_AUTH
    r = await ask(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 4)
    assert r.error_code == GROUP_AUTH
    r = await ask(DescribeGroupsRequest(groups=["g"], include_authorized_operations=True), 5)
    assert r.groups[0].error_code == GROUP_AUTH and r.groups[0].members == []
    r = await ask(ListGroupsRequest(), 4)
    assert r.groups == []
    r = await ask(fetch_offsets("g", None), 8)
    assert r.groups[0].error_code == GROUP_AUTH and r.groups[0].topics == []
    r = await ask(commit("g", "t", 9), 8)
    assert r.topics[0].partitions[0].error_code == GROUP_AUTH
    OD = OffsetDeleteRequest.Topic
    r = await ask(
        OffsetDeleteRequest(
            group_id="g", topics=[OD(name="t", partitions=[OD.Partition(partition_index=0)])]
        ),
        0,
    )
    assert r.error_code == GROUP_AUTH
    r = await ask(DeleteGroupsRequest(groups_names=["g"]), 2)
    assert r.results[0].error_code == GROUP_AUTH

    # cluster administration
    r = await ask(DescribeClientQuotasRequest(components=[], strict=False), 1)
    assert r.error_code == CLUSTER_AUTH and r.entries is None
    A = AlterClientQuotasRequest.EntryData
    r = await ask(
        AlterClientQuotasRequest(
            entries=[
                A(
                    entity=[A.EntityData(entity_type="client-id", entity_name="x")],
                    ops=[A.OpData(key="producer_byte_rate", value=1000.0, remove=False)],
                )
            ],
            validate_only=False,
        ),
        1,
    )
    assert r.entries[0].error_code == CLUSTER_AUTH
    r = await ask(
        CreateAclsRequest(
            creations=[
                CreateAclsRequest.AclCreation(
                    resource_type=4,
                    resource_name="kafka-cluster",
                    resource_pattern_type=3,
                    principal=ANON,
                    host="*",
                    operation=int(AclOperation.ALL),
                    permission_type=3,
                )
            ]
        ),
        3,
    )
    assert r.results[0].error_code == CLUSTER_AUTH and broker.find_acls(AclFilter()) == []
    everything = DeleteAclsRequest.Filter(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    r = await ask(DeleteAclsRequest(filters=[everything]), 3)
    assert r.filter_results[0].error_code == CLUSTER_AUTH
    r = await ask(DescribeUserScramCredentialsRequest(users=None), 0)
    assert r.error_code == CLUSTER_AUTH and r.results == []
    upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name="mallory", mechanism=1, iterations=4096, salt=b"s" * 16, salted_password=b"p" * 32
    )
    r = await ask(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
    assert [(x.user, x.error_code) for x in r.results] == [("mallory", CLUSTER_AUTH)]
    assert broker.scram_credentials() == {}

    control = await connect(broker, "CONTROLLER")
    r = await control.request(
        LeaderAndIsrRequest(controller_id=0, controller_epoch=1, topic_states=[]), 7
    )
    assert r.error_code == CLUSTER_AUTH


async def test_partial_rights_show_exactly_what_they_allow(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await setup(run_broker)
    await broker.create_acls([allow("GROUP", "g", "DESCRIBE"), allow("TOPIC", "t", "READ")])
    c = await connect(broker)

    r = await c.request(MetadataRequest(topics=None, include_topic_authorized_operations=True), 12)
    assert [t.name for t in r.topics] == ["t"]  # not __consumer_offsets
    assert r.topics[0].topic_authorized_operations == (1 << AclOperation.READ) | (
        1 << AclOperation.DESCRIBE
    )
    r = await c.request(ListGroupsRequest(), 4)
    assert [g.group_id for g in r.groups] == ["g"]
    r = await c.request(DescribeGroupsRequest(groups=["g"], include_authorized_operations=True), 5)
    assert r.groups[0].error_code == ErrorCode.NONE
    assert r.groups[0].authorized_operations == 1 << AclOperation.DESCRIBE
    r = await c.request(fetch_offsets("g", ["t"]), 8)
    assert r.groups[0].topics[0].partitions[0].committed_offset == 7

    # READ on the topic implies DESCRIBE; without it the offsets are hidden or refused
    await broker.delete_acls([AclFilter.of("TOPIC", "t", "LITERAL")])
    r = await c.request(fetch_offsets("g", None), 8)
    assert r.groups[0].error_code == ErrorCode.NONE and r.groups[0].topics == []
    r = await c.request(fetch_offsets("g", ["t"]), 8)
    assert r.groups[0].topics[0].partitions[0].error_code == TOPIC_AUTH
    assert r.groups[0].topics[0].partitions[0].committed_offset == -1
    # DESCRIBE on the group is not READ: no commits, no joining
    r = await c.request(commit("g", "t", 9), 8)
    assert r.topics[0].partitions[0].error_code == GROUP_AUTH
