"""Producer ids for idempotent producers (InitProducerId), unique for the data dir's life.

Owns: ``ProducerIdManager``. Ids are handed out from blocks of 1000, as Kafka's controller
allocates them; the end of the current block is persisted (atomically) before any id in it
is used, so ids are never reused after a restart or a crash, at the cost of skipping the
rest of a block. In a ZooKeeper cluster the blocks come from ZooKeeper instead
(``coordination.producer_ids``), unique across the brokers. Blocking file I/O on a block change only
(once per 1000 producers).
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..datadir import JsonDocument

BLOCK_SIZE = 1000


class ProducerIdManager:
    FILE = "producer_ids.json"

    def __init__(self, directory: Path) -> None:
        self.document = JsonDocument(directory / self.FILE, what="producer id")
        self._lock = threading.Lock()
        self._next = 0
        self._block_end = 0

    def load(self) -> None:
        data = self.document.read()
        if data is not None:
            with self.document.parsing():
                self._next = self._block_end = int(data["next_block"])

    def next_id(self) -> int:
        """A producer id never handed out before (blocking when a new block is taken)."""
        with self._lock:
            if self._next >= self._block_end:
                end = self._next + BLOCK_SIZE
                self.document.write({"next_block": end})
                self._block_end = end
            pid = self._next
            self._next += 1
            return pid

    def adopt_block(self, start: int, end: int) -> None:
        """Hand out ids from [start, end) next (a block the cluster gave this broker, in a
        ZooKeeper cluster, where the data dir's own counter would clash with others')."""
        with self._lock:
            if self._next >= self._block_end:
                self._next, self._block_end = start, end

    @property
    def needs_new_block(self) -> bool:
        return self._next >= self._block_end
