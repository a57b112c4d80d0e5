"""The client instances that ask for subscriptions and push metrics: Kafka's
``ClientMetricsManager``, keeping what they push.

Owns: ``ClientInstances``: GetTelemetrySubscriptions and PushTelemetry as Kafka answers
them, and the latest point of each metric series of each instance.

- A client that sends the zero uuid is given a new random instance id. An instance's
  subscription set is every subscription that matches it (client id, software name and
  version, instance id, source address and port); its interval the lowest of theirs
  (300000 ms when none matches); its subscription id a CRC32C of the metrics and the
  interval XORed with a hash of the instance id, so a changed set gives a new id. Every
  change to the subscriptions makes each instance re-evaluate on its next request.
- THROTTLING_QUOTA_EXCEEDED: a GetTelemetrySubscriptions sooner than one push interval after
  the instance's last request (unless its last push failed with UNKNOWN_SUBSCRIPTION_ID or
  UNSUPPORTED_COMPRESSION_TYPE), or a push sooner than one interval after the last one
  (the first push after a GetTelemetrySubscriptions and a terminating push always pass).
- PushTelemetry errors: INVALID_REQUEST for the zero instance id or a push after a
  terminating one; UNKNOWN_SUBSCRIPTION_ID for an outdated subscription id;
  UNSUPPORTED_COMPRESSION_TYPE for a codec Kafka does not know; TELEMETRY_TOO_LARGE over
  ``telemetry.max.bytes`` (compressed, or decompressed); INVALID_RECORD for a payload that
  does not decompress or parse as OTLP.
- An instance holds its latest push only (a client pushes every subscribed metric each
  time), so at most one payload's worth: on the request path the payload is decompressed
  and checked (``otlp.read_payload``) and kept as bytes; it is decoded into points the
  first time the instance is read (``Instance.settle``, from ``__iter__``), then kept
  decoded until the next push. A push nobody reads is never decoded.
- Lifetime, as Kafka's: an instance goes with the connection it was made on (Kafka's
  ``ClientConnectionDisconnectListener``: ``connection_closed``, counted in
  ``disconnected``), or when not heard from for max(``EXPIRY_FLOOR_MS`` (60 s),
  ``IDLE_INTERVALS`` (3) push intervals) (counted in ``expired``); past
  ``client.metrics.max.clients`` the least recently heard from is dropped (counted in
  ``evicted``; Kafka's cache holds 16384). As in Kafka, the connection is the one of the
  request that made the instance, or re-made it after a subscription change.

Runs on the event loop, synchronously (a request at a time): no locks, no I/O.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from crc32c import crc32c

from ...apis.telemetry_services import ClientInfo, Subscribed
from ...protocol.errors import ErrorCode
from ...protocol.messages.telemetry import PushTelemetryRequest
from ...records import Compression
from .otlp import PayloadError, Point, decode, read_payload
from .subscriptions import ALL_METRICS, INTERVAL_MS_DEFAULT, SubscriptionStore

# Kafka's order: the client picks the first it supports.
ACCEPTED_COMPRESSION = [Compression.ZSTD, Compression.LZ4, Compression.GZIP, Compression.SNAPPY]
IDLE_INTERVALS = 3
EXPIRY_FLOOR_MS = 60_000  # Kafka's DEFAULT_CACHE_EXPIRY_MS
_NEVER = -(10**15)
_ZERO = uuid.UUID(int=0)


def _java_hash(instance_id: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the xor of the two longs' halves."""
    high, low = instance_id.int >> 64, instance_id.int & (2**64 - 1)
    h = high ^ low
    return ((h >> 32) ^ h) & 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


@dataclass(slots=True)
class Instance:
    instance_id: uuid.UUID
    client: ClientInfo
    version: int = -1  # of the subscriptions it was evaluated against
    subscription_id: int = 0
    metrics: list[str] = field(default_factory=list)
    push_interval_ms: int = INTERVAL_MS_DEFAULT
    last_get_ms: int = _NEVER
    last_push_ms: int = _NEVER
    last_seen_ms: int = 0
    last_error: int = ErrorCode.NONE
    terminating: bool = False
    pushed_at: float | None = None  # wall-clock seconds of the last accepted push
    first_pushed_at: float | None = None  # ... and of the first
    pushes: int = 0
    resource: dict[str, str] = field(default_factory=dict)
    points: dict[str, Point] = field(default_factory=dict)
    pending: bytes | None = None  # the latest push, checked but not decoded yet
    connection_id: str = ""  # the connection it was made on

    def settle(self) -> None:
        """Decode the latest push into ``resource`` and ``points`` if not done yet."""
        if self.pending is not None:
            self.resource, points = decode(self.pending)
            self.points = {point.series: point for point in points}
            self.pending = None

    def match_values(self) -> dict[str, str]:
        c = self.client
        return {
            "client_instance_id": str(self.instance_id),
            "client_id": c.client_id,
            "client_software_name": c.software_name,
            "client_software_version": c.software_version,
            "client_source_address": c.address,
            "client_source_port": str(c.port),
        }


class ClientInstances:
    def __init__(
        self,
        subscriptions: SubscriptionStore,
        *,
        max_bytes: Callable[[], int],
        max_clients: Callable[[], int],
        clock_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
    ) -> None:
        self.subscriptions = subscriptions
        self.max_bytes = max_bytes
        self.max_clients = max_clients
        self.clock_ms = clock_ms
        self._instances: OrderedDict[uuid.UUID, Instance] = OrderedDict()  # least recent first
        self._by_connection: dict[str, uuid.UUID] = {}  # Kafka's clientConnectionIdMap
        self.expiry_floor_ms = EXPIRY_FLOOR_MS
        self._next_sweep_ms = 0
        self.evicted = 0  # dropped over client.metrics.max.clients
        self.expired = 0  # dropped after max(60 s, IDLE_INTERVALS push intervals) unheard
        self.disconnected = 0  # dropped with the connection they were made on
        self.throttled = 0
        self.unknown_subscription = 0
        self.pushes = 0
        self.push_errors = 0

    # ------------------------------------------------------------- instances

    def _evaluate(self, inst: Instance, connection_id: str) -> None:
        """The instance's subscription set, as Kafka's ``createClientInstance``."""
        values = inst.match_values()
        metrics: set[str] = set()
        everything = False
        interval = INTERVAL_MS_DEFAULT
        for sub in self.subscriptions.all():
            if sub.matches(values):
                everything |= ALL_METRICS in sub.metrics
                metrics.update(sub.metrics)
                interval = min(interval, sub.interval_ms)
        chosen = [ALL_METRICS] if everything else sorted(metrics)
        crc = crc32c(("[" + ", ".join(chosen) + "]" + str(interval)).encode())
        inst.subscription_id = _int32(crc ^ _java_hash(inst.instance_id))
        inst.metrics, inst.push_interval_ms = chosen, interval
        inst.version = self.subscriptions.version
        inst.last_get_ms = inst.last_push_ms = _NEVER  # a new instance, as in Kafka
        inst.connection_id = connection_id
        self._by_connection[connection_id] = inst.instance_id

    def _instance(self, instance_id: uuid.UUID, client: ClientInfo, now: int) -> Instance:
        self._sweep(now)
        inst = self._instances.get(instance_id)
        if inst is None:
            inst = Instance(instance_id, client)
            self._instances[instance_id] = inst
            cap = max(1, self.max_clients())
            while len(self._instances) > cap:
                self._forget(self._instances.popitem(last=False)[1])
                self.evicted += 1
        else:
            self._instances.move_to_end(instance_id)
        if inst.version != self.subscriptions.version:
            self._evaluate(inst, client.connection_id)
        inst.last_seen_ms = now
        return inst

    def _sweep(self, now: int) -> None:
        """Drop the instances unheard for max(60 s, IDLE_INTERVALS intervals) (at most once
        a second)."""
        if now < self._next_sweep_ms:
            return
        self._next_sweep_ms = now + 1000
        floor = self.expiry_floor_ms
        idle = [
            i
            for i in self._instances.values()
            if now - i.last_seen_ms > max(floor, IDLE_INTERVALS * i.push_interval_ms)
        ]
        for inst in idle:
            del self._instances[inst.instance_id]
            self._forget(inst)
        self.expired += len(idle)

    def _forget(self, inst: Instance) -> None:
        """Its connection's entry, once it is dropped otherwise (Kafka's expiry task)."""
        if self._by_connection.get(inst.connection_id) == inst.instance_id:
            del self._by_connection[inst.connection_id]

    def connection_closed(self, connection_id: str) -> None:
        """A connection closed: the instance made on it goes (Kafka's
        ``ClientConnectionDisconnectListener.onDisconnect``)."""
        instance_id = self._by_connection.pop(connection_id, None)
        if instance_id is not None and self._instances.pop(instance_id, None) is not None:
            self.disconnected += 1

    # ------------------------------------------------------------- requests

    def get_subscriptions(self, client: ClientInfo, instance_id: uuid.UUID) -> Subscribed:
        now = self.clock_ms()
        if instance_id == _ZERO:
            instance_id = uuid.uuid4()
            while instance_id in self._instances:
                instance_id = uuid.uuid4()
        inst = self._instance(instance_id, client, now)
        since = now - max(inst.last_get_ms, inst.last_push_ms)
        if since < inst.push_interval_ms and inst.last_error not in (
            ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        ):
            self.throttled += 1
            return Subscribed(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{instance_id}] arrived before the next push "
                "interval time",
            )
        inst.last_get_ms = now
        inst.last_error = ErrorCode.NONE
        return Subscribed(
            ErrorCode.NONE,
            client_instance_id=instance_id,
            subscription_id=inst.subscription_id,
            accepted_compression_types=[int(c) for c in ACCEPTED_COMPRESSION],
            push_interval_ms=inst.push_interval_ms,
            telemetry_max_bytes=self.max_bytes(),
            delta_temporality=True,
            requested_metrics=list(inst.metrics),
        )

    def push(self, client: ClientInfo, request: PushTelemetryRequest) -> tuple[int, str | None]:
        instance_id, terminating = request.client_instance_id, request.terminating
        compression_type, metrics = request.compression_type, bytes(request.metrics or b"")
        if instance_id == _ZERO:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Invalid request from the client [{instance_id}], invalid client instance id",
            )
        now = self.clock_ms()
        inst = self._instance(instance_id, client, now)
        code, message = self._refusal(
            inst, request.subscription_id, terminating, compression_type, metrics
        )
        inst.terminating = inst.terminating or terminating
        if code != ErrorCode.NONE:
            inst.last_error = code
            self.push_errors += 1
            return code, message
        if metrics:
            try:
                raw = read_payload(compression_type, metrics, self.max_bytes())
            except PayloadError as exc:
                inst.last_error = exc.error_code
                self.push_errors += 1
                return exc.error_code, str(exc)
            # the latest push replaces the last one: what one instance holds is bounded by
            # one payload (telemetry.max.bytes), however many it pushes
            inst.pending, inst.resource, inst.points = raw, {}, {}
        inst.last_error = ErrorCode.NONE
        inst.pushed_at = time.time()
        if inst.first_pushed_at is None:
            inst.first_pushed_at = inst.pushed_at
        inst.pushes += 1
        self.pushes += 1
        return ErrorCode.NONE, None

    def _refusal(
        self,
        inst: Instance,
        subscription_id: int,
        terminating: bool,
        compression_type: int,
        metrics: bytes,
    ) -> tuple[int, str | None]:
        """Kafka's ``validatePushRequest``, in its order."""
        now = inst.last_seen_ms
        name = inst.instance_id
        if inst.terminating:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Client [{name}] sent the previous request with state terminating to TRUE, "
                "can not accept any requests after that",
            )
        first_after_get = inst.last_get_ms > inst.last_push_ms
        if first_after_get or now - inst.last_push_ms >= inst.push_interval_ms:
            inst.last_push_ms = now
        elif not terminating:
            self.throttled += 1
            return (
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{name}] arrived before the next push interval time",
            )
        if subscription_id != inst.subscription_id:
            self.unknown_subscription += 1
            return (
                ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
                f"Unknown client subscription id for the client [{name}]",
            )
        if compression_type not in {int(c) for c in Compression}:
            return (
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                f"Unknown compression type [{compression_type}] is received in telemetry "
                f"request from [{name}]",
            )
        if len(metrics) > self.max_bytes():
            return (
                ErrorCode.TELEMETRY_TOO_LARGE,
                f"Telemetry request from [{name}] is larger than the maximum allowed size "
                f"[{self.max_bytes()}]",
            )
        return ErrorCode.NONE, None

    # ------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self._instances)

    def __iter__(self) -> Iterator[Instance]:
        """Every instance, its latest push decoded."""
        self._sweep(self.clock_ms())
        for inst in list(self._instances.values()):
            inst.settle()
            yield inst

    def figures(self) -> dict[str, Any]:
        """The counters of the JSON metrics snapshot's ``client_telemetry``."""
        self._sweep(self.clock_ms())
        return {
            "instances": len(self._instances),
            "max_instances": self.max_clients(),
            "subscriptions": len(self.subscriptions.names()),
            "pushes": self.pushes,
            "push_errors": self.push_errors,
            "throttled": self.throttled,
            "unknown_subscription": self.unknown_subscription,
            "evicted": self.evicted,
            "expired": self.expired,
            "disconnected": self.disconnected,
        }
