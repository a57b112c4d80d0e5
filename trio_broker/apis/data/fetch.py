"""Fetch v4-v18: read record batches as they are stored, waiting in the purgatory.

Limits: ``max_bytes`` over the whole response and ``partition_max_bytes`` per partition;
the first batch of the first partition that has data is returned even when it is larger,
so a consumer never gets stuck behind a big batch. If less than ``min_bytes`` is available
and ``max_wait_ms`` > 0, the request is parked in the purgatory (no handler task waits):
it completes when enough bytes arrive or when the wait runs out, and reads again then.
Isolation (v4+): read_uncommitted reads up to the high watermark; read_committed up to the
last stable offset, each partition listing the aborted transactions (producer id, first
offset) that overlap the records returned, so the client drops their records.
Fetch sessions (KIP-227, v7+): epoch 0 opens a session (``apis.fetch_sessions``), later
requests list only the partitions whose fetch position changed and the topics to forget,
and get back only the partitions with news; epoch -1 fetches without one.
Authorization, as Kafka: a follower's fetch (replica id >= 0; in ``replica_state`` from
v15) needs CLUSTER_ACTION on the cluster, a consumer's READ on each topic; partitions not
allowed are TOPIC_AUTHORIZATION_FAILED and carry no records.
Leader epochs, as Kafka's leader: a current leader epoch (v9+) older than the leader's is
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH; a last fetched epoch (v12+) that
the log does not hold up to the fetch offset gets the diverging epoch and no records. A
follower's fetch reads past the high watermark and tells the leader how far the follower
has come; a partition the leader's replication throttle holds back (KIP-73) is answered
without records, its growth does not complete a parked fetch (Kafka's DelayedFetch), and
the bytes a follower is sent count against that throttle (``replication_sent``); a
consumer's response counts its partitions' bytes and fetches (``consumer_fetched``). From v16
a partition whose leader moved names the current leader, and the response the leaders'
endpoints (KIP-951). v17's replica directory id is for KRaft's JBOD: read, unused. From
v18 a follower says which high watermark it knows (KIP-1166): a follower behind the
leader's is answered at once, and a parked follower fetch completes as soon as the
leader's high watermark passes the follower's, so that the follower learns it without
waiting for new records or ``max_wait_ms`` (a consumer's value, or none sent, changes
nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.messages.fetch import NO_HIGH_WATERMARK_SENT
from ...protocol.schema import ZERO_UUID, item_type
from ..authz import TOPIC, Op, allowed, cluster_allowed
from ..context import RequestContext
from ..fetch_sessions import INITIAL_EPOCH, CachedPartition, FetchSession, Key
from ..services import ReadItem, ReadResult
from .leader_hints import point_to_leaders

_SPEC = spec_for(ApiKey.Fetch)
assert _SPEC is not None
FetchResponse: Any = _SPEC.response
TopicResponse: Any = item_type(FetchResponse, "responses")
PartitionData: Any = item_type(TopicResponse, "partitions")
EpochEndOffset: Any = item_type(PartitionData, "diverging_epoch")
LeaderIdAndEpoch: Any = item_type(PartitionData, "current_leader")
NodeEndpoint: Any = item_type(FetchResponse, "node_endpoints")
AbortedTransaction: Any = item_type(PartitionData, "aborted_transactions")

READ_COMMITTED = 1


@dataclass(slots=True)
class _Wanted:
    topic: str | None
    topic_id: Any
    partition: int
    fetch_offset: int
    max_bytes: int
    denied: bool
    key: Key
    cached: CachedPartition


def _key(version: int, topic: str | None, topic_id: Any, partition: int) -> Key:
    return (topic_id if version >= 13 else topic, partition)


async def handle(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    v = ctx.api_version
    sessions = broker.fetch_sessions
    session: FetchSession | None = None
    incremental = False
    if v >= 7 and req.session_epoch > INITIAL_EPOCH:
        found = sessions.lookup(req.session_id, req.session_epoch, v >= 13)
        if isinstance(found, int):
            return _session_error(ctx, found)
        session, incremental = found, True
    elif v >= 7 and req.session_id != 0:
        sessions.close(req.session_id)  # INITIAL or FINAL: the session named ends

    replica_id = req.replica_id if v <= 14 else req.replica_state.replica_id
    follower = replica_id >= 0
    may_replicate = cluster_allowed(ctx, Op.CLUSTER_ACTION) if follower else False

    def name_of(topic: str | None, topic_id: Any) -> str | None:
        if v >= 13:
            info = broker.topic_by_id(topic_id)
            return info.name if info is not None else None
        return topic

    def denied(name: str | None) -> bool:
        if follower:
            return not may_replicate
        return name is not None and not allowed(ctx, Op.READ, TOPIC, name)

    asked: list[tuple[Key, CachedPartition]] = []
    # KIP-1166: the high watermark each partition's follower knows, where it says
    known_hw: dict[Key, int] = {}
    for t in req.topics:
        topic_id = t.topic_id if v >= 13 else ZERO_UUID
        name = name_of(t.topic if v < 13 else None, topic_id)
        for p in t.partitions:
            if v >= 18 and follower and p.high_watermark != NO_HIGH_WATERMARK_SENT:
                known_hw[_key(v, t.topic, topic_id, p.partition)] = p.high_watermark
            asked.append(
                (
                    _key(v, t.topic, topic_id, p.partition),
                    CachedPartition(
                        name,
                        topic_id,
                        p.partition,
                        p.fetch_offset,
                        p.partition_max_bytes,
                        p.current_leader_epoch,
                        p.last_fetched_epoch,
                    ),
                )
            )
    if incremental:
        assert session is not None
        forgotten = [
            _key(v, f.topic, f.topic_id if v >= 13 else ZERO_UUID, index)
            for f in req.forgotten_topics_data
            for index in f.partitions
        ]
        session.update(asked, forgotten)
        asked = list(session.partitions.items())
        sessions.incremental_fetches += 1
        if not asked:  # nothing left to fetch: the session ends, as Kafka's does
            sessions.close(session.session_id)
            session, incremental = None, False
    elif v >= 7 and req.session_epoch == INITIAL_EPOCH:
        session = sessions.create(asked, v >= 13) if asked else None
        sessions.full_fetches += 1
    else:
        sessions.sessionless_fetches += 1

    wanted: list[_Wanted] = []
    for key, c in asked:
        name = name_of(c.topic, c.topic_id) if incremental else c.topic
        wanted.append(
            _Wanted(
                name, c.topic_id, c.partition, c.fetch_offset, c.max_bytes, denied(name), key, c
            )
        )
    committed = v >= 4 and req.isolation_level == READ_COMMITTED
    max_bytes = req.max_bytes

    async def read_all() -> list[ReadResult]:
        readable = [
            ReadItem(
                w.topic,
                w.partition,
                w.fetch_offset,
                w.max_bytes,
                w.cached.current_leader_epoch,
                w.cached.last_fetched_epoch,
            )
            for w in wanted
            if w.topic is not None and not w.denied
        ]
        read = iter(
            await broker.read_many(
                readable,
                max_bytes,
                committed_only=committed,
                replica_id=replica_id if may_replicate else -1,
            )
            if readable
            else []
        )
        results = []
        for w in wanted:
            if w.topic is None:
                results.append(ReadResult(ErrorCode.UNKNOWN_TOPIC_ID))
            elif w.denied:
                results.append(ReadResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            else:
                results.append(next(read))
        return results

    answered_epoch = session.epoch if session is not None else 0

    def respond(results: list[ReadResult]) -> Any:
        shown, shown_results = wanted, results
        if incremental and session is not None and session.epoch != answered_epoch:
            # Overtaken while parked: a later fetch of the session was answered first.
            for r in results:
                _release(r.records)
            return _session_error(ctx, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session is not None:
            # What the client is told is remembered; an incremental response holds only
            # the partitions with news, and those that returned records go to the back.
            keep = [
                session.changed(
                    w.cached,
                    r.error_code,
                    r.high_watermark,
                    r.last_stable_offset,
                    r.log_start_offset,
                )
                or r.size > 0
                or r.diverging_epoch is not None
                for w, r in zip(wanted, results, strict=True)
            ]
            if incremental:
                shown = [w for w, k in zip(wanted, keep, strict=True) if k]
                shown_results = [r for r, k in zip(results, keep, strict=True) if k]
                for r, k in zip(results, keep, strict=True):
                    if not k:
                        _release(r.records)
                session.rotate(w.key for w, r in zip(wanted, results, strict=True) if r.size)
        if follower and may_replicate:
            broker.replication_sent(
                [
                    (w.topic, w.partition, r.size)
                    for w, r in zip(shown, shown_results, strict=True)
                    if r.size and w.topic is not None
                ]
            )
        elif not follower:  # every partition asked that answered, shown or not (no news)
            broker.consumer_fetched(
                [
                    (w.topic, w.partition, r.size)
                    for w, r in zip(wanted, results, strict=True)
                    if w.topic is not None and r.error_code == ErrorCode.NONE
                ]
            )
        topics = _group(shown, shown_results, v, committed)
        return FetchResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.NONE,
            session_id=session.session_id if session is not None else 0,
            responses=topics,
            node_endpoints=point_to_leaders(
                ctx,
                ((t.topic, p.partition_index, p) for t in topics for p in t.partitions),
                LeaderIdAndEpoch,
                NodeEndpoint,
            )
            if v >= 16 and any(r.error_code for r in shown_results)
            else [],
        )

    # Where the logs stand before the first read: an append that lands while it reads
    # counts as news for the parked fetch (a snapshot taken after the read would miss it,
    # and a follower's fetch would wait out max_wait_ms while acks=all waits for it).
    keys = [(w.topic, w.partition) for w in wanted if w.topic is not None and not w.denied]
    base = {key: broker.log_size(*key) for key in keys}
    horizons = {} if follower else {key: broker.consumer_horizon(*key, committed) for key in keys}
    results = await read_all()
    for w, r in zip(wanted, results, strict=True):
        if r.held and w.topic is not None:  # held back by the replication throttle:
            base.pop((w.topic, w.partition), None)  # its growth is no news
    available = sum(r.size for r in results)
    errors = any(r.error_code != ErrorCode.NONE or r.diverging_epoch for r in results)
    behind = any(
        r.high_watermark > known_hw[w.key]
        for w, r in zip(wanted, results, strict=True)
        if w.key in known_hw and not r.error_code
    )
    if req.max_wait_ms <= 0 or available >= req.min_bytes or errors or behind or not wanted:
        return respond(results)
    # KIP-1166: a parked follower fetch completes once the leader's high watermark
    # passes the one the follower knows.
    watched_hw = {
        (w.topic, w.partition): known_hw[w.key]
        for w in wanted
        if w.key in known_hw and w.topic is not None and not w.denied
    }

    # Parked: complete once min_bytes exist, counting what the first read found plus
    # what the logs have grown by since it began (bytes appended during it may count
    # twice: such a fetch completes a little early), a log that shrank or vanished at
    # once, with its error. The first read's file regions are released: the next read
    # redoes it.
    for r in results:
        _release(r.records)
    # A consumer of a replicated partition may read only up to its high watermark (a
    # read_committed one up to the last stable offset, which a transaction marker moves):
    # it waits for that to move (any move counts as enough), not for the log to grow.

    def ready() -> bool:
        for key, known in watched_hw.items():
            leader_hw = broker.consumer_horizon(*key)
            if leader_hw is not None and leader_hw > known:
                return True
        grown = 0
        for key, size in base.items():
            now = broker.log_size(*key)
            if now < size:
                return True
            horizon = horizons.get(key)
            if horizon is not None:
                moved = broker.consumer_horizon(*key, committed)
                if moved is None or moved > horizon:
                    return True
                continue
            grown += now - size
        return available + grown >= req.min_bytes

    async def complete(expired: bool) -> Any:
        return respond(await read_all())

    return broker.defer(ctx, keys=keys, timeout_ms=req.max_wait_ms, ready=ready, complete=complete)


def _session_error(ctx: RequestContext, error: int) -> Any:
    return FetchResponse(throttle_time_ms=ctx.throttle_time_ms, error_code=error, session_id=0)


def _release(records: Any) -> None:
    if isinstance(records, list):
        for part in records:
            release = getattr(part, "release", None)
            if release is not None:
                release()


def _group(
    wanted: list[_Wanted], results: list[ReadResult], version: int, committed: bool
) -> list[Any]:
    """Responses per topic, in request order."""
    topics: list[Any] = []
    current: Any = None
    last_key: Any = object()
    for w, r in zip(wanted, results, strict=True):
        key = w.topic_id if version >= 13 else w.topic
        if key != last_key:
            current = TopicResponse(topic=w.topic or "", topic_id=w.topic_id, partitions=[])
            topics.append(current)
            last_key = key
        current.partitions.append(
            PartitionData(
                partition_index=w.partition,
                error_code=r.error_code,
                high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable_offset,
                log_start_offset=r.log_start_offset,
                aborted_transactions=[
                    AbortedTransaction(producer_id=pid, first_offset=first)
                    for pid, first in r.aborted_transactions or ()
                ]
                if committed
                else None,
                records=r.records if r.records is not None else b"",
            )
        )
        if r.diverging_epoch is not None:
            epoch, end = r.diverging_epoch
            current.partitions[-1].diverging_epoch = EpochEndOffset(epoch=epoch, end_offset=end)
    return topics
