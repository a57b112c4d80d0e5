"""The checker: what a run's history and its final reads say went wrong.

Owns: ``check`` and its ``Verdict``. The anomalies follow Jepsen's Kafka "queue" workload:

- **lost**: a value the producer saw acknowledged is in no final read of its partition;
- **duplicate**: a value at more than one offset (the producer is idempotent: its retries
  must not write twice);
- **inconsistent offset**: an offset holding different values on different reads (the
  acknowledgement's offset, the concurrent reader's, the final read's);
- **divergence**: two replicas that hold the same offset with different values, or an
  in-sync replica that lacks an offset below the high watermark;
- **non-monotonic**: the concurrent reader saw a partition's offsets go backwards or repeat;
- **unhealthy**: after the heal, a partition without a leader or with fewer in-sync
  replicas than ``min.insync.replicas``;
- **stuck**: writes did not succeed again on every partition within a minute of the heal,
  a partition (of any workload's topic) was not back to all its replicas in sync within
  90 s of it, or the producer hit a fatal error (an idempotent producer's is one the
  application must handle by starting over).

Values whose delivery failed are unknown, never anomalies. Recovery time is measured here
too: the longest time no write was acknowledged on a partition, over the run.
It must not know how the history was made.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from .workload import History, Read


class Findings:
    """What a verdict of either workload shares: its anomaly lists, named in ``KINDS``
    (attribute names; reported with dashes), counted, and printed."""

    KINDS: tuple[str, ...] = ()

    @property
    def anomalies(self) -> dict[str, int]:
        return {kind.replace("_", "-"): len(getattr(self, kind)) for kind in self.KINDS}

    @property
    def ok(self) -> bool:
        return not any(self.anomalies.values())

    def found(self) -> str:
        return ", ".join(f"{n} {k}" for k, n in self.anomalies.items() if n) or "none"

    def details(self, limit: int = 10) -> str:
        parts = []
        for kind in self.KINDS:
            items = getattr(self, kind)
            if items:
                parts.append(f"{kind}: {items[:limit]}{' ...' if len(items) > limit else ''}")
        return "; ".join(parts)


@dataclass
class Verdict(Findings):
    KINDS = ("lost", "duplicate", "inconsistent", "divergent", "nonmonotonic", "unhealthy", "stuck")

    acked: int = 0
    unknown: int = 0
    read: int = 0
    lost: list[int] = field(default_factory=list)
    duplicate: list[int] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)
    divergent: list[str] = field(default_factory=list)
    nonmonotonic: list[str] = field(default_factory=list)
    unhealthy: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    longest_gap_s: float = 0.0  # the longest time a partition acknowledged nothing

    def summary(self) -> str:
        return (
            f"{self.acked} acknowledged, {self.unknown} unknown, {self.read} read back; "
            f"anomalies: {self.found()}; longest gap in acknowledgements "
            f"{self.longest_gap_s:.1f} s"
        )


def check(
    history: History,
    final: list[Read],
    replicas: dict[int, dict[int, dict[int, int]]],
    states: dict[int, dict[str, Any] | None],
    min_insync: int,
    run_window: tuple[float, float],
) -> Verdict:
    """``replicas``: partition -> broker -> offset -> value; ``states``: partition -> its
    ZooKeeper state after the heal; ``run_window``: when writing started and stopped."""
    v = Verdict()
    acked = history.acked()
    v.acked, v.unknown, v.read = len(acked), len(history.failed()), len(final)

    at: dict[tuple[int, int], int] = {(p, o): value for p, o, value in final}
    where: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for p, o, value in final:
        where[value].append((p, o))

    v.duplicate = sorted(value for value, places in where.items() if len(places) > 1)
    v.lost = sorted(s.value for s in acked if s.value not in where)
    for s in acked:
        seen = at.get((s.partition, s.offset))
        if seen is not None and seen != s.value:
            v.inconsistent.append(f"{s.partition}@{s.offset}: acked {s.value}, read {seen}")
    for p, o, value in history.reads:
        seen = at.get((p, o))
        if seen is not None and seen != value:
            v.inconsistent.append(f"{p}@{o}: reader saw {value}, final read {seen}")

    last: dict[int, int] = {}
    for p, o, _ in history.reads:
        if p in last and o <= last[p]:
            v.nonmonotonic.append(f"partition {p}: offset {o} after {last[p]}")
        last[p] = o

    high_watermark = Counter[int]()
    for p, o, _ in final:
        high_watermark[p] = max(high_watermark[p], o + 1)
    for p, copies in sorted(replicas.items()):
        isr = (states.get(p) or {}).get("isr", [])
        v.divergent += compare_copies(p, copies, high_watermark[p], isr)

    for p, state in sorted(states.items()):
        if state is None or state.get("leader", -1) < 0:
            v.unhealthy.append(f"partition {p}: no leader ({state})")
        elif len(state.get("isr", [])) < min_insync:
            v.unhealthy.append(f"partition {p}: ISR {state['isr']} below {min_insync}")

    v.stuck = [
        *([history.stuck] if history.stuck else []),
        *history.client_errors,
        *history.unsettled,
    ]
    v.longest_gap_s = _longest_gap(history, run_window)
    return v


def compare_copies(
    p: int,
    copies: dict[int, dict[int, int]],
    high_watermark: int | None = None,
    isr: list[int] | None = None,
) -> list[str]:
    """Where partition ``p``'s replicas differ: one offset, different values; with a high
    watermark (a topic without transactions, so its offsets are dense), also an in-sync
    replica lacking an offset below it."""
    found = []
    offsets = sorted({o for copy in copies.values() for o in copy})
    for o in offsets:
        values = {b: copy[o] for b, copy in copies.items() if o in copy}
        if len(set(values.values())) > 1:
            found.append(f"{p}@{o}: {values}")
    if high_watermark is None:
        return found
    for b in isr or []:
        copy = copies.get(b, {})
        missing = [o for o in range(high_watermark) if o not in copy]
        if missing:
            found.append(
                f"partition {p}: in-sync broker {b} lacks {len(missing)} offsets below the "
                f"high watermark {high_watermark} (first {missing[0]})"
            )
    return found


def _longest_gap(history: History, window: tuple[float, float]) -> float:
    """The longest stretch, in the writing window, in which a partition acknowledged
    nothing: how long writes took to succeed again after a fault."""
    start, end = window
    by_partition: dict[int, list[float]] = defaultdict(list)
    for s in history.acked():
        assert s.acked is not None
        by_partition[s.partition].append(s.acked)
    longest = 0.0
    for times in by_partition.values():
        marks = [start, *sorted(t for t in times if start <= t <= end), end]
        longest = max(longest, *(b - a for a, b in itertools.pairwise(marks)))
    return longest
