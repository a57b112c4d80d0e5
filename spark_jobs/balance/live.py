"""The live cluster as the balance job sees it over HTTP: any broker's admin API names
the brokers and every partition's replicas, leader and ISR (``GET /v1/cluster``).

Owns ``AdminApi`` (one broker's admin API: GET with the bearer token), ``ClusterView``
(brokers with their Kafka address, rack and admin URL; partitions; the controller), read
from the first of the ``--admin`` URLs that answers, and ``cluster_state`` (the view as
the model's ``ClusterState``). A broker's admin URL is what ``GET /v1/cluster`` names for
it (``"admin"``); for brokers it does not name one, the ``--admin`` URLs given are asked
which broker they are (``GET /v1/broker``).
Must not: change anything on a broker.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import ClusterState, Key, PartitionState


class LiveError(Exception):
    """The cluster could not be read; ``str()`` says why in one line."""


class AdminApi:
    def __init__(self, url: str, token: str | None = None, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def get(self, path: str) -> Any:
        req = urllib.request.Request(self.url + path, headers={"Accept": "application/json"})
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise LiveError(f"{self.url}{path}: HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise LiveError(f"{self.url}{path}: {getattr(exc, 'reason', exc)}") from None


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    host: str
    port: int
    rack: str | None
    admin: str | None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class ClusterView:
    brokers: dict[int, BrokerInfo]
    partitions: dict[Key, dict[str, Any]]
    controller_id: int
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for _, b in sorted(self.brokers.items()))

    def admin(self, broker_id: int) -> str | None:
        b = self.brokers.get(broker_id)
        return None if b is None else b.admin

    def under_replicated(self, skip: frozenset[Key] = frozenset()) -> list[Key]:
        return sorted(
            k
            for k, p in self.partitions.items()
            if k not in skip and len(p.get("isr") or []) < len(p.get("replicas") or [])
        )

    def offline(self) -> list[Key]:
        return sorted(k for k, p in self.partitions.items() if int(p.get("leader", -1)) < 0)


def read_view(admins: Sequence[str], token: str | None = None) -> ClusterView:
    """The cluster as the first answering admin API sees it."""
    errors = []
    for url in admins:
        try:
            raw = AdminApi(url, token).get("/v1/cluster")
        except LiveError as exc:
            errors.append(str(exc))
            continue
        return _view(raw, admins, token)
    raise LiveError("no admin API answered: " + "; ".join(errors))


def _view(raw: dict[str, Any], admins: Sequence[str], token: str | None) -> ClusterView:
    named = {int(b["id"]): b.get("admin") for b in raw.get("brokers", [])}
    if any(v is None for v in named.values()):
        for url in admins:  # brokers the view names no admin API for: ask the given ones
            try:
                who = int(AdminApi(url, token).get("/v1/broker")["broker_id"])
            except (LiveError, KeyError, TypeError, ValueError):
                continue
            if named.get(who) is None:
                named[who] = url.rstrip("/")
    brokers = {
        int(b["id"]): BrokerInfo(
            int(b["id"]), str(b["host"]), int(b["port"]), b.get("rack"), named.get(int(b["id"]))
        )
        for b in raw.get("brokers", [])
    }
    partitions = {(str(p["topic"]), int(p["partition"])): p for p in raw.get("partitions", [])}
    return ClusterView(brokers, partitions, int(raw.get("controller_id", -1)), raw)


def cluster_state(view: ClusterView, reassigning: frozenset[Key] = frozenset()) -> ClusterState:
    return ClusterState(
        brokers={i: b.rack for i, b in view.brokers.items()},
        partitions={
            k: PartitionState(
                tuple(int(r) for r in p["replicas"]),
                int(p.get("leader", -1)),
                frozenset(int(r) for r in p.get("isr") or []),
            )
            for k, p in view.partitions.items()
        },
        reassigning=reassigning,
        source="the admin API (GET /v1/cluster)",
        live=True,
    )
