"""The narrow view of the broker that the admin API reads and controls.

Owns: the ``AdminView`` protocol (with ``FaultControl``, a testing broker's fault rules),
the plain frozen records it hands out (``BrokerInfo``, ``PoolsState``, ``ConnectionInfo``,
``ClientQuota``, ``ConfigState``, ``DashboardData`` ...), the two errors it raises
(``NotFound``, ``Invalid``) and the limits that are part of the HTTP contract
(``MAX_POOL_SIZE``). The broker implements the protocol with an adapter
(``trio_broker.server.admin_adapter.view``); the admin package depends on nothing else of the
broker, so the app can be read, and tested, against any object with this shape.

Every method runs on the broker's event loop: the synchronous ones must return at once,
the asynchronous ones may wait (e.g. for a file write in a worker thread) but never block.
Must not: hand out live broker objects (connections, pools): only copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .acl_view import AclView
from .client_metrics_view import ClientMetricsView
from .topic_view import TopicView

MIN_POOL_SIZE = 1
MAX_POOL_SIZE = 256
"""A pool (io handlers, a listener's processors) may be resized to 1..256 members."""


class NotFound(LookupError):
    """What a request names does not exist (HTTP 404). ``code`` is the error slug."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Invalid(ValueError):
    """A change the broker refuses (HTTP 400); nothing was changed.

    ``key`` and ``value`` name what was refused, when the refusal is about one setting.
    """

    def __init__(
        self, code: str, message: str, *, key: str | None = None, value: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.key = key
        self.value = value


@dataclass(frozen=True, slots=True)
class ListenerInfo:
    name: str
    host: str
    port: int
    security_protocol: str
    plane: str  # "data" or "control"


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    cluster_id: str
    version: str
    uptime_s: float
    started_at: str  # ISO 8601, UTC
    listeners: tuple[ListenerInfo, ...]
    admin_url: str | None


@dataclass(frozen=True, slots=True)
class IoPoolState:
    size: int
    busy: int
    idle_ratio: float


@dataclass(frozen=True, slots=True)
class NetworkPoolState:
    plane: str
    size: int
    idle_ratio: float
    connections: int


@dataclass(frozen=True, slots=True)
class QueueState:
    size: int
    capacity: int


@dataclass(frozen=True, slots=True)
class PoolsState:
    io: IoPoolState
    network: Mapping[str, NetworkPoolState]  # by listener name
    request_queue: Mapping[str, QueueState]  # by plane


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    id: str
    listener: str
    processor: int
    remote: str
    principal: str
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    mute_state: str
    throttle_remaining_ms: float
    idle_ms: float
    requests: int
    bytes_in: int
    bytes_out: int


@dataclass(frozen=True, slots=True)
class ClientQuota:
    """One quota entity and its values.

    ``entity`` maps entity types (``"client-id"`` today; ``"user"`` later) to a name, or to
    ``None`` for the default entity, as Kafka's DescribeClientQuotas does.
    """

    entity: Mapping[str, str | None]
    values: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class ScramUser:
    """A SCRAM user: its mechanisms and their iteration counts (never a secret)."""

    name: str
    credentials: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class DashboardData:
    """What the Spark jobs left in ``dashboard.data.dir`` for the dashboard.

    ``trends`` is their ``dashboard.json``, ``recommendations`` the advisor's
    ``recommendations.json`` and ``balance`` the balance job's ``balance/plan.json``
    (``None``: not there yet); ``problems`` says why a file that is there could not be
    read.
    """

    data_dir: str
    trends: Mapping[str, Any] | None
    recommendations: Mapping[str, Any] | None
    problems: tuple[str, ...] = ()
    balance: Mapping[str, Any] | None = None


# Where a key's value comes from, lowest precedence first (the broker's config names them).
CONFIG_ORIGINS = ("default", "file", "env", "override", "dynamic-default", "dynamic")


@dataclass(frozen=True, slots=True)
class ConfigState:
    effective: Mapping[str, str | None]  # every key, as text; secrets masked; None = unset
    dynamic_keys: tuple[str, ...]
    dynamic_settings: Mapping[str, str]  # this broker's run-time changes, secrets masked
    # every key's origin: default, file, env (TRIO_BROKER_*), override, dynamic-default
    # (the cluster-wide default's run-time change) or dynamic (this broker's)
    sources: Mapping[str, str] = field(default_factory=dict)
    # the cluster-wide default's run-time changes (Kafka's broker resource ""), masked
    default_settings: Mapping[str, str] = field(default_factory=dict)


class FaultControl(Protocol):
    """The broker's fault rules (``testing.faults.enable``), as JSON-ready records: each
    rule as ``admin.faults`` documents it, with its ``matched`` and ``hits`` counts."""

    def add(self, spec: Mapping[str, Any]) -> Mapping[str, Any]:
        """Add a rule; ``Invalid`` naming the field when the description is refused."""
        ...

    def rules(self) -> Sequence[Mapping[str, Any]]: ...

    def get(self, rule_id: int) -> Mapping[str, Any]:
        """One rule; ``NotFound`` when no rule has that id."""
        ...

    def remove(self, rule_id: int) -> Mapping[str, Any]:
        """Remove one rule and return it; ``NotFound`` when no rule has that id."""
        ...

    def clear(self) -> Sequence[Mapping[str, Any]]:
        """Remove every rule and return them."""
        ...


class AdminView(AclView, TopicView, ClientMetricsView, Protocol):
    """What the admin API may read and change in a running broker (the ACLs: ``AclView``;
    the topics: ``TopicView``; client telemetry: ``ClientMetricsView``)."""

    @property
    def admin_token(self) -> str | None:
        """The bearer token every protected request must carry; ``None``: no token."""
        ...

    @property
    def ready(self) -> bool:
        """True once every Kafka listener accepts, false again from shutdown on."""
        ...

    def broker_info(self) -> BrokerInfo: ...

    def pools(self) -> PoolsState: ...

    async def resize_io_pool(self, size: int) -> None:
        """Resize the data-plane handler pool (and the I/O limiter, and num.io.threads)."""
        ...

    async def resize_network_pool(self, listener: str, size: int) -> None:
        """Resize a data-plane listener's processors. ``NotFound`` for an unknown
        listener, ``Invalid`` for the control-plane one."""
        ...

    def listener_names(self) -> Sequence[str]: ...

    def mute_states(self) -> Sequence[str]:
        """Every mute state name a connection can be in (Kafka's names)."""
        ...

    def connections(self) -> Sequence[ConnectionInfo]: ...

    def quota_keys(self) -> Sequence[str]:
        """The quota value names accepted (Kafka's: producer_byte_rate, ...)."""
        ...

    def client_quotas(self) -> Sequence[ClientQuota]: ...

    async def alter_client_quota(
        self, client_id: str | None, changes: Mapping[str, float | None]
    ) -> ClientQuota:
        """Set (a number) or remove (``None``) values of one client-id entity
        (``None``: the default entity). ``Invalid`` if a value is refused."""
        ...

    async def delete_client_quota(self, client_id: str | None) -> ClientQuota:
        """Remove one entity's quotas and return what they were; ``NotFound`` if none."""
        ...

    def scram_users(self) -> Sequence[ScramUser]: ...

    async def set_scram_credential(
        self, name: str, mechanism: str, password: str, iterations: int
    ) -> ScramUser:
        """Store ``name``'s credential for ``mechanism`` (salted, hashed) and return the user."""
        ...

    async def delete_scram_user(self, name: str, mechanism: str | None) -> ScramUser:
        """Remove credentials (None: all); what was removed; ``NotFound`` if none."""
        ...

    def metrics_snapshot(self) -> Mapping[str, Any]: ...

    async def cluster(self) -> Mapping[str, Any]:
        """What this broker knows of its cluster: controller, brokers (with their admin
        API URLs where known), every partition's leader and ISR, the ZooKeeper session."""
        ...

    def transactions(self) -> Mapping[str, Any]:
        """The transaction coordinator's figures and transactional ids, and the LSO lag of
        the partitions this broker leads."""
        ...

    def prometheus_text(self) -> bytes: ...

    async def dashboard_data(self) -> DashboardData:
        """The files in ``dashboard.data.dir`` (read in a worker thread)."""
        ...

    def config(self) -> ConfigState: ...

    @property
    def faults(self) -> FaultControl | None:
        """The fault rules; ``None`` unless the broker runs with testing.faults.enable."""
        ...

    async def update_config(
        self, settings: Mapping[str, str | None], *, dry_run: bool
    ) -> ConfigState:
        """Apply run-time changes of dynamic keys (``None`` reverts one) and return the
        resulting state; ``dry_run`` only validates. ``Invalid`` naming the key for an
        unknown or static key or a bad value; nothing is changed then."""
        ...
