"""The io pool's own accounting: what ``tests.support.brokers.settled`` relies on."""

from __future__ import annotations

import threading
import time

import trio
import trio.testing

from trio_broker.server.io_pool import IoPool


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
