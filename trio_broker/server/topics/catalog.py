"""The topic catalog: which topics exist, their ids, partition counts and configs.

Owns: ``TopicCatalog``, persisted as ``topics.json`` in the first log dir (written to a
temporary file, fsynced and renamed, so a crash leaves the old or the new catalog, never
half of one). Kafka keeps this in its metadata log; a single broker needs one small file.
Blocking file I/O: the broker calls the mutating methods from a worker thread. A change
the file could not take is undone in memory too (what is listed is what is stored).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...apis.services import PartitionInfo, TopicInfo
from ..datadir import JsonDocument


class TopicCatalog:
    FILE = "topics.json"

    def __init__(self, directory: Path, broker_id: int) -> None:
        self.document = JsonDocument(directory / self.FILE, what="topic catalog")
        self.broker_id = broker_id
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        data = self.document.read()
        if data is None:
            return
        with self.document.parsing():
            self._load(data)

    def _load(self, data: dict[str, Any]) -> None:
        for name, entry in data.get("topics", {}).items():
            self._put(
                self._info(
                    name,
                    uuid.UUID(entry["topic_id"]),
                    int(entry["partitions"]),
                    entry.get("configs", {}),
                    bool(entry.get("internal", False)),
                )
            )

    def _info(
        self,
        name: str,
        topic_id: uuid.UUID,
        partitions: int,
        configs: Mapping[str, str],
        internal: bool,
    ) -> TopicInfo:
        me = self.broker_id
        parts = tuple(PartitionInfo(i, me, 0, (me,), (me,)) for i in range(partitions))
        return TopicInfo(name, topic_id, parts, internal, dict(configs))

    def _put(self, info: TopicInfo) -> None:
        self._topics[info.name] = info
        self._by_id[info.topic_id] = info

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def get_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def new_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        *,
        internal: bool = False,
        topic_id: uuid.UUID | None = None,
    ) -> TopicInfo:
        """A new topic's entry, with a new id unless given (not stored: see ``add``)."""
        return self._info(name, topic_id or uuid.uuid4(), partitions, configs, internal)

    def add(self, info: TopicInfo) -> TopicInfo:
        """Store a new topic (an existing one of that name stays, and is returned)."""
        with self._lock:
            existing = self._topics.get(info.name)
            if existing is not None:
                return existing
            self._put(info)
            try:
                self._save()
            except BaseException:
                self._topics.pop(info.name, None)
                self._by_id.pop(info.topic_id, None)
                raise
            return info

    def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        *,
        internal: bool = False,
        topic_id: uuid.UUID | None = None,
    ) -> TopicInfo:
        info = self.new_topic(name, partitions, configs, internal=internal, topic_id=topic_id)
        return self.add(info)

    def with_partitions(self, info: TopicInfo, count: int) -> TopicInfo:
        """``info`` grown to ``count`` partitions (not stored: see ``replace``)."""
        return self._info(info.name, info.topic_id, count, info.configs, info.internal)

    def replace(self, info: TopicInfo) -> None:
        with self._lock:
            previous = self._topics.get(info.name)
            self._put(info)
            try:
                self._save()
            except BaseException:
                if previous is not None:
                    self._put(previous)
                raise

    def delete(self, name: str) -> TopicInfo | None:
        with self._lock:
            info = self._topics.pop(name, None)
            if info is not None:
                self._by_id.pop(info.topic_id, None)
                self._save()
            return info

    def _save(self) -> None:
        data = {
            "topics": {
                t.name: {
                    "topic_id": str(t.topic_id),
                    "partitions": len(t.partitions),
                    "configs": dict(t.configs),
                    "internal": t.internal,
                }
                for t in self._topics.values()
            }
        }
        self.document.write(data)
