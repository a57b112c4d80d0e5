"""Sliding windows: HDR histograms and sums kept per time slot, merged when read.

Owns: ``Window`` (the time grid shared by every windowed figure: a window of W seconds cut
into N slots of monotonic nanoseconds), ``WindowedHistogram`` (one HdrHistogram per slot,
reused ring-fashion, plus cumulative count, sum and max; ``read_merged`` reads several as
one), ``WindowedSum`` and
``Distribution`` (what a histogram reads as). A window is the current slot and the N-1
before it, so it spans between (N-1)/N and all of W.

Recording is cheap: the caller computes the slot number (``Window.epoch``) once per event
from a time stamp it already has; a record computes the HdrHistogram counter index with a
few integer operations (``counts_index``, the library's own formula without its per-call
string work) and bumps that counter; the slot's count, sum and max are kept beside it; a
slot is reused by zeroing its counters with one
``memset`` (no allocation once a slot's histogram exists). Values are integers
(microseconds for times). Reading adds up the live slots' counters (only up to the
window's max) and walks the cumulative counts once for all percentiles.
Must not: know what it measures, read a clock on the hot path, import trio.
"""

from __future__ import annotations

import ctypes
import sys
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from hdrh.histogram import HdrHistogram

HIGHEST = 3_600_000_000  # one hour in microseconds: larger values are recorded as this
SIGNIFICANT_FIGURES = 2
PERCENTILES = (50.0, 75.0, 95.0, 99.0, 99.9)
_WORD_SIZE = 4  # per-slot counters: 2**32 events per bucket and slot is plenty
_NO_EPOCH = -(2**62)


class Window:
    """A window of ``seconds`` cut into ``slots`` slots, on a monotonic-ns ``clock``."""

    def __init__(
        self,
        seconds: float,
        slots: int = 6,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        if seconds <= 0 or slots < 1:
            raise ValueError("a window needs a positive length and at least one slot")
        self.slots = slots
        self.slot_ns = max(1, int(seconds * 1_000_000_000) // slots)
        self.span_ns = self.slot_ns * slots
        self.clock = clock

    def epoch(self, now_ns: int) -> int:
        """The slot number of time ``now_ns``."""
        return now_ns // self.slot_ns

    def now_epoch(self) -> int:
        return self.clock() // self.slot_ns

    def start_ns(self, epoch: int) -> int:
        """Where the window that ends in slot ``epoch`` begins."""
        return (epoch - self.slots + 1) * self.slot_ns

    def is_live(self, slot_epoch: int, epoch: int) -> bool:
        return epoch - self.slots < slot_epoch <= epoch


@dataclass(frozen=True, slots=True)
class Distribution:
    """A histogram as read: window percentiles and max, window and cumulative totals."""

    percentiles: tuple[int, ...]  # one per ``PERCENTILES``, 0 when the window is empty
    max: int
    window_count: int
    window_sum: int
    count: int
    sum: int

    def scaled(self, factor: float, digits: int = 3) -> dict[str, float | int]:
        """As a JSON object, values multiplied by ``factor`` (1e-3: microseconds to ms)
        and rounded to ``digits`` decimals."""
        p = self.percentiles
        return {
            "p50": round(p[0] * factor, digits),
            "p75": round(p[1] * factor, digits),
            "p95": round(p[2] * factor, digits),
            "p99": round(p[3] * factor, digits),
            "p999": round(p[4] * factor, digits),
            "max": round(self.max * factor, digits),
            "window_count": self.window_count,
            "count": self.count,
            "sum": round(self.sum * factor, digits),
        }


def _new_histogram() -> Any:
    return HdrHistogram(1, HIGHEST, SIGNIFICANT_FIGURES, word_size=_WORD_SIZE)


_LAYOUT = _new_histogram()  # the layout every histogram here shares; used for its formulas
_MASK: int = _LAYOUT.sub_bucket_mask
_UNIT: int = _LAYOUT.unit_magnitude
_HALF_MAG: int = _LAYOUT.sub_bucket_half_count_magnitude
_HALF: int = _LAYOUT.sub_bucket_half_count
_SHIFT = _UNIT + _HALF_MAG + 1
_SCRATCH = _new_histogram()  # where ``read`` adds slots up (reads never interleave)


def counts_index(value: int) -> int:
    """The index of ``value``'s counter in our histograms' counts array (0 <= value)."""
    bucket = (value | _MASK).bit_length() - _SHIFT
    return ((bucket + 1) << _HALF_MAG) + (value >> (bucket + _UNIT)) - _HALF


def _zero(hist: Any) -> None:
    counts = hist.counts
    ctypes.memset(ctypes.addressof(counts), 0, ctypes.sizeof(counts))
    hist.total_count = 0
    hist.min_value = sys.maxsize
    hist.max_value = 0


class WindowedHistogram:
    """An HDR histogram over a sliding window, plus cumulative count, sum and max."""

    __slots__ = (
        "_counts",
        "_epochs",
        "_hists",
        "_maxes",
        "_n",
        "_slot_counts",
        "_sums",
        "count",
        "max",
        "sum",
        "window",
    )

    def __init__(self, window: Window) -> None:
        self.window = window
        n = window.slots
        self._n = n
        self._epochs = [_NO_EPOCH] * n
        self._hists: list[Any] = [None] * n
        self._counts: list[Any] = [None] * n  # each slot histogram's counts array
        self._slot_counts = [0] * n
        self._sums = [0] * n
        self._maxes = [0] * n
        self.count = 0
        self.sum = 0
        self.max = 0

    def record(self, value: int, epoch: int) -> None:
        """Record ``value`` (an int; clamped to 0..HIGHEST) in slot ``epoch``."""
        if value < 0:
            value = 0
        elif value > HIGHEST:
            value = HIGHEST
        slot = epoch % self._n
        if self._epochs[slot] != epoch:
            self._open(slot, epoch)
        bucket = (value | _MASK).bit_length() - _SHIFT
        self._counts[slot][((bucket + 1) << _HALF_MAG) + (value >> (bucket + _UNIT)) - _HALF] += 1
        self._slot_counts[slot] += 1
        self._sums[slot] += value
        if value > self._maxes[slot]:
            self._maxes[slot] = value
        self.count += 1
        self.sum += value
        if value > self.max:
            self.max = value

    def _open(self, slot: int, epoch: int) -> None:
        hist = self._hists[slot]
        if hist is None:
            hist = self._hists[slot] = _new_histogram()
            self._counts[slot] = hist.counts
        else:
            _zero(hist)
        self._epochs[slot] = epoch
        self._slot_counts[slot] = 0
        self._sums[slot] = 0
        self._maxes[slot] = 0

    def read(self, epoch: int) -> Distribution:
        """The distribution of the window that ends in slot ``epoch``."""
        live = [
            i
            for i in range(self._n)
            if self.window.is_live(self._epochs[i], epoch) and self._slot_counts[i]
        ]
        if not live:
            return Distribution((0,) * len(PERCENTILES), 0, 0, 0, self.count, self.sum)
        top = max(self._maxes[i] for i in live)
        last = counts_index(top)  # no counter above this one is set
        if len(live) == 1:
            counts = self._counts[live[0]]
        else:  # add the slots' counters up in C (the library's array addition)
            _zero(_SCRATCH)
            for i in live:
                _SCRATCH.encoder.add(self._hists[i].encoder)
            counts = _SCRATCH.counts
        merged = _counts_view(counts)[: last + 1].tolist()
        count = sum(self._slot_counts[i] for i in live)
        return Distribution(
            tuple(min(v, top) for v in _percentiles(merged, count)),
            top,
            count,
            sum(self._sums[i] for i in live),
            self.count,
            self.sum,
        )


def read_merged(hists: list[WindowedHistogram], epoch: int) -> Distribution:
    """The distribution of several histograms' values together over the window that ends
    in slot ``epoch`` (their live slots added up, as ``read`` adds one histogram's)."""
    live = [
        (h, i)
        for h in hists
        for i in range(h._n)
        if h.window.is_live(h._epochs[i], epoch) and h._slot_counts[i]
    ]
    count_all, sum_all = sum(h.count for h in hists), sum(h.sum for h in hists)
    if not live:
        return Distribution((0,) * len(PERCENTILES), 0, 0, 0, count_all, sum_all)
    top = max(h._maxes[i] for h, i in live)
    _zero(_SCRATCH)
    for h, i in live:
        _SCRATCH.encoder.add(h._hists[i].encoder)
    merged = _counts_view(_SCRATCH.counts)[: counts_index(top) + 1].tolist()
    count = sum(h._slot_counts[i] for h, i in live)
    return Distribution(
        tuple(min(v, top) for v in _percentiles(merged, count)),
        top,
        count,
        sum(h._sums[i] for h, i in live),
        count_all,
        sum_all,
    )


def _counts_view(counts: Any) -> memoryview:
    return memoryview(counts).cast("B").cast("I" if _WORD_SIZE == 4 else "Q")


def _percentiles(counts: list[int], total: int) -> list[int]:
    """Values at ``PERCENTILES`` of histogram counts (HdrHistogram's highest equivalent
    value of the counter where the cumulative count reaches each percentile)."""
    cumulative = list(accumulate(counts))
    out = []
    for p in PERCENTILES:
        target = max(1, int(p * total / 100 + 0.5))
        index = min(bisect_left(cumulative, target), len(cumulative) - 1)
        out.append(int(_LAYOUT.get_highest_equivalent_value(_LAYOUT.get_value_from_index(index))))
    return out


class WindowedSum:
    """A sum of integers over a sliding window, plus the cumulative total."""

    __slots__ = ("_epochs", "_n", "_sums", "total", "window")

    def __init__(self, window: Window) -> None:
        self.window = window
        self._n = window.slots
        self._epochs = [_NO_EPOCH] * self._n
        self._sums = [0] * self._n
        self.total = 0

    def add(self, value: int, epoch: int) -> None:
        slot = epoch % self._n
        if self._epochs[slot] != epoch:
            self._epochs[slot] = epoch
            self._sums[slot] = 0
        self._sums[slot] += value
        self.total += value

    def read(self, epoch: int) -> int:
        """The sum over the window that ends in slot ``epoch``."""
        is_live = self.window.is_live
        return sum(s for e, s in zip(self._epochs, self._sums, strict=True) if is_live(e, epoch))
