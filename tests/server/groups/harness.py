"""A group coordinator on an in-memory offsets topic, for tests on trio's mock clock.

``MemoryTopic`` stands in for ``__consumer_offsets`` (it can be made to fail or to hold
appends until released); ``Harness`` runs a ``GroupCoordinator`` on it and offers the
requests of a member in a line each. Wall-clock times come from trio's clock, so retention
tests run on ``autojump_clock`` too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio
import trio.testing

from trio_broker.apis.group_services import (
    JoinParams,
    JoinResult,
    OffsetCommitEntry,
    Pending,
    SyncParams,
    SyncResult,
)
from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import Record, build_batch, iter_records
from trio_broker.server.groups import CoordinatorConfig, GroupCoordinator, MembershipConfig
from trio_broker.server.groups.storage import StoredRecord

EPOCH_MS = 1_700_000_000_000


def clock_ms() -> int:
    return EPOCH_MS + int(trio.current_time() * 1000)


class MemoryTopic:
    """``__consumer_offsets`` in memory: each append is one batch (kept as bytes)."""

    def __init__(self, partitions: int = 3) -> None:
        self.partitions = partitions
        self.batches: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self.fail_with = 0
        self.gate: trio.Event | None = None
        self.appends = 0

    def open(self) -> int:
        return self.partitions

    def records(self, partition: int | None = None) -> list[StoredRecord]:
        out = []
        for p in range(self.partitions) if partition is None else [partition]:
            offset = 0
            for batch in self.batches[p]:
                for r in iter_records(batch):
                    out.append(StoredRecord(p, offset, r.key, r.value))
                    offset += 1
        return out

    def scan(self) -> Iterator[StoredRecord]:
        return iter(self.records())

    async def append(
        self, partition: int, records: Sequence[Record], producer: tuple[int, int] | None = None
    ) -> int:
        self.appends += 1
        if self.gate is not None:
            await self.gate.wait()
        await trio.sleep(0)
        if self.fail_with:
            return self.fail_with
        if producer is None:
            self.batches[partition].append(build_batch(records))
        else:
            pid, epoch = producer
            batch = build_batch(
                records, producer_id=pid, producer_epoch=epoch, is_transactional=True
            )
            self.batches[partition].append(batch)
        return 0


def config(**overrides: Any) -> CoordinatorConfig:
    membership = {
        k: overrides.pop(k)
        for k in list(overrides)
        if k in MembershipConfig.__dataclass_fields__  # type: ignore[attr-defined]
    }
    return CoordinatorConfig(membership=MembershipConfig(**membership), **overrides)


@dataclass
class Member:
    """One client's view: its id, generation and what it was told last."""

    h: Harness
    group: str
    client: str
    instance: str | None = None
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"meta"),)
    session_ms: int = 10_000
    rebalance_ms: int = 30_000
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    members: list[Any] = field(default_factory=list)
    assignment: bytes = b""

    def params(self, **kw: Any) -> JoinParams:
        base: dict[str, Any] = dict(
            group_id=self.group,
            member_id=self.member_id,
            group_instance_id=self.instance,
            client_id=self.client,
            client_host="/127.0.0.1",
            session_timeout_ms=self.session_ms,
            rebalance_timeout_ms=self.rebalance_ms,
            protocol_type="consumer",
            protocols=self.protocols,
        )
        base.update(kw)
        return JoinParams(**base)

    def join(self, **kw: Any) -> JoinResult | Pending[JoinResult]:
        """One JoinGroup; a MEMBER_ID_REQUIRED answer is followed by the second join."""
        out = self.h.coordinator.join_group(self.params(**kw))
        if isinstance(out, JoinResult) and out.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = out.member_id
            out = self.h.coordinator.join_group(self.params(**kw))
        if isinstance(out, JoinResult):
            self._took(out)
        return out

    def _took(self, r: JoinResult) -> None:
        if r.error_code == ErrorCode.NONE:
            self.member_id = r.member_id
            self.generation = r.generation_id
            self.leader = r.leader
            self.members = r.members

    async def joined(self, out: JoinResult | Pending[JoinResult]) -> JoinResult:
        r = await self.h.result(out)
        self._took(r)
        return r

    def sync(self, assignments: dict[str, bytes] | None = None, **kw: Any) -> Any:
        return self.h.coordinator.sync_group(
            SyncParams(
                kw.get("group", self.group),
                kw.get("generation", self.generation),
                kw.get("member_id", self.member_id),
                kw.get("instance", self.instance),
                kw.get("protocol_type"),
                kw.get("protocol_name"),
                assignments or {},
            )
        )

    async def synced(self, out: SyncResult | Pending[SyncResult]) -> SyncResult:
        r = await self.h.result(out)
        if r.error_code == ErrorCode.NONE:
            self.assignment = r.assignment
        return r

    def heartbeat(self, **kw: Any) -> int:
        return self.h.coordinator.heartbeat(
            kw.get("group", self.group),
            kw.get("generation", self.generation),
            kw.get("member_id", self.member_id),
            kw.get("instance", self.instance),
        )

    async def commit(self, offsets: dict[tuple[str, int], int], **kw: Any) -> dict[Any, int]:
        return await self.h.coordinator.commit_offsets(
            self.group,
            kw.get("generation", self.generation),
            kw.get("member_id", self.member_id),
            kw.get("instance", self.instance),
            kw.get("retention", -1),
            [
                OffsetCommitEntry(t, p, o, metadata=kw.get("metadata", ""))
                for (t, p), o in offsets.items()
            ],
        )


class Harness:
    def __init__(self, coordinator: GroupCoordinator, topic: MemoryTopic) -> None:
        self.coordinator = coordinator
        self.topic = topic
        self.notified: list[Any] = []
        self._answered: dict[Any, trio.Event] = {}

    def notify(self, key: Any) -> None:
        self.notified.append(key)
        self._answered.setdefault(key, trio.Event()).set()

    def member(self, client: str, group: str = "g", **kw: Any) -> Member:
        return Member(self, group, client, **kw)

    async def result(self, out: Any, limit_s: float = 600) -> Any:
        """The answer of ``out``, letting (mock) time pass until it is given."""
        if not isinstance(out, Pending):
            return out
        with trio.fail_after(limit_s):
            await self._answered.setdefault(out, trio.Event()).wait()
        assert out.done
        return out.result

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()

    @property
    def groups(self) -> dict[str, Any]:
        return self.coordinator.groups

    async def stable_group(self, *members: Member) -> None:
        """Join all (at once), run the leader's round-robin assignment, sync all."""
        outs = [m.join() for m in members]
        results = [await m.joined(o) for m, o in zip(members, outs, strict=True)]
        assert all(r.error_code == ErrorCode.NONE for r in results), results
        leader = next(m for m in members if m.member_id == m.leader)
        assignments = {m.member_id: f"assigned-{m.client}".encode() for m in members}
        pendings = [
            m.sync(assignments if m is leader else None) for m in members if m is not leader
        ]
        pendings.append(leader.sync(assignments))
        for m, p in zip([m for m in members if m is not leader] + [leader], pendings, strict=True):
            r = await m.synced(p)
            assert r.error_code == ErrorCode.NONE, r


async def start(
    nursery: trio.Nursery, topic: MemoryTopic | None = None, **overrides: Any
) -> Harness:
    topic = topic or MemoryTopic()
    harness: Harness

    def notify(key: Any) -> None:
        harness.notify(key)

    coordinator = GroupCoordinator(config(**overrides), topic, notify=notify, now_ms=clock_ms)
    harness = Harness(coordinator, topic)
    await nursery.start(coordinator.run)
    return harness
