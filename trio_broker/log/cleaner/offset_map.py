"""The cleaner's map from a key to the offset of its latest record (Kafka's OffsetMap).

Owns: ``OffsetMap``: keys are stored as their MD5 digest (16 bytes, as Kafka's
``SkimpyOffsetMap`` does), so the memory a pass needs depends on the number of distinct
keys, not their size; ``put`` keeps the larger offset; ``full`` says the map reached its
share of ``log.cleaner.dedupe.buffer.size`` (24 bytes an entry at Kafka's 0.9 load
factor), where a pass stops mapping and cleans what it mapped. A digest collision makes
two keys one, as in Kafka (MD5: negligible). Pure memory; no I/O.
"""

from __future__ import annotations

import hashlib

ENTRY_BYTES = 24  # a 16-byte digest and an 8-byte offset, Kafka's accounting
LOAD_FACTOR = 0.9  # log.cleaner.io.buffer.load.factor


def slots_for(buffer_bytes: int) -> int:
    """How many keys a buffer of ``buffer_bytes`` holds (at least one)."""
    return max(1, int(buffer_bytes // ENTRY_BYTES * LOAD_FACTOR))


class OffsetMap:
    """Latest offset per key digest, bounded by ``slots`` keys."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("an offset map holds at least one key")
        self.slots = slots
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    @staticmethod
    def digest(key: bytes) -> bytes:
        return hashlib.md5(key, usedforsecurity=False).digest()

    def put(self, key: bytes, offset: int) -> None:
        d = self.digest(key)
        if self._offsets.get(d, -1) < offset:
            self._offsets[d] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        """The latest offset mapped for ``key``, -1 if none."""
        return self._offsets.get(self.digest(key), -1)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.slots

    def __len__(self) -> int:
        return len(self._offsets)
