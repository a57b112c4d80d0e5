"""A test-only delay before each storage operation of the request path.

Owns: ``delay_seconds`` and ``before_storage_operation``. Benchmarks and tests set
``delay_seconds`` in the broker's own process (see ``bench/storage_bound.py``) to model a
slow disk: every append, read, offset lookup or record deletion of one partition then
sleeps that long on its io thread before it touches the log. No configuration key, file or
environment variable reaches it, so a real broker always runs with 0.
"""

from __future__ import annotations

import time

delay_seconds = 0.0


def before_storage_operation() -> None:
    """Called on an io thread before one partition's storage operation."""
    if delay_seconds > 0:
        time.sleep(delay_seconds)
