"""The broker's client telemetry: the ``TelemetryView`` the KIP-714 handlers and the admin
API work through.

Owns: ``ClientTelemetry``, which joins the subscriptions (``SubscriptionStore``) and the
client instances (``ClientInstances``, whose ``get_subscriptions`` and ``push`` it hands
out as its own: the two requests are theirs); changes a subscription (``alter_subscription``,
checked, then stored: in the data dir on one broker; in a ZooKeeper cluster ``store_change``
is replaced by ``coordination``'s, which writes ZooKeeper first and every broker follows);
and reads the clients out (``clients``: the admin API's ``GET /v1/client-metrics``) and
their series for Prometheus (``series``, only while
``client.metrics.prometheus.enable`` is true).

The bytes of a client (``clients``' ``broker_bytes_in``/``_out``) are the broker's own
count, not a metric the client pushed: the caller hands ``clients`` the open connections'
counters (``ConnectionBytes``, which the network layer keeps for every connection
anyway) and each instance gets the sum over the connections of the same client id,
software name and version and source address as its own (a client pushes on one of the
several connections it may open; a consumer's group coordinator connection is another).
The join is made when read, so a request costs nothing more. Clients that share all four
(two processes on one host with the same client id) share the figures, which
``broker_bytes_instances`` says. Must not: touch the network or ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import trio

from ...apis.services import ConfigChangeError
from ...apis.telemetry_services import ClientInfo
from .instances import ClientInstances
from .otlp import HISTOGRAM
from .subscriptions import (
    CONFIG_KEYS,
    INTERVAL_MS,
    INTERVAL_MS_DEFAULT,
    SET,
    Subscription,
    SubscriptionError,
    SubscriptionStore,
    apply_operations,
    parse_subscription,
)

# (name, configs): configs empty deletes the subscription
StoreChange = Callable[[str, Mapping[str, str]], Awaitable[None]]


class ConnectionBytes(NamedTuple):
    """One open connection's identity and byte counters, as the network layer counts them
    (every byte read from and written to the socket, all requests and responses)."""

    id: str
    client_id: str
    software_name: str
    software_version: str
    address: str  # the client's host
    bytes_in: int  # received from the client
    bytes_out: int  # sent to it


Key = tuple[str, str, str, str]  # client id, software name, software version, address


class ClientTelemetry:
    def __init__(self, data_dir: Path, config: Callable[[], Any]) -> None:
        self.config = config
        self.store = SubscriptionStore(data_dir)
        self.instances = ClientInstances(
            self.store,
            max_bytes=lambda: self.config()["telemetry.max.bytes"],
            max_clients=lambda: self.config()["client.metrics.max.clients"],
        )
        self.store_change: StoreChange = self.keep
        # The two requests are the instances' own (the view's methods, not forwarded).
        self.get_subscriptions = self.instances.get_subscriptions
        self.push = self.instances.push

    # ------------------------------------------------------------ subscriptions

    def subscription_names(self) -> Sequence[str]:
        return self.store.names()

    def subscription_configs(self, name: str) -> Mapping[str, tuple[str, bool]]:
        sub = self.store.get(name)
        configs = sub.configs if sub is not None else {}
        defaults = {"metrics": "", INTERVAL_MS: str(INTERVAL_MS_DEFAULT), "match": ""}
        return {
            k: (configs[k], True) if k in configs else (defaults[k], False) for k in CONFIG_KEYS
        }

    def check(
        self, name: str, ops: Sequence[tuple[str, int, str | None]], *, replace: bool
    ) -> dict[str, str]:
        """The subscription's configs after ``ops`` (raises ``SubscriptionError``)."""
        current = self.store.get(name)
        base: Mapping[str, str] = {} if replace or current is None else current.configs
        if replace:
            ops = [(k, SET, v) for k, _, v in ops]
        configs = apply_operations(base, ops)
        parse_subscription(name, configs)  # every key removed: valid, it is deleted
        return configs

    async def alter_subscription(
        self,
        name: str,
        ops: Sequence[tuple[str, int, str | None]],
        *,
        validate_only: bool,
        replace: bool = False,
    ) -> None:
        try:
            configs = self.check(name, ops, replace=replace)
        except SubscriptionError as exc:
            raise ConfigChangeError(exc.error_code, exc.message) from None
        if not validate_only:
            await self.store_change(name, configs)

    async def put(self, name: str, configs: Mapping[str, str]) -> None:
        """The admin API's PUT: the subscription's whole set of configs."""
        await self.alter_subscription(
            name, [(k, SET, v) for k, v in configs.items()], validate_only=False, replace=True
        )

    async def keep(self, name: str, configs: Mapping[str, str]) -> None:
        """This broker's store (one broker, or a cluster's change as ZooKeeper has it)."""
        if configs:
            sub = parse_subscription(name, configs)
            await trio.to_thread.run_sync(self.store.put, sub)
        else:
            await trio.to_thread.run_sync(self.store.delete, name)

    def subscriptions(self) -> list[Subscription]:
        return self.store.all()

    # ------------------------------------------------------------ reading out

    def clients(self, connections: Iterable[ConnectionBytes] = ()) -> list[dict[str, Any]]:
        """One entry per client instance (the admin API's ``GET /v1/client-metrics``), with
        the bytes of ``connections`` that are its client's (see the module docstring)."""
        by_key: dict[Key, list[ConnectionBytes]] = {}
        for conn in connections:
            key = (conn.client_id, conn.software_name, conn.software_version, conn.address)
            by_key.setdefault(key, []).append(conn)
        instances = list(self.instances)
        sharing: dict[Key, int] = {}
        for inst in instances:
            sharing[_key(inst.client)] = sharing.get(_key(inst.client), 0) + 1
        found = []
        for inst in instances:
            c = inst.client
            mine = by_key.get(_key(c), [])
            found.append(
                {
                    "client_instance_id": str(inst.instance_id),
                    "client_id": c.client_id,
                    "client_software_name": c.software_name,
                    "client_software_version": c.software_version,
                    "client_source_address": c.address,
                    "client_source_port": c.port,
                    "subscription_id": inst.subscription_id,
                    "push_interval_ms": inst.push_interval_ms,
                    "first_push_time": inst.first_pushed_at,
                    "last_push_time": inst.pushed_at,
                    "pushes": inst.pushes,
                    "broker_bytes_in": sum(x.bytes_in for x in mine),
                    "broker_bytes_out": sum(x.bytes_out for x in mine),
                    "broker_connections": [
                        {"id": x.id, "bytes_in": x.bytes_in, "bytes_out": x.bytes_out}
                        for x in sorted(mine)
                    ],
                    "broker_bytes_instances": sharing[_key(c)],
                    "resource": dict(inst.resource),
                    "metrics": {
                        key: (
                            {"count": p.count, "sum": p.value} if p.kind == HISTOGRAM else p.value
                        )
                        for key, p in sorted(inst.points.items())
                    },
                }
            )
        return found

    def series(self) -> list[tuple[str, dict[str, str], float]]:
        """The clients' points for Prometheus (none unless
        ``client.metrics.prometheus.enable``): (metric name as pushed, labels, value).
        Labels: client_instance_id, client_id, client_software_name,
        client_software_version and the point's own attributes; a histogram gives two,
        its name with ``_count`` and ``_sum``."""
        if not self.config()["client.metrics.prometheus.enable"]:
            return []
        found: list[tuple[str, dict[str, str], float]] = []
        for inst in self.instances:
            c = inst.client
            client = {
                "client_instance_id": str(inst.instance_id),
                "client_id": c.client_id,
                "client_software_name": c.software_name,
                "client_software_version": c.software_version,
            }
            for p in inst.points.values():
                labels = {**dict(p.attributes), **client}
                if p.kind == HISTOGRAM:
                    found.append((p.name + "_count", labels, float(p.count)))
                    found.append((p.name + "_sum", labels, p.value))
                else:
                    found.append((p.name, labels, p.value))
        return found


def _key(c: ClientInfo) -> Key:
    return (c.client_id, c.software_name, c.software_version, c.address)
