"""ClusterState's answer to "does this broker lead it?" in a ZooKeeper cluster: only what
the controller gave it since it started, and nothing while its session is lost."""

from __future__ import annotations

from pathlib import Path

from trio_broker.apis.services import PartitionAssignment
from trio_broker.server.replication.cluster_state import ClusterState


def assignment(leader: int, epoch: int) -> PartitionAssignment:
    return PartitionAssignment("t", None, 0, leader, epoch, (1, 2), (1, 2))


def test_a_fenced_broker_leads_nothing_until_its_session_is_back(tmp_path: Path) -> None:
    lost = False
    state = ClusterState(tmp_path, 1)
    state.authoritative = True
    state.fenced = lambda: lost
    assert not state.leads("t", 0)  # nobody has said anything yet
    assert state.assign(assignment(1, 0)) == 0
    assert state.leads("t", 0)
    lost = True
    assert not state.leads("t", 0)
    lost = False
    assert state.leads("t", 0)


def test_a_restarted_cluster_broker_does_not_trust_its_stored_leadership(tmp_path: Path) -> None:
    before = ClusterState(tmp_path, 1)
    before.authoritative = True
    before.assign(assignment(1, 3))
    before.check_controller(7)
    before.save()
    after = ClusterState(tmp_path, 1)
    after.authoritative = True
    after.load()
    assert not after.leads("t", 0)
    assert after.controller_epoch == 7  # a deposed controller's requests stay refused
    alone = ClusterState(tmp_path, 1)  # a broker on its own keeps what it had
    alone.load()
    assert alone.leads("t", 0) and alone.leader_epoch("t", 0) == 3
