"""Where a partition's leader went: the hints Produce (v10+) and Fetch (v16+) add to a
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer (KIP-951), so that a client can go
to the new leader at once instead of refreshing its metadata first.

Owns: ``MOVED`` (the errors that carry a hint) and ``point_to_leaders``: leader id and
epoch of each such partition as this broker's metadata has them, and the listener's
endpoints of those leaders. The response structs are each API's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...protocol.errors import ErrorCode
from ..context import RequestContext

MOVED = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def point_to_leaders(
    ctx: RequestContext,
    answers: Iterable[tuple[str | None, int, Any]],
    leader_type: Any,
    endpoint_type: Any,
) -> list[Any]:
    """Set ``current_leader`` (a ``leader_type``) on each (topic, partition, partition
    answer) whose error says the leader moved; the leaders' endpoints, as
    ``endpoint_type``s, for the response's ``node_endpoints``."""
    leaders: set[int] = set()
    for topic, partition, answer in answers:
        found = current_leader(ctx, topic, partition) if answer.error_code in MOVED else None
        if found is not None:
            answer.current_leader = leader_type(leader_id=found[0], leader_epoch=found[1])
            leaders.add(found[0])
    return [
        endpoint_type(node_id=e.node_id, host=e.host, port=e.port, rack=e.rack)
        for e in ctx.broker.endpoints(ctx.listener)
        if e.node_id in leaders
    ]


def current_leader(
    ctx: RequestContext, topic: str | None, partition: int
) -> tuple[int, int] | None:
    """(leader id, leader epoch) of the partition; None for one this broker does not know."""
    info = ctx.broker.topic(topic) if topic else None
    if info is None or not 0 <= partition < len(info.partitions):
        return None
    state = info.partitions[partition]
    return state.leader, state.leader_epoch
