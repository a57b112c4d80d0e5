"""``__consumer_offsets`` in a real broker: created at start-up, written through the
partition logs, read back in full (more than one read chunk) by the next broker."""

from __future__ import annotations

from pathlib import Path

import trio

from trio_broker.apis.group_services import OffsetCommitEntry
from trio_broker.server.config.broker_config import load_config
from trio_broker.server.groups import OFFSETS_TOPIC, partition_for
from trio_broker.server.lifecycle.broker import Broker
from trio_broker.server.node import new_broker

from ...support.brokers import PORT_ZERO


async def start(nursery: trio.Nursery, data: Path) -> Broker:
    settings = {**PORT_ZERO, "log.dirs": str(data), "offsets.topic.num.partitions": "3"}
    config = load_config(None, [f"{k}={v}" for k, v in settings.items()])
    broker: Broker = await nursery.start(new_broker(config).run)
    return broker


async def stop(broker: Broker) -> None:
    broker.shutdown()
    with trio.fail_after(10):
        await broker.stopped.wait()


async def test_offsets_written_through_the_logs_come_back(nursery, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broker = await start(nursery, tmp_path)
    info = broker.topic(OFFSETS_TOPIC)
    assert info is not None and info.internal and len(info.partitions) == 3
    groups = [f"group-{i}" for i in range(6)]
    coordinator = broker.group_coordinator
    for round_ in range(100):  # ~2.4 MB of records: more than one read chunk per partition
        for group in groups:
            got = await coordinator.commit_offsets(
                group,
                -1,
                "",
                None,
                -1,
                [OffsetCommitEntry("t", p, round_ * 10 + p, metadata="m" * 4000) for p in range(2)],
            )
            assert set(got.values()) == {0}
    used = {partition_for(g, 3) for g in groups}
    sizes = [broker.log_size(OFFSETS_TOPIC, p) for p in range(3)]
    assert all((sizes[p] > 0) == (p in used) for p in range(3))
    assert max(sizes) > 1 << 20
    await stop(broker)

    again = await start(nursery, tmp_path)
    assert again.topic(OFFSETS_TOPIC).topic_id == info.topic_id  # type: ignore[union-attr]
    for group in groups:
        code, offsets = again.group_coordinator.fetch_offsets(group, None, False)
        assert code == 0
        assert {tp: c.offset for tp, c in offsets.items()} == {("t", 0): 990, ("t", 1): 991}
    assert again.group_coordinator.loaded_records == 100 * 6 * 2
    await stop(again)
