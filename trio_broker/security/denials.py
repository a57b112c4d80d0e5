"""Rate limiting of the authorization-denied log: once per burst, not once per request.

Owns: ``DenialLog``. A client that retries a denied request would otherwise write a line
per attempt; ``note(key)`` says whether to log the denial of ``key`` (principal, host,
operation, resource) now — the first time, and again once ``interval_s`` has passed since
the last line for that key — and how many denials of it were not logged since. Pure:
the clock is passed in; no I/O, no trio.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

__all__ = ["DenialLog"]


class DenialLog:
    def __init__(
        self,
        interval_s: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.max_keys = max_keys
        self._last: dict[Hashable, tuple[float, int]] = {}  # key -> (logged at, suppressed)

    def note(self, key: Hashable) -> int | None:
        """A denial of ``key``: None to stay silent, else the count suppressed before it."""
        now = self.clock()
        seen = self._last.get(key)
        if seen is not None and now - seen[0] < self.interval_s:
            self._last[key] = (seen[0], seen[1] + 1)
            return None
        if seen is None and len(self._last) >= self.max_keys:
            # Many distinct keys (names made up by a client): forget the stale ones.
            self._last = {k: v for k, v in self._last.items() if now - v[0] < self.interval_s}
            if len(self._last) >= self.max_keys:
                return None
        self._last[key] = (now, 0)
        return 0 if seen is None else seen[1]
