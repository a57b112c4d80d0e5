"""Idle ratios over the window: exact on an injected clock, within 0..1 across resizes."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.server.metrics.pools import HandlerSampler, ProcessorSampler
from trio_broker.server.metrics.window import Window

from ...support.wire import AsyncWireClient

S = 1_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@dataclass(eq=False)
class FakeHandler:
    id: int
    started_ns: int
    busy_ns: int = 0
    ended_ns: int = 0
    current: Any = None


@dataclass
class FakePool:
    handlers: list[FakeHandler] = field(default_factory=list)


def test_units_count_for_the_part_of_the_window_they_existed() -> None:
    clock = Clock()
    pool = FakePool([FakeHandler(0, 0), FakeHandler(1, 0)])
    sampler = HandlerSampler(Window(60, 6, clock), pool)  # samples at t=0
    h0, h1 = pool.handlers
    # 0..10 s: h0 busy throughout, h1 idle; at 10 s the pool grows by h2.
    clock.now = 10 * S
    h0.busy_ns = 10 * S
    h2 = FakeHandler(2, 10 * S)
    pool.handlers.append(h2)
    sampler.sample(clock.now)
    # 10..15 s: h1 busy, then leaves the pool (shrink); h0 stays busy.
    clock.now = 15 * S
    h1.busy_ns = 5 * S
    h1.ended_ns = 15 * S
    pool.handlers.remove(h1)
    # 15..20 s: h2 holds one request since 17 s (in progress counts as busy).
    h2.current = SimpleNamespace(times=SimpleNamespace(dequeue_ns=17 * S))
    clock.now = 20 * S
    h0.busy_ns = 20 * S
    figures = sampler.idle()
    # existence: h0 20 s, h1 15 s, h2 10 s; busy: 20 + 5 + 3
    assert figures.existence_ns == 45 * S
    assert figures.busy_ns == 28 * S
    assert figures.idle_ratio == pytest.approx(1 - 28 / 45)
    assert figures.units == {0: 0.0, 2: pytest.approx(0.7)}

    # Later the window slides: at 75 s it starts at the 20 s sample.
    for t in range(20, 80, 10):
        clock.now = t * S
        h0.busy_ns = t * S  # always busy
        sampler.sample(clock.now)
    h2.current = None
    h2.busy_ns = 40 * S  # its request took 17..57 s, then it idled
    clock.now = 75 * S
    h0.busy_ns = 75 * S
    figures = sampler.idle()
    # window [20, 75]: h0 55 s busy of 55; h2 busy 57-20 = 37 s of 55 (3 s sampled at 20)
    assert figures.window_ns == 55 * S
    assert figures.busy_ns == 55 * S + 37 * S
    assert figures.idle_ratio == pytest.approx(1 - 92 / 110)
    sampler.sample(80 * S)
    assert {u.id for u in sampler._known.values()} == {0, 2}  # h1 left before 80 - 60 s


def test_idle_ratios_stay_within_bounds_under_random_resizes() -> None:
    rng = random.Random(7)
    clock = Clock()
    pool = FakePool([FakeHandler(0, 0)])
    window = Window(6, 6, clock)
    sampler = HandlerSampler(window, pool)
    next_id = 1
    for _ in range(2000):
        step = rng.randrange(1, S // 3)
        clock.now += step
        for h in pool.handlers:
            # busy time grows at most as fast as time, sometimes in late jumps
            h.busy_ns += rng.choice([0, step, rng.randrange(step + 1), 3 * step])
        action = rng.random()
        if action < 0.1:
            pool.handlers.append(FakeHandler(next_id, clock.now))
            next_id += 1
        elif action < 0.2 and len(pool.handlers) > 1:
            gone = pool.handlers.pop(rng.randrange(len(pool.handlers)))
            gone.ended_ns = clock.now
        if clock.now // window.slot_ns != (clock.now - step) // window.slot_ns:
            sampler.sample(clock.now)
        figures = sampler.idle()
        assert 0.0 <= figures.idle_ratio <= 1.0
        assert set(figures.units) == {h.id for h in pool.handlers}
        assert all(0.0 <= r <= 1.0 for r in figures.units.values())
        assert figures.window_ns <= window.span_ns + S


async def test_live_resizes_while_requests_flow(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"num.io.threads": "2", "metrics.window.seconds": "1"})
    host, port = broker.bound_listeners()["PLAINTEXT"]
    metrics = broker.metrics
    sent = 0

    async def client(stop: trio.Event) -> None:
        nonlocal sent
        c = await AsyncWireClient.connect(f"{host}:{port}")
        while not stop.is_set():
            await c.request(MetadataRequest(topics=[]), 12)
            sent += 1
        await c.aclose()

    def check() -> dict[str, Any]:
        s = broker.metrics_snapshot()
        pools = s["pools"]
        ratios = [pools["io"]["idle_ratio"], pools["network"]["PLAINTEXT"]["idle_ratio"]]
        ratios += [h["idle_ratio"] for h in pools["io"]["handlers"]]
        ratios += [p["idle_ratio"] for p in pools["network"]["PLAINTEXT"]["processors"]]
        assert all(0.0 <= r <= 1.0 for r in ratios), ratios
        return s

    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(client, stop)
        sizes = [5, 1, 3, 1, 8, 2, 1, 4, 2, 6, 1]
        for i, size in enumerate(sizes):
            broker.apply_config(
                broker.config.with_updates({"num.io.threads": str(size)}), {"num.io.threads": ""}
            )
            broker.socket_server.resize("PLAINTEXT", 1 + i % 3)
            target = sent + 20
            while sent < target:
                await trio.sleep(0)
            metrics.sample()
            check()
        stop.set()
    s = check()
    assert s["pools"]["io"]["size"] == sizes[-1]
    assert s["pools"]["io"]["handler_tasks"] == 2 * sizes[-1]
    assert s["pools"]["network"]["PLAINTEXT"]["size"] == 1 + (len(sizes) - 1) % 3
    assert s["requests"]["Metadata"]["count"] == sent


def test_processor_sampler_uses_retirement_time() -> None:
    clock = Clock()
    procs = [SimpleNamespace(id=0, created_ns=0, retired_ns=0, busy_ns=0)]
    listener = SimpleNamespace(processors=procs)
    sampler = ProcessorSampler(Window(60, 6, clock), listener)
    clock.now = 10 * S
    p1 = SimpleNamespace(id=1, created_ns=10 * S, retired_ns=0, busy_ns=0)
    procs.append(p1)
    sampler.sample(clock.now)
    clock.now = 20 * S
    p1.busy_ns = 10 * S
    p1.retired_ns = 20 * S
    procs.remove(p1)
    clock.now = 30 * S
    figures = sampler.idle()
    # busy 10 s (p1, fully busy while it existed) of the loop's 30 s: processors share one
    # event loop, so the pool's ratio is its busy time over the window, not over the
    # processors' summed existence (which would grow with the pool's size)
    assert figures.idle_ratio == pytest.approx(1 - 10 / 30)
    assert figures.units == {0: 1.0}
