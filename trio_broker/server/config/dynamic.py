"""The broker's dynamic configuration, kept in its data directory across restarts.

Owns: ``DynamicConfigStore``: the run-time changes of dynamic keys (``PUT /v1/config``,
the pool resizes of the admin API and of the advisor's ``--apply``, AlterConfigs and
IncrementalAlterConfigs on a broker resource), as Kafka keeps dynamic broker configs
(``kafka-configs.sh --entity-type brokers``) outside server.properties, at two levels:
this broker's own changes (``settings``, Kafka's ``--entity-name <id>``) and the
cluster-wide default's (``cluster_default``, Kafka's ``--entity-default``, broker resource
``""``). ``dynamic_config.json`` in the first log dir holds both; it is replaced atomically
on every change and read at start-up, after the log dirs are locked, where its settings
apply over the file, the environment and ``--override``. A file written before the
cluster-default level existed (``settings`` only) reads as this broker's changes. Removing
a change (a ``null`` value) makes the next level count again. Blocking: call from a worker
thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..datadir import JsonDocument

FILE_NAME = "dynamic_config.json"


class StoredChanges(NamedTuple):
    """What the store holds, key -> value text per level."""

    broker: dict[str, str]  # this broker's own (DYNAMIC_BROKER_CONFIG)
    cluster_default: dict[str, str]  # the cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG)


class DynamicConfigStore:
    def __init__(self, data_dir: Path) -> None:
        self.document = JsonDocument(data_dir / FILE_NAME, what="dynamic configuration")

    @property
    def path(self) -> Path:
        return self.document.path

    def load(self) -> StoredChanges:
        """The stored changes of both levels; empty when there are none."""
        data = self.document.read()
        if data is None:
            return StoredChanges({}, {})
        with self.document.parsing():
            return StoredChanges(
                _settings(data["settings"], "settings"),
                _settings(data.get("cluster_default", {}), "cluster_default"),
            )

    def save(self, settings: Mapping[str, str], cluster_default: Mapping[str, str]) -> None:
        """Replace the stored changes of both levels (all of them, not a delta)."""
        self.document.write(
            {
                "settings": dict(sorted(settings.items())),
                "cluster_default": dict(sorted(cluster_default.items())),
            }
        )


def _settings(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what} must map keys to strings")
    return dict(value)
