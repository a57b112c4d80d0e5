"""The nemesis smoke run (issue 35): ZooKeeper and three brokers in network namespaces, an
idempotent acks=all producer and a reader, one leader cut off from ZooKeeper and its
followers (not from the clients), then a bridge, while a transactional producer commits
and aborts beside it with a read_committed reader, a consumer group of three reads the
queue and commits its offsets, and topics are created, changed and deleted; every replica
is read back from its files.

And the proofs that the run can fail: the same fault on brokers whose acks=all fencing is
switched off (``nemesis.unfenced_broker``, a test-only launcher) loses acknowledged writes,
and the checker says so; a group coordinator killed on brokers that forget the offsets of
the groups they take over (``nemesis.forgetful_broker``) makes the group read again from
the start, and the group's checker says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nemesis.net import available
from nemesis.run import run


@pytest.fixture(autouse=True)
def _root() -> None:
    why = available()
    assert why is None, why  # sessions and CI run as root, with iproute2 and nftables


def test_a_leader_cut_off_and_a_bridge_lose_nothing(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        ["isolate-leader", "bridge"],
        fault_s=12,
        gap_s=6,
        transactions=True,
        groups=3,
        admin_ops=True,
    )
    v, txn, group, admin = result.verdict, result.txn, result.group, result.admin
    assert v.ok, f"{v.summary()}: {v.details()}"
    # the transactional producer beside it: no aborted read, no partial or lost commit, no
    # fatal error, never more than 15 s without a commit
    assert txn is not None and txn.ok, f"{txn.summary()}: {txn.details()}" if txn else ""
    assert txn.committed > 20 and txn.aborted > 0
    assert v.acked > 1000 and v.read >= v.acked
    # the group: every acknowledged value read by a member, no committed offset lost
    assert group is not None and group.ok, f"{group.summary()}: {group.details()}" if group else ""
    assert group.commits > 20 and group.observations > 50
    # topics created, changed and deleted throughout: none lost, none left on a broker
    # that was cut off when it was deleted, every broker's metadata alike after the heal
    assert admin is not None and admin.ok, f"{admin.summary()}: {admin.details()}" if admin else ""
    assert admin.acknowledged > 10
    # writes on every partition resumed within the session timeout plus an election
    assert v.longest_gap_s < 20, v.summary()
    assert [e.name for e in result.events] == ["isolate-leader", "bridge"]
    assert result.leftovers == []  # no namespace, link or rule outlives the run


def test_the_checker_catches_a_leader_that_acknowledges_while_cut_off(tmp_path: Path) -> None:
    result = run(
        tmp_path, ["isolate-leader"], fault_s=10, gap_s=3, launcher="nemesis.unfenced_broker"
    )
    v = result.verdict
    assert v.lost, f"an unfenced leader lost nothing? {v.summary()}"
    assert not v.ok and result.leftovers == []


def test_the_checker_catches_a_coordinator_that_forgets_the_groups_offsets(
    tmp_path: Path,
) -> None:
    result = run(
        tmp_path,
        ["kill-group-coordinator"],
        fault_s=8,
        gap_s=3,
        groups=3,
        launcher="nemesis.forgetful_broker",
    )
    group = result.group
    assert group is not None and group.rewound, f"nothing rewound? {group and group.summary()}"
    assert result.verdict.ok  # the queue itself lost nothing: only the group's offsets
    assert result.leftovers == []
