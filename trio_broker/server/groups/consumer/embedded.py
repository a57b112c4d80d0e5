"""The consumer protocol embedded in the classic protocol's opaque bytes (Kafka's
``ConsumerProtocol``): what a classic member's JoinGroup subscription says, and the
assignment its SyncGroup answer carries.

Owns: ``Subscription`` and ``parse_subscription`` (``ConsumerProtocolSubscription``
versions 0-3: topics, user data, owned partitions from 1, generation from 2, rack from 3;
a newer version is read as its version 3 prefix, as Kafka reads it), and
``parse_assignment`` / ``encode_assignment`` (``ConsumerProtocolAssignment``, the same
layout in versions 0-3; written in the version of the member's subscription, at most 3).
Each is prefixed by its int16 version. A malformed one raises ``ValueError``. Pure: no
group, no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

HIGHEST_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    user_data: bytes | None = field(default=None, repr=False)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("the consumer protocol bytes end early")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def string(self, nullable: bool = False) -> str | None:
        n = self.i16()
        if n < 0:
            if nullable:
                return None
            raise ValueError("a null string where the consumer protocol has none")
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise ValueError(f"a topic name that is not UTF-8: {exc}") from None

    def bytes_(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self._take(n)

    def count(self) -> int:
        n = self.i32()
        if n < 0 or n > len(self.data):
            raise ValueError(f"a bad array length {n}")
        return n

    def topic_partitions(self) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string()
            assert topic is not None
            out.extend((topic, self.i32()) for _ in range(self.count()))
        return out

    @property
    def at_end(self) -> bool:
        return self.pos >= len(self.data)


def parse_subscription(metadata: bytes) -> Subscription:
    """A JoinGroup protocol's metadata, as the consumer protocol reads it."""
    r = _Reader(metadata)
    version = r.i16()
    if version < 0:
        raise ValueError(f"a negative subscription version {version}")
    topics = []
    for _ in range(r.count()):
        name = r.string()
        assert name is not None
        topics.append(name)
    user_data = r.bytes_()
    owned: list[TopicPartition] = []
    generation = -1
    rack = None
    if version >= 1 and not r.at_end:
        owned = r.topic_partitions()
    if version >= 2 and not r.at_end:
        generation = r.i32()
    if version >= 3 and not r.at_end:
        rack = r.string(nullable=True)
    return Subscription(version, tuple(topics), tuple(owned), generation, rack, user_data)


def parse_assignment(data: bytes) -> list[TopicPartition]:
    """The partitions of a SyncGroup assignment (none for empty bytes)."""
    if not data:
        return []
    r = _Reader(data)
    if r.i16() < 0:
        raise ValueError("a negative assignment version")
    return r.topic_partitions()


def subscription_version(metadata: bytes) -> int:
    """The version an answer to this subscription is written in (Kafka's deserializeVersion,
    kept within the versions there are)."""
    if len(metadata) < 2:
        return 0
    return max(0, min(int(_I16.unpack_from(metadata)[0]), HIGHEST_VERSION))


def encode_assignment(partitions: Iterable[TopicPartition], version: int) -> bytes:
    """A ConsumerProtocolAssignment of ``partitions`` (topics in name order), no user
    data."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    out = bytearray(_I16.pack(max(0, min(version, HIGHEST_VERSION))))
    out += _I32.pack(len(by_topic))
    for topic, ps in by_topic.items():
        raw = topic.encode()
        out += _I16.pack(len(raw)) + raw + _I32.pack(len(ps))
        out += b"".join(_I32.pack(p) for p in ps)
    out += _I32.pack(-1)  # user data: null
    return bytes(out)
