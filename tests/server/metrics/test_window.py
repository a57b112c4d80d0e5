"""Sliding-window HDR histograms: percentiles, window expiry, slot reuse, on an injected clock."""

from __future__ import annotations

import random

import pytest
from hdrh.histogram import HdrHistogram

from trio_broker.server.metrics.window import (
    HIGHEST,
    PERCENTILES,
    SIGNIFICANT_FIGURES,
    Window,
    WindowedHistogram,
    WindowedSum,
    counts_index,
)

S = 1_000_000_000  # ns


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_percentiles_of_one_slot_are_within_hdr_precision() -> None:
    window = Window(60, 6, Clock())
    hist = WindowedHistogram(window)
    for v in range(1, 10_001):  # 1..10000 us
        hist.record(v, 0)
    d = hist.read(0)
    assert d.window_count == d.count == 10_000
    assert d.sum == d.window_sum == sum(range(1, 10_001))
    assert d.max == 10_000
    for p, got in zip(PERCENTILES, d.percentiles, strict=True):
        expected = p / 100 * 10_000
        assert got == pytest.approx(expected, rel=0.01), p  # 2 significant figures
    assert list(d.percentiles) == sorted(d.percentiles)


def test_values_leave_the_window_slot_by_slot() -> None:
    clock = Clock()
    window = Window(60, 6, clock)  # slots of 10 s
    hist = WindowedHistogram(window)
    hist.record(1000, window.epoch(0))  # slot 0
    hist.record(5000, window.epoch(25 * S))  # slot 2
    # At 55 s the window holds slots 0..5: both values.
    d = hist.read(window.epoch(55 * S))
    assert (d.window_count, d.max) == (2, 5000)
    # At 60 s slot 0 has left the window; the 5 ms value remains.
    d = hist.read(window.epoch(60 * S))
    assert (d.window_count, d.max, d.percentiles[0]) == (1, 5000, 5000)
    # At 80 s both have left; cumulative figures stay.
    d = hist.read(window.epoch(80 * S))
    assert (d.window_count, d.max, d.percentiles) == (0, 0, (0,) * len(PERCENTILES))
    assert (d.count, d.sum) == (2, 6000)
    assert hist.max == 5000


def test_a_reused_slot_starts_empty() -> None:
    window = Window(6, 6, Clock())  # slots of 1 s
    hist = WindowedHistogram(window)
    for _ in range(100):
        hist.record(HIGHEST * 2, 3)  # clamped to HIGHEST
    hist.record(-5, 3)  # clamped to 0
    hist.record(7, 9)  # slot 9 % 6 == 3: slot 3 of epoch 3 is reused
    d = hist.read(9)
    assert (d.window_count, d.max, d.window_sum) == (1, 7, 7)
    assert d.percentiles[-1] == 7
    assert hist.count == 102
    assert hist.sum == 100 * HIGHEST + 7


def test_percentiles_merge_across_slots() -> None:
    window = Window(3, 3, Clock())
    hist = WindowedHistogram(window)
    for epoch, value in ((0, 100), (1, 200), (2, 300)):
        for _ in range(100):
            hist.record(value, epoch)
    d = hist.read(2)
    assert d.window_count == 300
    assert d.percentiles[0] == pytest.approx(200, rel=0.01)
    assert d.percentiles[3] == pytest.approx(300, rel=0.01)
    assert hist.read(3).window_count == 200  # epoch 0 expired


def test_windowed_sum() -> None:
    window = Window(60, 6, Clock())
    s = WindowedSum(window)
    s.add(5, 0)
    s.add(7, 1)
    s.add(11, 7)  # reuses slot 1, drops the 7
    assert s.read(7) == 11  # epoch 0 is out of the window (7 - 6 = 1 < e)
    assert s.read(6) == 0  # slot 1 holds epoch 7 (future at 6), slot 0 epoch 0 (expired)
    assert s.total == 23


def test_window_start_and_clock() -> None:
    clock = Clock()
    window = Window(60, 6, clock)
    clock.now = 65 * S
    assert window.now_epoch() == 6
    assert window.start_ns(6) == 10 * S
    with pytest.raises(ValueError):
        Window(0)


def test_counts_index_is_the_libraries_own() -> None:
    ref = HdrHistogram(1, HIGHEST, SIGNIFICANT_FIGURES, word_size=4)
    rng = random.Random(3)
    values = [0, 1, 2, 127, 128, 255, 256, 257, 511, 512, 1000, 12345, HIGHEST]
    values += [rng.randrange(HIGHEST) for _ in range(20_000)]
    values += [rng.randrange(100_000) for _ in range(20_000)]
    for v in values:
        assert counts_index(v) == ref.get_counts_array_index(v), v


def test_percentiles_agree_with_hdrhistogram() -> None:
    rng = random.Random(5)
    window = Window(60, 6, Clock())
    ours = WindowedHistogram(window)
    ref = HdrHistogram(1, HIGHEST, SIGNIFICANT_FIGURES, word_size=4)
    for i in range(5000):
        v = int(rng.lognormvariate(7, 2))
        ours.record(v, i % 4)  # spread over four slots
        ref.record_value(min(v, HIGHEST))
    d = ours.read(3)
    assert d.window_count == ref.get_total_count() == 5000
    for p, got in zip(PERCENTILES, d.percentiles, strict=True):
        assert got == min(ref.get_value_at_percentile(p), d.max), p
