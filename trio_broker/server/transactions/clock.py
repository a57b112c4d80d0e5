"""How long a transaction has been open, and an id idle, on the monotonic clock.

Owns: ``Elapsed``. ``__transaction_state`` stores wall-clock timestamps (Kafka's format:
the transaction's start, the id's last update), and Kafka's coordinator compares them with
its wall clock now, so a jump of the coordinator's clock aborts every open transaction at
once (forward), or keeps one open past its timeout (back). Here the stored timestamps stay
as Kafka writes them; the timeout decisions count Trio's clock (monotonic) from when this
coordinator saw the timestamp written, or, for one it loaded from the log after a failover
or a restart, from the load, credited with the wall-clock age it had then (clamped to the
limit). A wall-clock jump then changes only what a load credits, never a running count.
It must not decide what a timeout does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import trio


def monotonic_ms() -> int:
    return int(trio.current_time() * 1000)


class Elapsed:
    def __init__(
        self, wall_ms: Callable[[], int], mono_ms: Callable[[], int] = monotonic_ms
    ) -> None:
        self.wall_ms, self.mono_ms = wall_ms, mono_ms
        # key -> (the wall-clock timestamp stored last, Trio's clock when it was written)
        self._since: dict[str, tuple[int, int]] = {}

    def written(self, key: str, wall_ms: int) -> None:
        """``wall_ms`` is being stored for ``key`` now (the same timestamp again keeps the
        time it was first written)."""
        known = self._since.get(key)
        if known is None or known[0] != wall_ms:
            self._since[key] = (wall_ms, self.mono_ms())

    def ms(self, key: str, wall_ms: int, limit_ms: int) -> int:
        """How long since ``wall_ms`` was stored for ``key``, on the monotonic clock."""
        known = self._since.get(key)
        if known is None or known[0] != wall_ms:  # loaded, not written here: credit its
            age = min(max(self.wall_ms() - wall_ms, 0), limit_ms)  # wall-clock age, once
            known = self._since[key] = (wall_ms, self.mono_ms() - age)
        return self.mono_ms() - known[1]

    def keep(self, keys: Iterable[str]) -> None:
        """Forget every key but ``keys`` (the ids the coordinator still holds)."""
        wanted = set(keys)
        for gone in [k for k in self._since if k not in wanted]:
            del self._since[gone]
