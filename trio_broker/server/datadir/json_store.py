"""One small JSON document of the broker's state in the data directory.

Owns: ``JsonDocument``: where a store keeps itself (``acls.json``, ``quotas.json``,
``scram_credentials.json``, ``cluster_state.json``, ``producer_ids.json``,
``topics.json``, ``dynamic_config.json``), its format version, reading it whole at
start-up (``read``, with ``parsing`` turning a malformed document into one clear
``StoreError`` that names the file) and replacing it atomically on every change
(``write``: a crash leaves the old or the new document, whole). Blocking: call from a
worker thread or at start-up. It must not know what the documents mean.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...log.files import atomic_write


class StoreError(RuntimeError):
    """A state file that cannot be read: a start-up error naming the file."""


class JsonDocument:
    """``path`` holds ``{"version": version, ...}``; a document without a version is
    version 1 (files written before versions were recorded)."""

    def __init__(self, path: Path, *, what: str, version: int = 1) -> None:
        self.path = path
        self.what = what
        self.version = version

    def read(self) -> dict[str, Any] | None:
        """The document, or None when there is none yet."""
        if not self.path.exists():
            return None
        with self.parsing():
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            found = data.get("version", 1)
            if found != self.version:
                raise ValueError(f"unknown format version {found!r}")
            return data

    @contextmanager
    def parsing(self) -> Iterator[None]:
        """Turn what a malformed document raises into one ``StoreError`` naming it."""
        try:
            yield
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"{self.path} is not a valid {self.what} file: {exc}") from exc

    def write(self, data: dict[str, Any]) -> None:
        """Replace the document with ``data`` (its version added)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": self.version, **data}, indent=1, sort_keys=True)
        atomic_write(self.path, text.encode())
