"""The broker side of the admin API: the ``AdminView`` adapter and the server's lifetime.

Owns: ``BrokerAdminView``, which implements ``admin.view.AdminView`` over a ``Broker``
(copies of its state as plain records; live resizes of the io and network pools that
keep the effective config, ``num.io.threads``/``num.network.threads``, and the I/O
limiter in step; client quotas in the ``QuotaStore``; dynamic config updates; the Spark
jobs' files in ``dashboard.data.dir`` for the dashboard; the fault rules of a testing
broker through ``AdminFaults``; ACLs and topics through ``acls`` and ``topics``), and
``admin_server``, the context in which the admin HTTP server runs (started before the
Kafka listeners, stopped after them). Everything here runs on the broker's event loop;
file writes go to a worker thread.
Must not: be imported by the admin package (it knows only ``admin.view``).
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from admin.app import create_app
from admin.serve import AdminBindError, serve_admin
from admin.view import (
    BrokerInfo,
    ClientQuota,
    ConfigState,
    ConnectionInfo,
    DashboardData,
    Invalid,
    IoPoolState,
    ListenerInfo,
    NetworkPoolState,
    NotFound,
    PoolsState,
    QueueState,
    ScramUser,
)

from ... import __version__
from ...network.mute import MuteState
from ...security.scram import CredentialError, ScramCredential, new_credential
from ..config import BrokerConfig, ChangeRefused, plan_broker_change
from ..handlers import FaultInjector, FaultSpecError
from ..lifecycle import cluster_view
from ..quotas import QUOTA_KEYS, QuotaEntity, QuotaError
from ..startup import StartupError
from .acls import AclAdmin
from .client_metrics import ClientMetricsAdmin
from .topics import TopicAdminView

if TYPE_CHECKING:
    from ..lifecycle import Broker


class BrokerAdminView(AclAdmin, TopicAdminView, ClientMetricsAdmin):
    """``AdminView`` over one broker (the ACL routes' part in ``AclAdmin``, the topic
    routes' in ``TopicAdminView``, client telemetry's in ``ClientMetricsAdmin``)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._quota_lock = trio.Lock()

    # ----------------------------------------------------------------- status

    @property
    def admin_token(self) -> str | None:
        token = self.broker.config["admin.token"]
        return None if token is None else token.value

    @property
    def ready(self) -> bool:
        return self.broker.ready

    def broker_info(self) -> BrokerInfo:
        b = self.broker
        server = b.socket_server
        listeners = tuple(
            ListenerInfo(
                name=lr.name,
                host=lr.host,
                port=lr.port,
                security_protocol=lr.spec.security_protocol,
                plane=lr.plane,
            )
            for lr in server.listeners.values()
        )
        started = datetime.datetime.fromtimestamp(b.started_at, datetime.UTC)
        return BrokerInfo(
            broker_id=b.broker_id,
            cluster_id=b.cluster_id,
            version=__version__,
            uptime_s=max(0.0, (time.monotonic_ns() - b.started_ns) / 1e9),
            started_at=started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            listeners=listeners,
            admin_url=b.admin_url,
        )

    # ------------------------------------------------------------------ pools

    def pools(self) -> PoolsState:
        b = self.broker
        server = b.socket_server
        now = time.monotonic_ns()
        figures = _snapshot_pools(b.metrics_snapshot())
        pool = b.data_pool
        # the io threads' idle ratio (storage work over thread time), as in the snapshot
        io_idle = _ratio(_get(figures, "io", "idle_ratio"))
        if io_idle is None:
            ratios = [h.idle_ratio(now) for h in pool.handlers]
            io_idle = sum(ratios) / len(ratios) if ratios else 1.0
        network: dict[str, NetworkPoolState] = {}
        net_figures = figures.get("network")
        for name, lr in server.listeners.items():
            idle = _ratio(_get(net_figures, name, "idle_ratio"))
            if idle is None:
                ratios = [
                    1.0 - p.busy_ns / (now - p.created_ns) if now > p.created_ns else 1.0
                    for p in lr.processors
                ]
                idle = _clamp(sum(ratios) / len(ratios)) if ratios else 1.0
            network[name] = NetworkPoolState(
                plane=lr.plane,
                size=len(lr.processors),
                idle_ratio=idle,
                connections=len(lr.connections),
            )
        queues = {"data": server.data_requests}
        if server.control_requests is not None:
            queues["control"] = server.control_requests
        return PoolsState(
            io=IoPoolState(size=b.io_pool.size, busy=b.io_pool.busy, idle_ratio=_clamp(io_idle)),
            network=network,
            request_queue={
                plane: QueueState(size=q.size, capacity=q.capacity) for plane, q in queues.items()
            },
        )

    async def resize_io_pool(self, size: int) -> None:
        await self.update_config({"num.io.threads": str(size)}, dry_run=False)

    async def resize_network_pool(self, listener: str, size: int) -> None:
        lr = self.broker.socket_server.listeners.get(listener)
        if lr is None:
            raise NotFound(
                "unknown-listener",
                f"no listener {listener!r}; listeners: {', '.join(self.listener_names())}",
            )
        if lr.plane == "control":
            raise Invalid(
                "control-plane-listener",
                f"{listener} is the control-plane listener: it has exactly one processor",
            )
        # Kafka's per-listener form, stored with the other dynamic changes
        key = f"listener.name.{listener.lower()}.num.network.threads"
        await self.update_config({key: str(size)}, dry_run=False)

    def listener_names(self) -> Sequence[str]:
        return list(self.broker.socket_server.listeners)

    # ------------------------------------------------------------ connections

    def mute_states(self) -> Sequence[str]:
        return [s.value for s in MuteState]

    def connections(self) -> Sequence[ConnectionInfo]:
        now = time.monotonic_ns()
        return [
            ConnectionInfo(
                id=c.id,
                listener=c.listener,
                processor=c.processor.id,
                remote=c.remote_str,
                principal=c.principal,
                client_id=c.client_id,
                client_software_name=c.client_software_name,
                client_software_version=c.client_software_version,
                mute_state=c.mute_state.value,
                throttle_remaining_ms=c.throttle_remaining_ms(now),
                idle_ms=max(0.0, c.idle_ms(now)),
                requests=c.requests,
                bytes_in=c.bytes_in,
                bytes_out=c.bytes_out,
            )
            for c in sorted(self.broker.socket_server.all_connections(), key=lambda c: c.id)
        ]

    # ----------------------------------------------------------------- quotas

    def quota_keys(self) -> Sequence[str]:
        return list(QUOTA_KEYS)

    def client_quotas(self) -> Sequence[ClientQuota]:
        return [
            ClientQuota(entity.as_dict(), dict(values))
            for entity, values in self.broker.quotas.entries()
        ]

    async def alter_client_quota(
        self, client_id: str | None, changes: Mapping[str, float | None]
    ) -> ClientQuota:
        store = self.broker.quotas
        entity = QuotaEntity.client(client_id)
        try:
            store.validate(entity, changes)  # refuse before going to a thread
        except QuotaError as exc:
            raise Invalid("invalid-quota", str(exc), key=exc.key) from None
        async with self._quota_lock:  # through the broker: a cluster's go to ZooKeeper
            await self.broker.alter_client_quota(
                entity.as_dict(), dict(changes), validate_only=False
            )
        return ClientQuota(entity.as_dict(), dict(store.get(entity) or {}))

    async def delete_client_quota(self, client_id: str | None) -> ClientQuota:
        entity = QuotaEntity.client(client_id)
        async with self._quota_lock:
            removed = self.broker.quotas.get(entity)
            if removed is None:
                raise NotFound("unknown-quota", f"no quota for {entity}")
            gone: dict[str, float | None] = dict.fromkeys(removed)
            await self.broker.alter_client_quota(entity.as_dict(), gone, validate_only=False)
        return ClientQuota(entity.as_dict(), dict(removed))

    # ------------------------------------------------------------ SCRAM users

    def scram_users(self) -> Sequence[ScramUser]:
        return [_scram_user(n, c) for n, c in sorted(self.broker.scram.users().items())]

    async def set_scram_credential(
        self, name: str, mechanism: str, password: str, iterations: int
    ) -> ScramUser:
        try:  # PBKDF2 takes milliseconds: on a worker thread, never on the event loop
            cred = await trio.to_thread.run_sync(new_credential, mechanism, password, iterations)
        except CredentialError as exc:
            raise Invalid("invalid-credential", str(exc)) from None
        await self.broker.alter_scram_credentials([(name, cred)], [])
        return _scram_user(name, self.broker.scram.users().get(name, {}))

    async def delete_scram_user(self, name: str, mechanism: str | None) -> ScramUser:
        current = self.broker.scram.users().get(name, {})
        removed = {m: c for m, c in current.items() if mechanism is None or m == mechanism}
        if not removed:
            what = f"{mechanism} credential" if mechanism else "SCRAM credentials"
            raise NotFound("unknown-user", f"no {what} for user {name!r}")
        await self.broker.alter_scram_credentials([], [(name, m) for m in removed])
        return _scram_user(name, removed)

    # ---------------------------------------------------------------- metrics

    def metrics_snapshot(self) -> Mapping[str, Any]:
        return self.broker.metrics_snapshot()

    async def cluster(self) -> Mapping[str, Any]:
        b = self.broker
        control = b.config.control_plane_listener_name
        clients = next(lc.name for lc in b.config.listeners if lc.name != control)
        # In a ZooKeeper cluster each broker's registration names its admin API; a broker
        # knows its own in any case.
        admin_urls = await b.zk.admin_urls() if b.zk is not None else {}
        admin_urls[b.broker_id] = b.admin_url
        return cluster_view(b, clients, admin_urls)

    def transactions(self) -> Mapping[str, Any]:
        return self.broker.transactions.overview()

    def prometheus_text(self) -> bytes:
        return self.broker.prometheus_text()

    async def dashboard_data(self) -> DashboardData:
        directory = self.broker.config.dashboard_data_dir
        return await trio.to_thread.run_sync(_read_dashboard_dir, directory)

    # ----------------------------------------------------------------- faults

    @property
    def faults(self) -> AdminFaults | None:
        injector = self.broker.faults
        return None if injector is None else AdminFaults(injector)

    # ----------------------------------------------------------------- config

    def config(self) -> ConfigState:
        return _config_state(self.broker.config)

    async def update_config(
        self, settings: Mapping[str, str | None], *, dry_run: bool
    ) -> ConfigState:
        async with self.broker.config_admin.lock:  # one change at a time (ConfigAdmin)
            try:
                updated = plan_broker_change(self.broker.config, settings)
            except ChangeRefused as exc:
                raise Invalid(exc.kind.value, exc.message, key=exc.key, value=exc.value) from None
            if not dry_run:
                await self.broker.update_config(updated, settings)
        return _config_state(updated)


class AdminFaults:
    """``admin.view.FaultControl`` over a ``FaultInjector``: its errors as the view's."""

    def __init__(self, injector: FaultInjector) -> None:
        self._injector = injector

    def add(self, spec: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return self._injector.add(spec)
        except FaultSpecError as exc:
            raise Invalid("invalid-rule", str(exc), key=exc.field) from None

    def rules(self) -> Sequence[Mapping[str, Any]]:
        return self._injector.rules()

    def get(self, rule_id: int) -> Mapping[str, Any]:
        try:
            return self._injector.get(rule_id)
        except KeyError:
            raise NotFound("no-such-rule", f"no fault rule {rule_id}") from None

    def remove(self, rule_id: int) -> Mapping[str, Any]:
        try:
            return self._injector.remove(rule_id)
        except KeyError:
            raise NotFound("no-such-rule", f"no fault rule {rule_id}") from None

    def clear(self) -> Sequence[Mapping[str, Any]]:
        return self._injector.clear()


@asynccontextmanager
async def admin_server(broker: Broker) -> AsyncIterator[str | None]:
    """Run the admin HTTP server (if ``admin.listeners`` names one) around the body.

    Yields its URL (``None`` when there is no admin server); when the body ends, however
    it ends, the server stops, letting requests in flight finish.
    """
    endpoint = broker.config.admin_endpoint
    if endpoint is None:
        yield None
        return
    host, port = endpoint
    stop = trio.Event()
    app = create_app(BrokerAdminView(broker))
    async with trio.open_nursery() as nursery:
        try:
            url: str = await nursery.start(
                partial(serve_admin, app, host, port, shutdown_trigger=stop.wait)
            )
        except AdminBindError as exc:  # the user's to fix: one line at start-up
            raise StartupError(str(exc)) from exc
        try:
            yield url
        finally:
            stop.set()


# ------------------------------------------------------------------- helpers

DASHBOARD_FILES = {
    "trends": "dashboard.json",
    "recommendations": "recommendations.json",
    "balance": "balance/plan.json",
}
MAX_DASHBOARD_FILE_BYTES = 32 << 20


def _scram_user(name: str, creds: Mapping[str, ScramCredential]) -> ScramUser:
    return ScramUser(name, {m: c.iterations for m, c in creds.items()})


def _read_dashboard_dir(directory: Path) -> DashboardData:
    """The Spark jobs' files for the dashboard (blocking: run it in a worker thread)."""
    found: dict[str, Any] = {}
    problems: list[str] = []
    for field, name in DASHBOARD_FILES.items():
        path = directory / name
        try:
            if path.stat().st_size > MAX_DASHBOARD_FILE_BYTES:
                problems.append(f"{name}: larger than {MAX_DASHBOARD_FILE_BYTES} bytes")
                continue
            value = json.loads(path.read_bytes())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        if isinstance(value, dict):
            found[field] = value
        else:
            problems.append(f"{name}: not a JSON object")
    return DashboardData(
        data_dir=str(directory),
        trends=found.get("trends"),
        recommendations=found.get("recommendations"),
        problems=tuple(problems),
        balance=found.get("balance"),
    )


def _config_state(config: BrokerConfig) -> ConfigState:
    return ConfigState(
        effective=config.effective(),
        dynamic_keys=tuple(sorted(config.dynamic_keys)),
        dynamic_settings=dict(config.dynamic_settings),
        sources=config.origins(),
        default_settings=dict(config.default_settings),
    )


def _snapshot_pools(snapshot: Any) -> dict[str, Any]:
    pools = snapshot.get("pools") if isinstance(snapshot, Mapping) else None
    return pools if isinstance(pools, dict) else {}


def _get(mapping: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return mapping


def _ratio(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        return _clamp(float(value))
    return None


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))
