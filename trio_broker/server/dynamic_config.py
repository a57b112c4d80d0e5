"""The broker's dynamic configuration, kept in its data directory across restarts.

Owns: ``DynamicConfigStore``: the run-time changes of dynamic keys (``PUT /v1/config``,
the pool resizes of the admin API and of the advisor's ``--apply``), as Kafka keeps
dynamic broker configs (``kafka-configs.sh --entity-type brokers``) outside
server.properties. ``dynamic_config.json`` in the first log dir holds them; it is replaced
atomically on every change and read at start-up, after the log dirs are locked, where its
settings apply over the file, the environment and ``--override``. Removing a change (a
``null`` value) makes the static value count again. Blocking: call from a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .json_store import JsonDocument

FILE_NAME = "dynamic_config.json"


class DynamicConfigStore:
    def __init__(self, data_dir: Path) -> None:
        self.document = JsonDocument(data_dir / FILE_NAME, what="dynamic configuration")

    @property
    def path(self) -> Path:
        return self.document.path

    def load(self) -> dict[str, str]:
        """The stored changes (key -> value text); empty when there are none."""
        data = self.document.read()
        if data is None:
            return {}
        with self.document.parsing():
            settings = data["settings"]
            if not isinstance(settings, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in settings.items()
            ):
                raise ValueError("settings must map keys to strings")
            return dict(settings)

    def save(self, settings: Mapping[str, str]) -> None:
        """Replace the stored changes with ``settings`` (all of them, not a delta)."""
        self.document.write({"settings": dict(sorted(settings.items()))})
