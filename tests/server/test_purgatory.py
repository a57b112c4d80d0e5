"""The purgatory completes each operation exactly once: when ready, or at its deadline."""

from __future__ import annotations

import trio
import trio.testing

from trio_broker.server.common.purgatory import DelayedOperation, Purgatory


class Op(DelayedOperation):
    def __init__(self, deadline: float, need: int, state: dict[str, int]) -> None:
        super().__init__(deadline)
        self.need = need
        self.state = state
        self.results: list[tuple[bool, int, float]] = []

    def ready(self) -> bool:
        return self.state["bytes"] >= self.need

    async def complete(self) -> None:
        self.results.append((self.expired, self.state["bytes"], trio.current_time()))


async def test_ready_at_once_completes_without_waiting(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    p = Purgatory("fetch")
    await nursery.start(p.run)
    op = Op(trio.current_time() + 5, need=0, state={"bytes": 0})
    assert p.park(op, ["t-0"])
    await trio.testing.wait_all_tasks_blocked()
    assert op.results == [(False, 0, 0.0)] and p.size == 0
    p.stop()


async def test_check_completes_when_the_key_changes(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    p = Purgatory("fetch")
    await nursery.start(p.run)
    state = {"bytes": 0}
    op = Op(trio.current_time() + 10, need=100, state=state)
    assert not p.park(op, ["t-0", "t-1"])
    assert p.size == 1 and p.watched("t-0") == 1
    state["bytes"] = 50
    assert p.check("t-0") == 0
    await trio.sleep(3)
    state["bytes"] = 150
    assert p.check("t-1") == 1
    await trio.testing.wait_all_tasks_blocked()
    assert op.results == [(False, 150, 3.0)]
    assert p.watched("t-0") == p.watched("t-1") == 0
    await trio.sleep(20)  # the deadline passes: nothing more happens
    assert len(op.results) == 1
    p.stop()


async def test_operations_expire_at_their_own_deadlines(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    p = Purgatory("fetch")
    await nursery.start(p.run)
    state = {"bytes": 0}
    ops = [Op(trio.current_time() + d, need=1, state=state) for d in (5, 1, 3)]
    for op in ops:
        p.park(op, ["k"])
    await trio.sleep(10)
    assert [op.results for op in ops] == [[(True, 0, 5.0)], [(True, 0, 1.0)], [(True, 0, 3.0)]]
    assert p.expired_count == 3 and p.size == 0
    p.stop()


async def test_shutdown_completes_everything_waiting(nursery, autojump_clock) -> None:  # type: ignore[no-untyped-def]
    p = Purgatory("fetch")
    await nursery.start(p.run)
    state = {"bytes": 0}
    op = Op(trio.current_time() + 100, need=1, state=state)
    p.park(op, ["k"])
    await trio.sleep(1)
    p.shutdown()
    await trio.testing.wait_all_tasks_blocked()
    assert op.results == [(True, 0, 1.0)]
    late = Op(trio.current_time() + 100, need=1, state=state)
    assert p.park(late, ["k"])  # completes at once once shutting down
    p.stop()
