"""Fetch sessions (KIP-227): the broker remembers what a consumer fetches, so that each
request lists only what changed and each response only the partitions with news.

Owns: ``FetchSessionCache`` (sessions by id, at most ``max.incremental.fetch.session.cache.
slots``, evicted as Kafka's ``FetchSessionCache`` does) and ``FetchSession`` (its
partitions in order, with what the client last asked and what it was last told). Pure and
synchronous: the Fetch handler (``apis.data.fetch``) calls it on the event loop.

The protocol, from the request's ``session_id`` and ``session_epoch``:

- epoch -1 (FINAL): a full fetch with no session (the session named, if any, is closed);
- epoch 0 (INITIAL): a full fetch that opens a session (closing the one named, if any);
  its id is 0 when the cache is full and no session can be evicted;
- epoch N > 0: an incremental fetch of session ``session_id``: FETCH_SESSION_ID_NOT_FOUND
  if there is none, INVALID_FETCH_SESSION_EPOCH unless N is the session's next epoch.
  The request's partitions are added or updated, its forgotten topics removed, and every
  partition of the session is read; the response holds those with records, an error, or a
  high watermark, last stable offset or log start offset the client has not been told.
  Partitions that returned records move to the end of the order, so that each gets a turn
  at the response's byte limit. A session opened with topic names (Fetch < v13) cannot go
  on with topic ids, nor the reverse: FETCH_SESSION_TOPIC_ID_ERROR. An incremental fetch
  that leaves the session empty closes it and is answered without one (session id 0).
  A partition answered with an error is re-sent once the error is gone.
- A parked incremental fetch whose session has moved on meanwhile (a later fetch of the
  same session, from another connection, was answered first) is answered
  INVALID_FETCH_SESSION_EPOCH with no data, as Kafka's: its answer would misinform the
  session about what the client was told.

Eviction, when the cache is full: a session unused for ``EVICTION_MS`` goes first; else
the least recently used of the sessions with fewer partitions than the new one (a bigger
session saves more). Followers fetch without a session (``server.replication.replica_fetcher`` sends
full fetches), so the cache holds clients' sessions only.
"""

from __future__ import annotations

import itertools
import random
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000  # Kafka's: a session this long unused may give way to a new one

Key = tuple[Any, int]  # (topic name, or topic id at Fetch v13+, partition)


@dataclass(slots=True)
class CachedPartition:
    topic: str | None
    topic_id: Any
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    # What the client was last told (-2: nothing yet, so the first response includes it).
    high_watermark: int = -2
    last_stable_offset: int = -2
    log_start_offset: int = -2


@dataclass
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    uses_topic_ids: bool = False
    partitions: OrderedDict[Key, CachedPartition] = field(default_factory=OrderedDict)
    last_used_ms: int = 0

    def update(
        self, wanted: Iterable[tuple[Key, CachedPartition]], forgotten: Iterable[Key]
    ) -> None:
        for key, w in wanted:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = w
            else:
                cached.fetch_offset, cached.max_bytes = w.fetch_offset, w.max_bytes
                cached.current_leader_epoch = w.current_leader_epoch
                cached.last_fetched_epoch = w.last_fetched_epoch
                cached.topic, cached.topic_id = w.topic, w.topic_id
        for key in forgotten:  # after the additions, as Kafka's: forgetting wins
            self.partitions.pop(key, None)

    def changed(self, p: CachedPartition, error: int, hw: int, lso: int, lso_start: int) -> bool:
        """Whether the response must hold ``p`` (and remember what it tells)."""
        news = (
            error != ErrorCode.NONE
            or hw != p.high_watermark
            or lso != p.last_stable_offset
            or lso_start != p.log_start_offset
        )
        p.high_watermark, p.last_stable_offset, p.log_start_offset = hw, lso, lso_start
        if error != ErrorCode.NONE:
            p.high_watermark = -1  # so that the partition is sent again once it recovers
        return news

    def rotate(self, keys: Iterable[Key]) -> None:
        """Partitions that returned records go to the end of the order."""
        for key in keys:
            if key in self.partitions:
                self.partitions.move_to_end(key)


class FetchSessionCache:
    def __init__(
        self, slots: Callable[[], int], clock_ms: Callable[[], int], seed: int | None = None
    ) -> None:
        self.slots = slots  # the running max.incremental.fetch.session.cache.slots
        self.clock_ms = clock_ms
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recent first
        self._random = random.Random(seed)
        self.evictions = 0
        self.incremental_fetches = 0
        self.full_fetches = 0
        self.sessionless_fetches = 0

    @property
    def partitions(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())

    def _new_id(self) -> int:
        for _ in itertools.count():
            candidate = self._random.randint(1, 2**31 - 1)
            if candidate not in self.sessions:
                return candidate
        raise AssertionError("unreachable")

    def close(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def create(
        self, partitions: list[tuple[Key, CachedPartition]], uses_topic_ids: bool
    ) -> FetchSession | None:
        """A new session (epoch 1 next), or None when the cache has no room for it."""
        now = self.clock_ms()
        if len(self.sessions) >= max(0, self.slots()) and not self._evict_for(len(partitions), now):
            return None
        session = FetchSession(self._new_id(), 1, uses_topic_ids, last_used_ms=now)
        session.update(partitions, ())
        self.sessions[session.session_id] = session
        return session

    def _evict_for(self, size: int, now: int) -> bool:
        if not self.sessions:
            return False
        oldest_id, oldest = next(iter(self.sessions.items()))
        if now - oldest.last_used_ms >= EVICTION_MS:
            victim = oldest_id
        else:
            smaller = [sid for sid, s in self.sessions.items() if len(s.partitions) < size]
            if not smaller:
                return False
            victim = smaller[0]  # the least recently used of them
        del self.sessions[victim]
        self.evictions += 1
        return True

    def lookup(self, session_id: int, epoch: int, uses_topic_ids: bool) -> FetchSession | int:
        """The session an incremental fetch names, or the error code to answer with."""
        session = self.sessions.get(session_id)
        if session is None:
            return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        if uses_topic_ids != session.uses_topic_ids:
            return ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
        if epoch != session.epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH
        session.epoch = 1 if session.epoch >= 2**31 - 1 else session.epoch + 1
        session.last_used_ms = self.clock_ms()
        self.sessions.move_to_end(session_id)
        return session
