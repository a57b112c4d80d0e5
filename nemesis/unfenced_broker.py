"""``trio-broker`` with its acks=all fencing switched off: a test-only launcher.

Usage: python -m nemesis.unfenced_broker [trio-broker arguments ...]

It replaces, in this process only, the leader's acks=all rule
(``Replication.status``) by one that counts a produce as soon as the leader appended it,
whatever its followers and ZooKeeper say: the broker then acknowledges writes while it is
cut off from ZooKeeper and its followers, as a broker without Kafka's fencing would. The
nemesis suite runs it to show that its checker catches the loss this causes. No
configuration of a real broker can reach this; it exists only here. It reaches past the
replication package's face on purpose: the rule it replaces is internal.
"""

from __future__ import annotations

import sys

from trio_broker.protocol.errors import ErrorCode
from trio_broker.server.main import main
from trio_broker.server.replication.leader import Replication


def _acknowledge_at_once(self: Replication, topic: str, partition: int, required: int) -> int:
    return ErrorCode.NONE


if __name__ == "__main__":
    Replication.status = _acknowledge_at_once  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))
