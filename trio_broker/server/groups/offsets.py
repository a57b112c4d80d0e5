"""Committed offsets: what is kept per partition, and when it expires.

Owns: ``OffsetAndMetadata`` (offset, leader epoch, metadata, commit time and, for commits
that asked for a retention time, an expiry time) and ``expired_partitions``, Kafka's rule
for ``offsets.retention.minutes``:

- a group with a protocol type that is Empty: every offset expires once the retention has
  passed since the group became empty (or since its commit, for groups loaded without a
  state timestamp);
- a Stable consumer group that knows its members' subscriptions: offsets of topics no
  member subscribes to expire by their commit time;
- a group without a protocol type (offsets committed without group management): each
  offset expires by its commit time;
- offsets still being written never expire, nor do those of a rebalancing group.

An expiry time given in the commit wins over the rule. Also ``subscribed_topics``: the
topics in a consumer protocol subscription (version 0 prefix of every version). Pure
functions; no trio, no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from .state import EMPTY, STABLE, GroupState

CONSUMER_PROTOCOL_TYPE = "consumer"

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    expire_timestamp_ms: int | None = None


class OffsetsOwner(Protocol):
    """What the expiry rule reads of a group (``group.Group`` has it all)."""

    @property
    def protocol_type(self) -> str | None: ...
    @property
    def state(self) -> GroupState: ...
    @property
    def state_timestamp_ms(self) -> int | None: ...
    @property
    def subscribed_topics(self) -> set[str] | None: ...
    @property
    def offsets(self) -> Mapping[TopicPartition, OffsetAndMetadata]: ...
    @property
    def pending_commits(self) -> Mapping[TopicPartition, int]: ...


def expired_partitions(group: OffsetsOwner, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """The partitions whose committed offsets have expired in ``group``."""
    if group.protocol_type is not None and group.state is EMPTY:
        since = group.state_timestamp_ms
        return _expired(
            group,
            now_ms,
            retention_ms,
            lambda om: since if since is not None else om.commit_timestamp_ms,
        )
    if (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.subscribed_topics is not None
        and group.state is STABLE
    ):
        return _expired(
            group,
            now_ms,
            retention_ms,
            lambda om: om.commit_timestamp_ms,
            keep_topics=group.subscribed_topics,
        )
    if group.protocol_type is None:
        return _expired(group, now_ms, retention_ms, lambda om: om.commit_timestamp_ms)
    return []


def _expired(
    group: OffsetsOwner,
    now_ms: int,
    retention_ms: int,
    base: Callable[[OffsetAndMetadata], int],
    keep_topics: Iterable[str] = (),
) -> list[TopicPartition]:
    keep = set(keep_topics)
    out = []
    for tp, om in group.offsets.items():
        if tp[0] in keep or group.pending_commits.get(tp):
            continue
        if om.expire_timestamp_ms is not None:
            if now_ms >= om.expire_timestamp_ms:
                out.append(tp)
        elif now_ms - base(om) >= retention_ms:
            out.append(tp)
    return out


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> set[str]:
    """The topics of a consumer protocol subscription. Raises ``ValueError`` if
    ``metadata`` is not one."""
    try:
        pos = 2  # the subscription's version: every version starts like version 0
        (count,) = _I32.unpack_from(metadata, pos)
        pos += 4
        if count < 0 or count > len(metadata):
            raise ValueError(f"bad topic count {count}")
        topics = set()
        for _ in range(count):
            (length,) = _I16.unpack_from(metadata, pos)
            pos += 2
            if length < 0 or pos + length > len(metadata):
                raise ValueError("topic name runs past the subscription")
            topics.add(metadata[pos : pos + length].decode())
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"not a consumer subscription: {exc}") from None
