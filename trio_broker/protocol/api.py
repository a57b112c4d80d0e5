"""Api keys and the registry of the messages this broker speaks.

Owns: ``ApiKey`` (every Kafka api key, by name, for logs and metrics) and ``ApiSpec``, the
pairing of a request and a response message with the version range we answer. Message
modules register themselves with ``register``; ``spec_for`` looks one up. The registry is
what ApiVersions answers from, so a version is advertised exactly when it can be decoded.
No I/O here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .schema import Request, Response, VersionRange


class ApiKey(enum.IntEnum):
    Produce = 0
    Fetch = 1
    ListOffsets = 2
    Metadata = 3
    LeaderAndIsr = 4
    StopReplica = 5
    UpdateMetadata = 6
    ControlledShutdown = 7
    OffsetCommit = 8
    OffsetFetch = 9
    FindCoordinator = 10
    JoinGroup = 11
    Heartbeat = 12
    LeaveGroup = 13
    SyncGroup = 14
    DescribeGroups = 15
    ListGroups = 16
    SaslHandshake = 17
    ApiVersions = 18
    CreateTopics = 19
    DeleteTopics = 20
    DeleteRecords = 21
    InitProducerId = 22
    OffsetForLeaderEpoch = 23
    AddPartitionsToTxn = 24
    AddOffsetsToTxn = 25
    EndTxn = 26
    WriteTxnMarkers = 27
    TxnOffsetCommit = 28
    DescribeAcls = 29
    CreateAcls = 30
    DeleteAcls = 31
    DescribeConfigs = 32
    AlterConfigs = 33
    AlterReplicaLogDirs = 34
    DescribeLogDirs = 35
    SaslAuthenticate = 36
    CreatePartitions = 37
    CreateDelegationToken = 38
    RenewDelegationToken = 39
    ExpireDelegationToken = 40
    DescribeDelegationToken = 41
    DeleteGroups = 42
    ElectLeaders = 43
    IncrementalAlterConfigs = 44
    AlterPartitionReassignments = 45
    ListPartitionReassignments = 46
    OffsetDelete = 47
    DescribeClientQuotas = 48
    AlterClientQuotas = 49
    DescribeUserScramCredentials = 50
    AlterUserScramCredentials = 51
    Vote = 52
    BeginQuorumEpoch = 53
    EndQuorumEpoch = 54
    DescribeQuorum = 55
    AlterPartition = 56
    UpdateFeatures = 57
    Envelope = 58
    FetchSnapshot = 59
    DescribeCluster = 60
    DescribeProducers = 61
    BrokerRegistration = 62
    BrokerHeartbeat = 63
    UnregisterBroker = 64
    DescribeTransactions = 65
    ListTransactions = 66
    AllocateProducerIds = 67
    ConsumerGroupHeartbeat = 68
    ConsumerGroupDescribe = 69
    ControllerRegistration = 70
    GetTelemetrySubscriptions = 71
    PushTelemetry = 72
    AssignReplicasToDirs = 73
    ListConfigResources = 74  # ListClientMetricsResources before Kafka 4.1
    DescribeTopicPartitions = 75
    ShareGroupHeartbeat = 76
    ShareGroupDescribe = 77
    ShareFetch = 78
    ShareAcknowledge = 79
    AddRaftVoter = 80
    RemoveRaftVoter = 81
    UpdateRaftVoter = 82
    InitializeShareGroupState = 83
    ReadShareGroupState = 84
    WriteShareGroupState = 85
    DeleteShareGroupState = 86
    ReadShareGroupStateSummary = 87
    StreamsGroupHeartbeat = 88
    StreamsGroupDescribe = 89
    DescribeShareGroupOffsets = 90
    AlterShareGroupOffsets = 91
    DeleteShareGroupOffsets = 92

    @classmethod
    def name_of(cls, key: int) -> str:
        try:
            return cls(key).name
        except ValueError:
            return f"ApiKey{key}"


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """A request/response pair and the versions we answer."""

    key: int
    name: str
    request: type[Request]
    response: type[Response]
    versions: VersionRange

    @property
    def min_version(self) -> int:
        return self.versions.lo

    @property
    def max_version(self) -> int:
        return self.versions.hi

    def request_header_version(self, version: int) -> int:
        if self.key == ApiKey.ControlledShutdown and version == 0:
            return 0
        return 2 if self.request.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # KIP-511: ApiVersions responses always use header v0, so that a client can read
        # the answer even when it sent a version the broker does not know.
        if self.key == ApiKey.ApiVersions:
            return 0
        return 1 if self.response.is_flexible(version) else 0


_REGISTRY: dict[int, ApiSpec] = {}


def register(request: type[Request], response: type[Response]) -> ApiSpec:
    """Pair ``request`` and ``response``; both must declare the same api key and versions."""
    if request.api_key != response.api_key:
        raise ValueError(f"{request.__name__} and {response.__name__} have different api keys")
    if request.valid_versions != response.valid_versions:
        raise ValueError(f"{request.__name__} and {response.__name__} differ in versions")
    name = ApiKey.name_of(request.api_key)
    spec = ApiSpec(request.api_key, name, request, response, request.valid_versions)
    _REGISTRY[request.api_key] = spec
    return spec


def spec_for(api_key: int) -> ApiSpec | None:
    return _REGISTRY.get(api_key)


def all_specs() -> list[ApiSpec]:
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]
