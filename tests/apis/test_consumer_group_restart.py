"""A KIP-848 group survives its broker's restart (issue 34): its records in
``__consumer_offsets`` are read back, so ConsumerGroupDescribe, through the project's own
codec, gives the same group epoch, assignment epoch, member epochs and assignments as
before, and the members' next heartbeats carry on with their epochs (no rejoin, nothing
fenced, no epoch bump)."""

from __future__ import annotations

from typing import Any

import trio

from trio_broker.protocol.messages.group_heartbeats import ConsumerGroupDescribeRequest

from .test_consumer_groups_wire import as_owned, hb, owned
from .test_groups_wire import client_of, make_topic

SLOW_SESSION = {
    "num.partitions": "4",
    "group.consumer.min.session.timeout.ms": "500",
    # the members must outlive the restart: their sessions start again when it loads
    "group.consumer.session.timeout.ms": "30000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "200",
}


def described(d: Any) -> Any:
    members = {
        m.member_id: (
            m.member_epoch,
            sorted((t.topic_name, sorted(t.partitions)) for t in m.assignment.topic_partitions),
            sorted(
                (t.topic_name, sorted(t.partitions)) for t in m.target_assignment.topic_partitions
            ),
        )
        for m in d.members
    }
    return d.error_code, d.group_state, d.group_epoch, d.assignment_epoch, members


async def test_a_consumer_group_is_the_same_after_a_restart(run_broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = {**SLOW_SESSION, "log.dirs": str(tmp_path / "kept")}
    broker = await run_broker(settings)
    c = await client_of(broker)
    await make_topic(c, "cg-restart")
    topic_id = broker.topic("cg-restart").topic_id
    epochs: dict[str, int] = {"a": 0, "b": 0}
    holds: dict[str, Any] = {"a": {}, "b": {}}
    for _ in range(4):  # both join, a revokes half, b takes it
        for m in ("a", "b"):
            kw: dict[str, Any] = {"topic_partitions": as_owned(holds[m])}
            if epochs[m] == 0:
                kw["subscribed_topic_names"] = ["cg-restart"]
            r = await c.request(hb("g", m, epochs[m], **kw), 1)
            assert r.error_code == 0, r
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                holds[m] = owned(r)
    assert all(holds[m].get(topic_id) for m in ("a", "b"))
    (before,) = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 1)).groups
    assert before.group_state == "Stable"
    await c.aclose()
    broker.shutdown()
    with trio.fail_after(30):
        await broker.stopped.wait()

    again = await run_broker(settings)
    c = await client_of(again)
    (after,) = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 1)).groups
    assert described(after) == described(before)
    for m in ("a", "b"):
        r = await c.request(hb("g", m, epochs[m], topic_partitions=as_owned(holds[m])), 1)
        assert (r.error_code, r.member_epoch) == (0, epochs[m])
    (still,) = (await c.request(ConsumerGroupDescribeRequest(group_ids=["g"]), 1)).groups
    assert described(still) == described(before)
    await c.aclose()
