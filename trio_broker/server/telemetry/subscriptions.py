"""Client metrics subscriptions (KIP-714): the ``CLIENT_METRICS`` config resource.

Owns: what a subscription is (``Subscription``: a name, metric-name prefixes, a push
interval and a match on the client), Kafka's ``ClientMetricsConfigs`` rules for its three
keys (``parse_subscription``: ``metrics``, a comma-separated list of prefixes, ``*`` for
every metric; ``interval.ms``, 100..3600000, default 300000; ``match``, comma-separated
``<key>=<regex>`` on ``client_instance_id``, ``client_id``, ``client_software_name``,
``client_software_version``, ``client_source_address`` and ``client_source_port``), the
IncrementalAlterConfigs operations on them (``apply_operations``), and
``SubscriptionStore``, the set of subscriptions persisted as ``client_metrics.json`` in the
first log dir (written whole and atomically on every change). Every change bumps
``version``, so that client instances re-evaluate their subscription on their next request,
as Kafka's ``subscriptionUpdateVersion``.

Errors are Kafka's: an empty name, an unknown key or an interval out of bounds is
INVALID_REQUEST; a bad match pattern or a value of the wrong type INVALID_CONFIG.
Blocking file I/O in ``load``/``put``/``delete`` (called from a worker thread); must not
know about client instances or ZooKeeper (``coordination`` keeps a cluster's set in step).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ...protocol.errors import ErrorCode
from ..datadir import JsonDocument

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_KEYS = (METRICS, INTERVAL_MS, MATCH)
ALL_METRICS = "*"
INTERVAL_MS_DEFAULT = 300_000
INTERVAL_MS_MIN, INTERVAL_MS_MAX = 100, 3_600_000
MATCH_KEYS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)
# IncrementalAlterConfigs' operations
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_LIST_KEYS = frozenset({METRICS, MATCH})


class SubscriptionError(Exception):
    """A subscription or a change to one that Kafka would refuse, with Kafka's code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]
    configs: Mapping[str, str] = field(default_factory=dict)  # as set, Kafka's names

    def matches(self, client: Mapping[str, str]) -> bool:
        """Every pattern matches the whole of the client's value (Kafka's ``matches()``)."""
        return all(p.fullmatch(client.get(k, "")) for k, p in self.match.items())


def _items(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_match(patterns: Iterable[str]) -> dict[str, re.Pattern[str]]:
    """Kafka's ``parseMatchingPatterns``: ``key=regex`` each, split at the only ``=``."""
    found: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        if len(parts) != 2 or parts[0].strip() not in MATCH_KEYS:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Illegal client matching pattern: {pattern} (expected <key>=<regex>, "
                f"key one of {', '.join(MATCH_KEYS)})",
            )
        try:
            found[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error as exc:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}: {exc}"
            ) from None
    return found


def parse_subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """The subscription ``name`` with ``configs`` (unset keys take Kafka's defaults)."""
    if not name:
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in CONFIG_KEYS:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
            )
    interval = INTERVAL_MS_DEFAULT
    if INTERVAL_MS in configs:
        try:
            interval = int(str(configs[INTERVAL_MS]).strip())
        except ValueError:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Invalid value {configs[INTERVAL_MS]} for configuration interval.ms: "
                "Not a number of type INT",
            ) from None
        if not INTERVAL_MS_MIN <= interval <= INTERVAL_MS_MAX:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {interval} for interval.ms, interval must be between 100 and "
                "3600000 (1 hour)",
            )
    return Subscription(
        name=name,
        metrics=tuple(_items(configs.get(METRICS, ""))),
        interval_ms=interval,
        match=MappingProxyType(parse_match(_items(configs.get(MATCH, "")))),
        configs=MappingProxyType(dict(configs)),
    )


def apply_operations(
    current: Mapping[str, str], ops: Iterable[tuple[str, int, str | None]]
) -> dict[str, str]:
    """IncrementalAlterConfigs on one subscription's configs: SET, DELETE, and APPEND /
    SUBTRACT on the list keys (``metrics``, ``match``)."""
    configs = dict(current)
    seen: set[str] = set()
    for key, op, value in ops:
        if key in seen:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {key}"
            )
        seen.add(key)
        if key not in CONFIG_KEYS:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
            )
        if op == SET:
            configs[key] = value or ""
        elif op == DELETE:
            configs.pop(key, None)
        elif op in (APPEND, SUBTRACT):
            if key not in _LIST_KEYS:
                raise SubscriptionError(
                    ErrorCode.INVALID_CONFIG,
                    f"Config value append is not allowed for config key: {key}",
                )
            have = _items(configs.get(key, ""))
            given = _items(value or "")
            if op == APPEND:
                have += [v for v in given if v not in have]
            else:
                have = [v for v in have if v not in given]
            configs[key] = ",".join(have)
        else:
            raise SubscriptionError(ErrorCode.INVALID_REQUEST, f"unknown operation {op}")
    return configs


class SubscriptionStore:
    """Every subscription by name; ``version`` counts the changes since start."""

    def __init__(self, data_dir: Path) -> None:
        self._doc = JsonDocument(data_dir / "client_metrics.json", what="client metrics")
        self._subscriptions: dict[str, Subscription] = {}
        self._lock = threading.Lock()
        self.version = 0

    def load(self) -> None:
        data = self._doc.read() or {}
        with self._doc.parsing():
            found = {
                name: parse_subscription(name, {k: str(v) for k, v in configs.items()})
                for name, configs in data.get("subscriptions", {}).items()
            }
        self._subscriptions = found
        self.version += 1

    def get(self, name: str) -> Subscription | None:
        return self._subscriptions.get(name)

    def all(self) -> list[Subscription]:
        return [self._subscriptions[n] for n in sorted(self._subscriptions)]

    def names(self) -> list[str]:
        return sorted(self._subscriptions)

    def put(self, subscription: Subscription) -> None:
        """Add or replace ``subscription`` (durable before it is in force)."""
        with self._lock:
            found = dict(self._subscriptions)
            found[subscription.name] = subscription
            self._save(found)

    def delete(self, name: str) -> bool:
        with self._lock:
            if name not in self._subscriptions:
                return False
            found = {n: s for n, s in self._subscriptions.items() if n != name}
            self._save(found)
            return True

    def _save(self, found: dict[str, Subscription]) -> None:
        self._doc.write({"subscriptions": {n: dict(s.configs) for n, s in sorted(found.items())}})
        self._subscriptions = found
        self.version += 1
