"""The narrow view of the broker that API handlers work through.

Owns: the ``BrokerView`` protocol and the plain records it hands out (``BrokerEndpoint``,
``TopicInfo``, ``PartitionInfo``) or takes (``TxnMarker``) and ``broker_name_problem``
(which broker resource names are this broker's config: its id, or ``""``, the cluster-wide
default). The server implements the protocol; handlers depend on nothing else of it, so
they can be read (and tested) without the network or trio.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..security.acl import AclBinding, AclFilter, AclOperation, ResourceType
from .fetch_sessions import FetchSessionCache
from .outcomes import Deferred
from .telemetry_services import TelemetryView
from .txn_services import ActiveProducer, TransactionsView

if TYPE_CHECKING:
    from ..security.scram import ScramCredential


class Deferrable(Protocol):
    """A request that may be parked: a ``RequestContext`` (its ``extras`` carry the
    request the broker answers later)."""

    extras: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create, as CreateTopics, auto-creation and the coordinators ask for it:
    ``num_partitions`` of ``replication_factor`` replicas each, or where ``replicas``
    names them per partition (an explicit assignment; its size wins)."""

    name: str
    num_partitions: int
    configs: Mapping[str, str | None] = field(default_factory=dict)
    replication_factor: int = 1
    replicas: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class ClusterBroker:
    broker_id: int
    endpoints: dict[str, tuple[str, int]]  # listener name -> (host, port)
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """The cluster as one UpdateMetadata describes it, decoded: a newer one replaces it
    whole."""

    controller_id: int
    controller_epoch: int
    brokers: list[ClusterBroker]
    partitions: dict[str, dict[int, PartitionInfo]]  # topic -> partition -> its state
    topic_ids: dict[str, uuid.UUID]


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    """One partition state of a LeaderAndIsr request, decoded."""

    topic: str
    topic_id: uuid.UUID | None
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    version: int = 0  # of the partition's state (ZooKeeper's node version)


class TopicError(Exception):
    """A topic operation refused with a Kafka error code and a message for the client."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class ConfigChangeError(TopicError):
    """A configuration change refused (INVALID_CONFIG, INVALID_REQUEST ...): nothing changed."""


def broker_name_problem(name: str, broker_id: int, *, describe: bool = True) -> str | None:
    """Why broker resource ``name`` is not this broker's (``None``: it is, or it is ``""``,
    the cluster-wide default), in Kafka's words (DescribeConfigs' or, with ``describe``
    false, AlterConfigs'); answered with INVALID_REQUEST."""
    if name == "":
        return None
    try:
        given = int(name)
    except ValueError:
        return f"Broker id must be an integer, but it is: {name}"
    if given != broker_id:
        expected = f"{broker_id} or empty string" if describe else str(broker_id)
        return f"Unexpected broker id, expected {expected}, but received {name}"
    return None


@dataclass(slots=True)
class WriteResult:
    """The outcome of appending one partition's records (Produce)."""

    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)
    # acks=all: the high watermark the records need before the produce is answered
    required_offset: int = -1


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """A transaction's end to write in each of its partitions (WriteTxnMarkers)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool  # False: abort
    partitions: Sequence[tuple[str, int]]


class ReadItem(NamedTuple):
    """One partition of a Fetch: where to read, and the epochs the fetcher knows."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1  # checked against the leader's (-1: not checked)
    last_fetched_epoch: int = -1  # checked against the log's epochs (-1: not checked)


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    """One log directory, as DescribeLogDirs reports it."""

    path: str
    error_code: int
    partitions: list[tuple[str, int, int]]  # topic, partition, size in bytes
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(slots=True)
class ReadResult:
    """The outcome of reading one partition (Fetch): records leave as buffers or file
    regions, never decoded."""

    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Any = None  # None, bytes, or a list of buffers / file regions
    size: int = 0
    # (epoch, end offset) when the fetcher's last fetched epoch diverges from the log
    diverging_epoch: tuple[int, int] | None = None
    # a follower's read held back by the leader's replication throttle (KIP-73): no
    # records, the offsets right
    held: bool = False
    # read_committed: (producer id, first offset) of the aborted transactions overlapping
    # the records returned
    aborted_transactions: list[tuple[int, int]] | None = None


class ConfigEntryView(Protocol):
    """One configuration value as DescribeConfigs and CreateTopics report it."""

    @property
    def name(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def is_sensitive(self) -> bool: ...

    @property
    def source(self) -> int: ...

    @property
    def text(self) -> str | None: ...


class BrokerView(Protocol):
    """Everything a handler may ask of the broker."""

    fetch_sessions: FetchSessionCache  # KIP-227's sessions, used by Fetch

    broker_id: int
    cluster_id: str

    @property
    def controller_id(self) -> int: ...

    @property
    def telemetry(self) -> TelemetryView:
        """KIP-714's client metrics and their subscriptions."""
        ...

    @property
    def cluster_described(self) -> bool:
        """Whether brokers and controller are known (in a ZooKeeper cluster: once the
        controller's first UpdateMetadata came)."""
        ...

    def config_value(self, key: str) -> Any: ...

    def endpoints(self, listener: str) -> Sequence[BrokerEndpoint]:
        """Every broker's endpoint on ``listener`` (the one the request came in on)."""
        ...

    def api_versions(self, plane: str) -> Sequence[tuple[int, int, int]]:
        """(api key, min version, max version) of every API served on ``plane``."""
        ...

    # -- topics

    def topic(self, name: str) -> TopicInfo | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None: ...

    def topics(self) -> Sequence[TopicInfo]: ...

    async def create_topic(self, topic: NewTopic, *, validate_only: bool = False) -> TopicInfo:
        """Create a topic (raises ``TopicError``); with ``validate_only`` check it only."""
        ...

    async def delete_topic(self, name: str) -> None: ...

    async def create_partitions(
        self,
        name: str,
        count: int,
        *,
        validate_only: bool,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Grow a topic to ``count`` partitions (raises ``TopicError``), the new ones
        placed as the topic's others, or on the brokers ``replicas`` names per new
        partition."""
        ...

    def topic_config_entries(
        self, name: str, overrides: Mapping[str, str | None] | None = None
    ) -> Mapping[str, ConfigEntryView]: ...

    def broker_config_entries(self, cluster_default: bool = False) -> Mapping[str, ConfigEntryView]:
        """This broker's effective config; with ``cluster_default`` only the keys set at
        the cluster-wide default level (broker resource ``""``)."""
        ...

    def config_type_name(self, name: str, resource_type: int) -> str: ...

    def config_doc(self, name: str, resource_type: int) -> str | None: ...

    def config_synonyms(
        self, name: str, resource_type: int, resource_name: str
    ) -> Sequence[tuple[str, str | None, int]]:
        """(name, value text, source) of every setting that could give the key its value,
        the one in force first (DescribeConfigs' synonyms)."""
        ...

    async def replace_configs(
        self,
        resource_type: int,
        name: str,
        configs: Mapping[str, str | None],
        *,
        validate_only: bool,
    ) -> None:
        """AlterConfigs for one resource (raises ``ConfigChangeError`` / ``TopicError``)."""
        ...

    async def alter_configs_incrementally(
        self,
        resource_type: int,
        name: str,
        operations: Sequence[tuple[str, int, str | None]],
        *,
        validate_only: bool,
    ) -> None:
        """IncrementalAlterConfigs for one resource (raises as ``replace_configs``)."""
        ...

    # -- the data path

    # Each call is one request's storage work: the broker runs it as one job on an io
    # thread, answers in the items' order, one answer per item.

    async def produce_many(
        self, items: Sequence[tuple[str, int, memoryview | None]], acks: int
    ) -> list[WriteResult]:
        """Append each (topic, partition, records)."""
        ...

    async def read_many(
        self,
        items: Sequence[ReadItem],
        max_bytes: int,
        *,
        committed_only: bool,
        replica_id: int = -1,
    ) -> list[ReadResult]:
        """Read each item, ``max_bytes`` in all; the first batch found comes back even if
        larger (KIP-74). A follower (``replica_id`` >= 0) reads up to the log end."""
        ...

    def replication_sent(self, sizes: Sequence[tuple[str, int, int]]) -> None:
        """A follower's Fetch response carries these (topic, partition, bytes): those of
        partitions throttled here as leader count against its replication throttle."""
        ...

    def consumer_fetched(self, sizes: Sequence[tuple[str, int, int]]) -> None:
        """A consumer's Fetch response carries these (topic, partition, bytes), one per
        partition it asked for that answered without an error: counted as its bytes out
        and fetch requests."""
        ...

    def log_size(self, topic: str, partition: int) -> int:
        """The partition's size in bytes, -1 if it has no log (cheap: for parked fetches)."""
        ...

    async def locate_group_coordinator(self, group_id: str) -> tuple[int, int, str | None]:
        """FindCoordinator for a group: (broker id, error code, message)."""
        ...

    @property
    def transactions(self) -> TransactionsView:
        """The transaction coordinator."""
        ...

    async def describe_producers(
        self, topic: str, partition: int
    ) -> tuple[int, list[ActiveProducer]]:
        """The producers a partition this broker leads keeps state for (error: the
        partition is not here, or not led here)."""
        ...

    def consumer_horizon(
        self, topic: str, partition: int, committed_only: bool = False
    ) -> int | None:
        """How far a parked consumer fetch may read, when it waits for that to move
        rather than for the log to grow: a replicated partition's high watermark, or its
        last stable offset for read_committed (also a single replica's while a
        transaction holds it below the log end); None otherwise."""
        ...

    def replication_status(self, topic: str, partition: int, required_offset: int) -> int | None:
        """An acks=all produce waiting for the high watermark to reach
        ``required_offset``: None while it waits, else its error code."""
        ...

    async def list_offsets_many(
        self, items: Sequence[tuple[str, int, int, int]], *, committed_only: bool
    ) -> list[tuple[int, int, int, int]]:
        """(error, offset, timestamp, leader epoch) for each (topic, partition, timestamp,
        current leader epoch or -1)."""
        ...

    def epoch_end_offsets(
        self, items: Sequence[tuple[str, int, int, int]]
    ) -> list[tuple[int, int, int]]:
        """(error, epoch, end offset) for each (topic, partition, leader epoch, current
        leader epoch or -1): OffsetForLeaderEpoch, answered without waiting."""
        ...

    async def log_dirs(self, wanted: Mapping[str, Sequence[int]] | None) -> list[LogDirInfo]:
        """Each log directory with the partitions it holds (those of ``wanted``; all for
        None) and its volume's size."""
        ...

    async def delete_records_many(
        self, items: Sequence[tuple[str, int, int]]
    ) -> list[tuple[int, int]]:
        """(error, low watermark) for each (topic, partition, offset)."""
        ...

    async def new_producer_id(self) -> int: ...

    async def write_txn_markers(
        self, markers: Sequence[TxnMarker]
    ) -> list[dict[tuple[str, int], int]]:
        """Append each marker as the leader of each of its partitions and wait until the
        ISR holds it (acks=-1); per marker, an error code per (topic, partition): NONE,
        UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
        INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, KAFKA_STORAGE_ERROR,
        REQUEST_TIMED_OUT."""
        ...

    # -- client quotas (the same store as the admin API's)

    def client_quotas(self) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        """Every quota entity (type -> name, None: default) with its values."""
        ...

    async def alter_client_quota(
        self,
        entity: dict[str, str | None],
        changes: dict[str, float | None],
        *,
        validate_only: bool,
    ) -> tuple[int, str | None]:
        """Set (a number) or remove (None) quota values; (error code, message)."""
        ...

    # -- authorization (the same ACL store as the admin API's)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        log_denied: bool = True,
    ) -> bool:
        """Whether the request may do ``operation`` on the resource (always, when no
        authorizer is configured); a denial is counted and, if ``log_denied``, logged."""
        ...

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether ``operation`` is allowed on at least one resource of the type."""
        ...

    def find_acls(self, acl_filter: AclFilter) -> list[AclBinding]: ...

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None: ...

    async def delete_acls(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """Delete what each filter matches; per filter, the bindings it matched."""
        ...

    # -- SCRAM credentials (the same store as SASL's and the admin API's /v1/users)

    def scram_credentials(self) -> Mapping[str, Mapping[str, ScramCredential]]:
        """user -> mechanism -> stored credential."""
        ...

    async def alter_scram_credentials(
        self,
        upserts: Sequence[tuple[str, ScramCredential]],
        deletions: Sequence[tuple[str, str]],
    ) -> None:
        """Store and delete (user, mechanism) credentials, all at once."""
        ...

    # -- the control plane (LeaderAndIsr, StopReplica, UpdateMetadata)

    async def leader_and_isr(
        self, controller_epoch: int, assignments: Sequence[PartitionAssignment]
    ) -> list[int]: ...

    async def stop_replicas(
        self, controller_epoch: int, partitions: Sequence[tuple[str, int, bool]]
    ) -> list[int]: ...

    async def update_metadata(self, metadata: ClusterMetadata) -> int: ...

    # -- the controller's (ControlledShutdown, ElectLeaders, partition reassignments)

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[int, list[tuple[str, int]]]:
        """(error code, the partitions the broker still leads)."""
        ...

    async def elect_leaders(
        self, election_type: int, partitions: Iterable[tuple[str, int]] | None, timeout_ms: int
    ) -> dict[tuple[str, int], int]:
        """An error code per partition (NONE: elected; NOT_CONTROLLER on other brokers)."""
        ...

    async def alter_reassignments(
        self,
        targets: Mapping[tuple[str, int], list[int] | None],
        timeout_ms: int,
        allow_rf_change: bool = True,
    ) -> tuple[int, dict[tuple[str, int], tuple[int, str | None]]]:
        """(top-level error code, (error code, message) per partition): reassignments
        begun, or cancelled (None); NOT_CONTROLLER on other brokers. ``allow_rf_change``
        False refuses a target of another replica count (INVALID_REPLICATION_FACTOR)."""
        ...

    def list_reassignments(
        self, partitions: Iterable[tuple[str, int]] | None
    ) -> tuple[int, dict[tuple[str, int], tuple[list[int], ...]]]:
        """(top-level error code, (replicas, adding, removing) per partition being moved,
        of ``partitions`` or all); NOT_CONTROLLER on other brokers."""
        ...

    async def side_by_side(self, jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
        """Run ``jobs`` concurrently; return once all have ended (CreateTopics' topics,
        whose waits for the controller overlap)."""
        ...

    # -- waiting without holding a handler

    def defer(
        self,
        ctx: Deferrable,
        *,
        keys: Sequence[Hashable],
        timeout_ms: int,
        ready: Callable[[], bool],
        complete: Callable[[bool], Awaitable[Any]],
        purgatory: str = "fetch",
    ) -> Deferred:
        """Park the request until ``ready()`` or ``timeout_ms``; ``complete(expired)``
        builds the response then."""
        ...
