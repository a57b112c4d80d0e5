"""``trio-broker`` with a slow disk: every storage operation waits a fixed delay first.

Usage: python bench/slow_disk_broker.py DELAY_MS [trio-broker arguments ...]

Sets the log layer's test-only hook (``trio_broker.log.storage_hook``) in this process,
then runs the broker exactly as ``trio-broker`` would. The delay runs on the io threads, as
a slow disk's wait would, so it models a storage-latency-bound broker: the workload on which
``num.io.threads`` matters. No configuration of a real broker can reach the hook.
"""

from __future__ import annotations

import sys

from trio_broker.log import storage_hook
from trio_broker.server.main import main

if __name__ == "__main__":
    storage_hook.delay_seconds = float(sys.argv[1]) / 1000
    sys.exit(main(sys.argv[2:]))
