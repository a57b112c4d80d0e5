"""Topics and partitions as a consumer group sees them: which topics a member's
subscription (names and a resolved regex) covers, the group's subscription metadata (the
topics its target assignment is computed from), and partitions between a heartbeat's
by-topic form and the set of (topic id, partition) the groups keep. Pure functions.
"""

from __future__ import annotations

import re
import uuid

from ....apis.group_services import Assignment, TopicLookup
from ....apis.topic_names import INTERNAL_TOPICS
from .model import ConsumerGroup, ConsumerMember, Partitions


def subscribed(
    member: ConsumerMember, metadata: dict[str, tuple[uuid.UUID, int]], resolved: set[str]
) -> set[str]:
    """The topic names ``member`` is subscribed to that exist (names and its regex, once
    resolved)."""
    names = {t for t in member.subscribed_topic_names if t in metadata}
    if member.subscribed_topic_regex in resolved:
        pattern = re.compile(member.subscribed_topic_regex)
        names |= {t for t in metadata if t not in INTERNAL_TOPICS and pattern.fullmatch(t)}
    return names


def subscription_metadata(
    group: ConsumerGroup, topics: TopicLookup
) -> dict[str, tuple[uuid.UUID, int]]:
    """The topics the group's members subscribe to, by name or by a resolved regex, as
    they are now (internal topics never match a regex)."""
    wanted = group.subscribed_names()
    patterns = [re.compile(r) for r in sorted(group.resolved_regexes)]
    if patterns:
        wanted |= {
            t
            for t in topics.names()
            if t not in INTERNAL_TOPICS and any(p.fullmatch(t) for p in patterns)
        }
    out = {}
    for name in sorted(wanted):
        meta = topics.by_name(name)
        if meta is not None and meta.partitions > 0:
            out[name] = (meta.topic_id, meta.partitions)
    return out


def partitions_of(assignment: Assignment) -> Partitions:
    return frozenset((t, p) for t, ps in assignment.items() for p in ps)


def by_topic(partitions: Partitions) -> dict[uuid.UUID, list[int]]:
    out: dict[uuid.UUID, list[int]] = {}
    for t, p in sorted(partitions, key=lambda tp: (str(tp[0]), tp[1])):
        out.setdefault(t, []).append(p)
    return out
