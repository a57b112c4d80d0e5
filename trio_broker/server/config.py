"""TEMPORARY shim until the config branch lands."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class ListenerConfig:
    name: str
    host: str
    port: int
    security_protocol: str


DEFAULTS: dict[str, Any] = {
    "broker.id": 0,
    "cluster.id": None,
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "advertised.listeners": None,
    "control.plane.listener.name": None,
    "num.network.threads": 3,
    "num.io.threads": 8,
    "queued.max.requests": 500,
    "socket.request.max.bytes": 104857600,
    "connections.max.idle.ms": 600000,
    "log.dirs": "data/kafka-logs",
    "auto.create.topics.enable": True,
    "num.partitions": 1,
    "shutdown.timeout.ms": 10000,
}


class BrokerConfig:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def __getitem__(self, k: str) -> Any:
        return self.values[k]

    @property
    def listeners(self) -> list[ListenerConfig]:
        out = []
        for item in self.values["listeners"].split(","):
            name, rest = item.split("://")
            host, port = rest.rsplit(":", 1)
            out.append(ListenerConfig(name, host, int(port), "PLAINTEXT"))
        return out

    @property
    def advertised_listeners(self) -> list[ListenerConfig]:
        return []

    @property
    def control_plane_listener_name(self) -> str | None:
        return self.values["control.plane.listener.name"]

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(p) for p in self.values["log.dirs"].split(",")]


def load_config(path: Path | None, overrides: list[str]) -> BrokerConfig:
    values = dict(DEFAULTS)
    for o in overrides:
        k, v = o.split("=", 1)
        if k not in values:
            raise ConfigError(f"unknown key {k}")
        d = DEFAULTS[k]
        values[k] = (
            (v.lower() == "true") if isinstance(d, bool) else int(v) if isinstance(d, int) else v
        )
    return BrokerConfig(values)
