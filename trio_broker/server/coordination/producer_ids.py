"""Producer id blocks from ZooKeeper, so that no two brokers of a cluster hand out the
same producer id.

Owns: ``claim_block``: Kafka's ZooKeeper-era scheme. ``/latest_producer_id_block`` holds
the last block handed out (``{"version": 1, "broker": id, "block_start": "s", "block_end":
"e"}``, inclusive ends, as Kafka writes it); a broker takes the next one by replacing the
node at the version it read, and reads again when another broker was faster. An idempotent
producer's state follows its partitions from leader to leader, so an id given twice would
mix two producers' sequences.
"""

from __future__ import annotations

import json

from kazoo.exceptions import BadVersionError

from .session import ZkSession

PATH = "/latest_producer_id_block"


async def claim_block(session: ZkSession, broker_id: int, size: int) -> int:
    """The first id of a block of ``size`` ids now this broker's alone."""
    while True:
        found = await session.get(PATH)
        start = 0
        if found is not None:
            start = int(json.loads(found[0])["block_end"]) + 1
        data = json.dumps(
            {
                "version": 1,
                "broker": broker_id,
                "block_start": str(start),
                "block_end": str(start + size - 1),
            }
        ).encode()
        if found is None:
            if await session.create(PATH, data):
                return start
            continue
        try:
            await session.set(PATH, data, found[1])
        except BadVersionError:
            continue
        return start
