"""The io pool's own accounting: what ``tests.support.brokers.settled`` relies on."""

from __future__ import annotations

import itertools
import threading
import time

import trio
import trio.testing

from trio_broker.server.common.io_pool import IoPool


async def test_a_job_is_unfinished_until_its_result_reaches_the_loop() -> None:
    pool = IoPool(1)
    release = threading.Event()
    results: list[int] = []

    async def submit() -> None:
        results.append(await pool.run(lambda: (release.wait(10), 7)[1]))

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(submit)
            await trio.testing.wait_all_tasks_blocked()
            assert pool.unfinished == 1
            release.set()
            # Hold the event loop until the thread has let go of the job: its result
            # cannot have been delivered yet, so the job is done on the thread and still
            # unfinished for the loop (``busy`` alone would say the pool is idle).
            deadline = time.monotonic() + 10
            while pool.busy and time.monotonic() < deadline:
                time.sleep(0.001)
            assert pool.busy == 0
            assert pool.unfinished == 1
            assert results == []
        assert results == [7]
        assert pool.unfinished == 0
    finally:
        pool.close()


async def hold_the_thread(pool: IoPool, nursery: trio.Nursery, release: threading.Event) -> None:
    """Occupy a one-thread pool's thread with a job that ends on ``release``; return once
    the thread has it."""
    taken = threading.Event()

    def held() -> None:
        taken.set()
        release.wait(10)

    nursery.start_soon(pool.run, held)
    await trio.testing.wait_all_tasks_blocked()
    assert taken.wait(10)  # the thread's own pace: an event, not a poll


async def test_jobs_queued_behind_a_busy_pool_share_one_hop_and_keep_their_own_results() -> None:
    pool = IoPool(1)
    release = threading.Event()
    results: dict[int, object] = {}

    def answer(i: int) -> int:
        if i == 2:
            raise ValueError("the third job fails alone")
        return i * 10

    async def submit(i: int) -> None:
        try:
            results[i] = await pool.run(lambda: answer(i))
        except ValueError as exc:
            results[i] = exc

    try:
        async with trio.open_nursery() as nursery:
            await hold_the_thread(pool, nursery, release)
            for i in range(4):
                nursery.start_soon(submit, i)
            await trio.testing.wait_all_tasks_blocked()
            # the first queued job is its own; the other three wait in it, not behind it
            assert pool.joined == 3
            assert pool.waiting == 4
            release.set()
        assert [results[i] for i in (0, 1, 3)] == [0, 10, 30]
        assert isinstance(results[2], ValueError)
        assert pool.jobs == 5  # each caller's function counts as a job
        assert pool.unfinished == 0
    finally:
        pool.close()


async def test_idle_threads_each_take_a_job_of_their_own() -> None:
    """Jobs never wait in another's while a thread is free: two jobs that can only finish
    together (a barrier of two) both finish."""
    pool = IoPool(2)
    barrier = threading.Barrier(2, timeout=10)
    try:
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(pool.run, barrier.wait)
        assert pool.joined == 0
    finally:
        pool.close()


async def test_long_jobs_never_share_a_thread_behind_another() -> None:
    """A slow disk: after a job that took 20 ms, jobs queued behind a busy thread stay
    jobs of their own (a thread freed meanwhile takes the next one)."""
    ticks = itertools.count(step=20_000_000)  # the pool's clock: 20 ms a reading
    pool = IoPool(1, clock=lambda: next(ticks))
    release = threading.Event()
    try:
        await pool.run(lambda: None)  # started and ended a reading apart: a 20 ms job
        async with trio.open_nursery() as nursery:
            await hold_the_thread(pool, nursery, release)
            for _ in range(4):
                nursery.start_soon(pool.run, lambda: None)
            await trio.testing.wait_all_tasks_blocked()
            assert pool.joined == 0
            assert pool.waiting == 4
            release.set()
    finally:
        pool.close()
