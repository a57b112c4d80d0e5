"""``trio-broker`` whose group coordinator forgets the offsets it takes over: a test-only
launcher.

Usage: python -m nemesis.forgetful_broker [trio-broker arguments ...]

It replaces, in this process only, the read of a ``__consumer_offsets`` partition that a
broker does when it becomes that partition's leader (``LogOffsetsTopic.scan_partition``)
by one that finds nothing: a coordinator that takes a group over after a failover then
knows none of its committed offsets, and the group's members start again from the
beginning. The nemesis suite runs it to show that its consumer-group checker catches
lost commits. No configuration of a real broker can reach this; it exists only here. It
reaches past the groups package's face on purpose: the read it replaces is internal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from trio_broker.server.groups.storage import LogOffsetsTopic, StoredRecord
from trio_broker.server.main import main

_read = LogOffsetsTopic.scan_partition


def _forget_offsets(self: LogOffsetsTopic, partition: int) -> Iterator[StoredRecord]:
    """Nothing for ``__consumer_offsets``; ``__transaction_state`` is read as ever."""
    return iter(()) if self.name == "__consumer_offsets" else _read(self, partition)


if __name__ == "__main__":
    LogOffsetsTopic.scan_partition = _forget_offsets  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))
