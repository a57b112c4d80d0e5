"""The follower's side of replication: fetching from leaders into this broker's logs.

Owns: ``ReplicaFetchers``, Kafka's ReplicaFetcherManager with one fetcher task per leader
broker (``num.replica.fetchers`` 1). ``follow`` (from LeaderAndIsr) adds a partition to
its leader's fetcher, ``unfollow`` takes it away; a fetcher with nothing left ends. Each
fetcher keeps one connection to its leader's inter-broker listener (``access.inter_broker``: with
that listener's TLS and SASL; a failed handshake or login is logged as an error naming
the leader and the listener, then tried again after the backoff) and sends Fetch v12
with this broker's id as the replica id (the leader reads past its high watermark for it,
counts it as the follower's progress, and parks it up to ``replica.fetch.wait.max.ms``),
each partition with its fetch offset (this log's end), the leader epoch this broker knows
(a stale leader answers FENCED_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER) and the epoch of
its last batch. Then, per partition, on an io thread:

- records are appended as the leader stored them (``PartitionLog.append_as_follower``);
- a diverging epoch (KIP-595's check at the leader) truncates this log to where the two
  agree: the smaller of the leader's end of that epoch and this log's own end of it;
- OFFSET_OUT_OF_RANGE below the leader's log start starts this log afresh there; above
  the leader's end it truncates to the leader's high watermark;
- the leader's high watermark (capped by this log's end) and log start offset (records
  deleted there are deleted here: retention, DeleteRecords) are applied.

Other errors set the partition aside for ``replica.fetch.backoff.ms``; a lost connection
costs the whole fetcher that wait. Fetching and appending never block the event loop.

Per partition it keeps the leader's high watermark of the last answer (the lag behind it
is Kafka's FetcherLagMetrics ConsumerLag: a Fetch answer names the leader's high
watermark, not its log end), and tells ``fetched_observers`` (topic, partition, bytes) of
each append (the metrics' replication bytes in).

The follower's replication throttle (KIP-73, ``throttle``): a partition it names is left
out of the request while this replica has not caught up with the leader's high watermark
and the throttle is over ``follower.replication.throttled.rate`` (a request left with
nothing waits ``replica.fetch.backoff.ms``); the bytes received for its partitions count.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio

from ...log.errors import LogError
from ...log.partition_log import PartitionLog
from ...network.peer_client import PeerAuthenticationError, PeerClient, PeerListener
from ...protocol.errors import ErrorCode
from ...protocol.messages.fetch import FetchRequest
from ..common import IoPool
from ..config import BrokerConfig
from .cluster_state import ClusterState
from .throttles import ReplicationQuota

log = logging.getLogger("trio_broker.replication")

FETCH_VERSION = 12
Key = tuple[str, int]


@dataclass
class Followed:
    leader: int
    leader_epoch: int
    backoff_until: float = 0.0
    in_sync: bool = False  # caught up with the leader's high watermark at its last answer
    leader_high_watermark: int = -1  # as its last answer said (-1: none yet)

    def lag(self, log_end: int) -> int:
        """Messages this replica is behind the leader's high watermark as last learned."""
        return max(0, self.leader_high_watermark - log_end)


class ReplicaFetchers:
    # The follower's replication throttle (KIP-73), set by the broker; None: no throttle.
    throttle: ReplicationQuota | None = None

    def __init__(
        self,
        broker_id: int,
        cluster: ClusterState,
        partition: Callable[[str, int], PartitionLog | None],
        io: IoPool,
        config: Callable[[], BrokerConfig],
        listener: PeerListener,
        view_changed: Callable[[], trio.Event],
    ) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self._partition = partition
        self.io = io
        self._config = config
        self.listener = listener
        self._view_changed = view_changed
        self.followed: dict[Key, Followed] = {}
        self._fetchers: dict[int, trio.Event] = {}  # leader -> "its partitions changed"
        self._nursery: trio.Nursery | None = None
        self.truncations = 0
        self.fetch_errors = 0
        # Told (topic, partition, bytes) of each append of the leader's records here.
        self.fetched_observers: list[Callable[[str, int, int], None]] = []

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for leader in {f.leader for f in self.followed.values()}:
                self._start(leader)
            task_status.started()
            await trio.sleep_forever()

    def follow(self, topic: str, partition: int, leader: int, leader_epoch: int) -> None:
        key = (topic, partition)
        old = self.followed.get(key)
        self.followed[key] = Followed(leader, leader_epoch)
        if old is not None and old.leader != leader:
            self._poke(old.leader)
        self._poke(leader)

    def unfollow(self, topic: str, partition: int) -> None:
        old = self.followed.pop((topic, partition), None)
        if old is not None:
            self._poke(old.leader)

    def _poke(self, leader: int) -> None:
        event = self._fetchers.get(leader)
        if event is not None:
            event.set()
        else:
            self._start(leader)

    def _start(self, leader: int) -> None:
        if self._nursery is not None and leader not in self._fetchers:
            self._fetchers[leader] = trio.Event()
            self._nursery.start_soon(self._fetcher, leader)

    def _mine(self, leader: int) -> dict[Key, Followed]:
        return {k: f for k, f in self.followed.items() if f.leader == leader}

    # ---------------------------------------------------------------- fetcher

    async def _fetcher(self, leader: int) -> None:
        try:
            while self._mine(leader):
                address = self.address_of(leader)
                if address is None:  # not in the cluster view yet: wait for news
                    with trio.move_on_after(self._backoff_s()):
                        await self._view_changed().wait()
                    continue
                try:
                    client = await self._connect(address)
                except PeerAuthenticationError as exc:
                    self.fetch_errors += 1
                    log.error("fetcher for broker %d: %s; retrying", leader, exc)
                    await trio.sleep(self._backoff_s())
                    continue
                except (OSError, trio.BrokenResourceError, trio.TooSlowError) as exc:
                    log.warning("fetcher for broker %d: cannot connect: %s", leader, exc)
                    await trio.sleep(self._backoff_s())
                    continue
                try:
                    await self._fetch_from(leader, client)
                except (OSError, ConnectionError, trio.TooSlowError, trio.BrokenResourceError) as e:
                    self.fetch_errors += 1
                    log.warning("fetcher for broker %d: %s", leader, e or type(e).__name__)
                    await trio.sleep(self._backoff_s())
                except Exception:  # a bug: logged, and the fetcher goes on after a pause
                    self.fetch_errors += 1
                    log.exception("fetcher for broker %d failed", leader)
                    await trio.sleep(self._backoff_s())
                finally:
                    with trio.move_on_after(1) as cleanup:
                        cleanup.shield = True
                        await client.aclose()
        finally:  # (no await since the loop's test: a follow() now starts a new one)
            self._fetchers.pop(leader, None)

    async def _connect(self, address: str) -> PeerClient:
        """A connection to ``address`` on the inter-broker listener (TLS, SASL as it
        asks), within ``replica.socket.timeout.ms``."""
        with trio.fail_after(self._config()["replica.socket.timeout.ms"] / 1000):
            return await PeerClient.connect(address, f"replica-{self.broker_id}", self.listener)

    def address_of(self, leader: int) -> str | None:
        """``leader``'s endpoint on the inter-broker listener (host:port), if known."""
        broker = self.cluster.cache.brokers.get(leader)
        if broker is None:
            return None
        endpoint = broker.endpoints.get(self.listener.name)
        if endpoint is None:
            return None
        host, port = endpoint
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def _backoff_s(self) -> float:
        return max(0.05, self._config()["replica.fetch.backoff.ms"] / 1000)

    async def _fetch_from(self, leader: int, client: PeerClient) -> None:
        while True:
            mine = self._mine(leader)
            if not mine:
                return
            now = trio.current_time()
            ready = {k: f for k, f in mine.items() if f.backoff_until <= now}
            if not ready:
                soonest = min(f.backoff_until for f in mine.values())
                with trio.move_on_at(soonest):
                    await self._fetchers[leader].wait()
                self._fetchers[leader] = trio.Event()
                continue
            request, asked = self._request(ready)
            if request is None:
                await trio.sleep(self._backoff_s())
                continue
            config = self._config()
            timeout = config["replica.socket.timeout.ms"] / 1000
            with trio.fail_after(timeout + config["replica.fetch.wait.max.ms"] / 1000):
                response = await client.request(request, FETCH_VERSION)
            if response.error_code:
                self.fetch_errors += 1
                log.warning("broker %d refused a fetch: error %d", leader, response.error_code)
                await trio.sleep(self._backoff_s())
                continue
            for topic in response.responses:
                for p in topic.partitions:
                    key = (topic.topic, p.partition_index)
                    if key in asked and self.followed.get(key) is asked[key][1]:
                        await self._handle(key, asked[key][0], p)

    def _request(self, ready: dict[Key, Followed]) -> tuple[Any, dict[Key, Any]]:
        config = self._config()
        asked: dict[Key, Any] = {}
        topics: dict[str, list[Any]] = {}
        for key, followed in sorted(ready.items()):
            plog = self._partition(*key)
            if plog is None or plog.closed:
                continue
            if self.throttle is not None and self.throttle.holds(*key, followed.in_sync):
                continue  # Kafka's shouldFollowerThrottle: left out while over the rate
            end = plog.log_end_offset
            asked[key] = (plog, followed)
            topics.setdefault(key[0], []).append(
                FetchRequest.Topic.Partition(
                    partition=key[1],
                    current_leader_epoch=followed.leader_epoch,
                    fetch_offset=end,
                    last_fetched_epoch=plog.latest_epoch if end > plog.log_start_offset else -1,
                    log_start_offset=plog.log_start_offset,
                    partition_max_bytes=config["replica.fetch.max.bytes"],
                )
            )
        if not asked:
            return None, asked
        request = FetchRequest(
            replica_id=self.broker_id,
            max_wait_ms=config["replica.fetch.wait.max.ms"],
            min_bytes=config["replica.fetch.min.bytes"],
            max_bytes=config["replica.fetch.response.max.bytes"],
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.Topic(topic=t, partitions=ps) for t, ps in topics.items()],
            forgotten_topics_data=[],
            rack_id="",
        )
        return request, asked

    async def _handle(self, key: Key, plog: PartitionLog, p: Any) -> None:
        followed = self.followed[key]
        error = p.error_code
        if error == ErrorCode.NONE:
            diverging = p.diverging_epoch
            if diverging is not None and diverging.epoch >= 0:
                await self._truncate(key, plog, diverging.epoch, diverging.end_offset)
                return
            records = p.records
            throttle = self.throttle
            if throttle is not None and records and throttle.is_throttled(*key):
                throttle.record(len(records))
            try:
                await self.io.run(
                    lambda: _apply(plog, records, p.high_watermark, p.log_start_offset)
                )
                followed.in_sync = plog.log_end_offset >= p.high_watermark
                followed.leader_high_watermark = p.high_watermark
                if records:
                    for observer in self.fetched_observers:
                        observer(*key, len(records))
            except LogError as exc:
                log.warning("%s-%d: follower append failed: %s", *key, exc)
                followed.backoff_until = trio.current_time() + self._backoff_s()
        elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
            start, hw = p.log_start_offset, p.high_watermark
            await self.io.run(lambda: _reset(plog, start, hw))
            self.truncations += 1
            log.info("%s-%d: out of range at the leader: log now %r", *key, plog)
        else:
            # A leader that is not (yet) the one LeaderAndIsr named, or an older/newer
            # epoch: wait for the controller's word.
            followed.backoff_until = trio.current_time() + self._backoff_s()
            log.debug("%s-%d: leader answered error %d", *key, error)

    async def _truncate(self, key: Key, plog: PartitionLog, epoch: int, leader_end: int) -> None:
        def truncate() -> int:
            own_epoch, own_end = plog.end_offset_for_epoch(epoch)
            target = min(leader_end, own_end) if own_epoch >= 0 else leader_end
            target = min(target, plog.log_end_offset)
            plog.truncate_to(target)
            return plog.log_end_offset

        end = await self.io.run(truncate)
        self.truncations += 1
        log.info("%s-%d: diverged from the leader at epoch %d: truncated to %d", *key, epoch, end)


def _apply(plog: PartitionLog, records: Any, high_watermark: int, log_start: int) -> None:
    """Append the leader's batches and take over its high watermark and log start."""
    if records is not None and len(records):
        # Fetched at this log's end: a compacted leader may answer from a later offset.
        plog.append_as_follower(memoryview(records), now_ms=_now_ms(), allow_gap=True)
    plog.set_high_watermark(min(high_watermark, plog.log_end_offset))
    if log_start > plog.log_start_offset:
        plog.delete_records_before(min(log_start, plog.log_end_offset))


def _reset(plog: PartitionLog, leader_start: int, leader_hw: int) -> None:
    if plog.log_end_offset < leader_start:
        plog.truncate_fully_and_start_at(leader_start)
    elif plog.log_end_offset > leader_hw >= 0:
        plog.truncate_to(leader_hw)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
