"""ZooKeeper coordination against a real ZooKeeper (Debian's package, on a free port):
the cluster id agreed on, brokers registered in Kafka's format, one controller elected
with a controller epoch that rises on every election, a broker id held by a live broker
refused, and a broker whose session expires fenced at once, then back in a new session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from kazoo.client import KazooClient

from trio_broker.server.coordination import layout
from trio_broker.server.coordination.coordinator import (
    BrokerIdTaken,
    ClusterIdMismatch,
    ZkCoordinator,
)
from trio_broker.server.coordination.session import ZkSession, ZkState
from trio_broker.tools.zookeeper import ZooKeeperServer


async def open_session(connect: str) -> ZkSession:
    session = ZkSession(connect, session_timeout_ms=6000, connection_timeout_ms=30000)
    await session.start()
    return session


def registration(broker_id: int, port: int) -> layout.Registration:
    return layout.Registration(
        broker_id, {"PLAINTEXT": ("127.0.0.1", port)}, {"PLAINTEXT": "PLAINTEXT"}, rack="r1"
    )


class Broker:
    """One coordinator with events for what it is told."""

    def __init__(
        self, session: ZkSession, broker_id: int, anyone: trio.Event | None = None
    ) -> None:
        self.anyone = anyone if anyone is not None else trio.Event()  # any one elected
        self.elected = trio.Event()
        self.resigned = trio.Event()
        self.epochs: list[int] = []
        self.coordinator = ZkCoordinator(
            session,
            broker_id,
            lambda: registration(broker_id, 9000 + broker_id),
            on_controller=self._on_controller,
            on_resign=self._on_resign,
        )

    async def _on_controller(self, epoch: int) -> None:
        self.epochs.append(epoch)
        self.elected.set()
        self.anyone.set()

    async def _on_resign(self, epoch: int) -> None:
        self.resigned.set()


async def test_the_cluster_id_is_agreed_and_a_foreign_data_dir_refused(connect: str) -> None:
    a, b = await open_session(connect), await open_session(connect)
    first = ZkCoordinator(a, 0, lambda: registration(0, 1))
    second = ZkCoordinator(b, 1, lambda: registration(1, 1))
    assert await first.agree_cluster_id(None, "cluster-A") == "cluster-A"
    assert await second.agree_cluster_id(None, "cluster-B") == "cluster-A"  # adopted
    assert await second.agree_cluster_id("cluster-A", "x") == "cluster-A"
    with pytest.raises(ClusterIdMismatch, match=r"cluster-B.*cluster-A"):
        await second.agree_cluster_id("cluster-B", "x")
    await a.close()
    await b.close()


async def test_one_controller_and_a_new_one_with_a_higher_epoch_when_it_goes(
    connect: str,
) -> None:
    sessions = [await open_session(connect) for _ in range(2)]
    anyone = trio.Event()
    brokers = [Broker(s, i, anyone) for i, s in enumerate(sessions)]
    async with trio.open_nursery() as nursery:
        for b in brokers:
            await nursery.start(lambda b=b, **kw: b.coordinator.run(register_timeout_s=10, **kw))
        with trio.fail_after(20):
            await anyone.wait()
        (winner,) = [b for b in brokers if b.elected.is_set()]
        (other,) = [b for b in brokers if b is not winner]
        assert winner.epochs == [1] and winner.coordinator.is_controller
        with trio.fail_after(20):
            seen = await other.coordinator.controller_known()
        assert seen == winner.coordinator.broker_id
        assert not other.coordinator.is_controller

        # Registrations are Kafka's: any ZooKeeper-era tool reads them.
        ids = sorted(await sessions[0].children(layout.BROKER_IDS))
        assert ids == ["0", "1"]
        found = await sessions[0].get(layout.broker_path(1))
        assert found is not None
        reg = layout.Registration.decode(1, found[0])
        assert reg.endpoints == {"PLAINTEXT": ("127.0.0.1", 9001)} and reg.rack == "r1"

        # The controller's session ends: the other broker takes over, one epoch higher.
        index = brokers.index(winner)
        await sessions[index].close()
        with trio.fail_after(20):
            await other.elected.wait()
        assert other.epochs == [2] and other.coordinator.is_controller
        assert winner.resigned.is_set() and winner.coordinator.fenced
        epoch = await sessions[1 - index].get(layout.CONTROLLER_EPOCH)
        assert epoch is not None and epoch[0] == b"2"
        nursery.cancel_scope.cancel()
    await sessions[1 - index].close()


async def test_a_broker_id_held_by_a_live_broker_is_refused(connect: str) -> None:
    a, b = await open_session(connect), await open_session(connect)
    await ZkCoordinator(a, 5, lambda: registration(5, 1)).register(5)
    with pytest.raises(BrokerIdTaken, match=r"broker\.id 5"):
        await ZkCoordinator(b, 5, lambda: registration(5, 2)).register(0.5)
    await a.close()
    await b.close()


async def test_a_lost_session_fences_the_controller_then_it_comes_back(connect: str) -> None:
    session = await open_session(connect)
    broker = Broker(session, 3)
    async with trio.open_nursery() as nursery:
        await nursery.start(lambda **kw: broker.coordinator.run(register_timeout_s=10, **kw))
        with trio.fail_after(20):
            await broker.elected.wait()
        broker.elected = trio.Event()
        # Expire the session as ZooKeeper does for a broker it lost touch with: another
        # client opens the same session and closes it.
        session_id, password = session._client.client_id
        await trio.to_thread.run_sync(_expire, connect, session_id, password)
        with trio.fail_after(30):
            await broker.resigned.wait()  # fenced as soon as the loss is known
            await broker.elected.wait()  # then registered and elected in a new session
        assert broker.epochs == [1, 2] and session.state is ZkState.CONNECTED
        assert session.sessions == 2
        assert await session.children(layout.BROKER_IDS) == ["3"]
        nursery.cancel_scope.cancel()
    await session.close()


def _expire(connect: str, session_id: int, password: bytes) -> None:
    other = KazooClient(hosts=connect, client_id=(session_id, password))
    other.start(30)
    other.stop()
    other.close()


def test_the_zookeeper_server_is_debians(zookeeper: ZooKeeperServer) -> None:
    assert Path("/usr/share/java/zookeeper.jar").exists() and zookeeper.proc is not None


async def test_watch_data_reads_a_node_and_keeps_one_watch_on_it(connect: str) -> None:
    session = await open_session(connect)
    try:
        await session.create("/node", b"a")
        found, changed = await session.watch_data("/node")
        assert found == (b"a", 0)
        # Asked again before it fired (as the controller asks every round): the same watch.
        again, changed_too = await session.watch_data("/node")
        assert again == (b"a", 0)
        watchers = session._client._data_watchers  # kazoo's, by path with the chroot
        assert sum(len(w) for path, w in watchers.items() if path.endswith("/node")) == 1
        await session.set("/node", b"b", 0)
        with trio.fail_after(10):
            await changed()
            await changed_too()
        assert (await session.watch_data("/node"))[0] == (b"b", 1)
        assert (await session.watch_data("/missing"))[0] is None
    finally:
        await session.close()


def test_the_registration_carries_the_admin_api_beside_kafkas_own_fields() -> None:
    """Kafka's decoder (BrokerIdZNode) reads the fields it knows and ignores the rest: the
    admin API's URL is one field more, and a node without it (an older broker) decodes."""
    named = layout.Registration(
        3, {"PLAINTEXT": ("h", 9092)}, {"PLAINTEXT": "PLAINTEXT"}, "r1", "http://h:9644"
    )
    doc = json.loads(named.encode(now_ms=5))
    assert doc == {
        "features": {},
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": ["PLAINTEXT://h:9092"],
        "jmx_port": -1,
        "host": "h",
        "port": 9092,
        "timestamp": "5",
        "version": 5,
        "rack": "r1",
        "admin_url": "http://h:9644",
    }
    assert layout.Registration.decode(3, named.encode()) == named
    plain = layout.Registration(3, {"PLAINTEXT": ("h", 9092)}, {"PLAINTEXT": "PLAINTEXT"})
    assert "admin_url" not in json.loads(plain.encode())
    assert layout.Registration.decode(3, plain.encode()).admin is None
