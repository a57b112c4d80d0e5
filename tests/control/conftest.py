"""A real ZooKeeper for the coordination tests (one per module) and a fresh chroot per
test, in Kafka's ``host:port/path`` form."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from trio_broker.tools.zookeeper import ZooKeeperServer

_chroots = itertools.count()


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    yield server
    server.stop()


@pytest.fixture
def connect(zookeeper: ZooKeeperServer) -> str:
    """A chroot of its own per test, created first: ``zookeeper.connect`` for it."""
    chroot = f"/test{next(_chroots)}"
    client = KazooClient(hosts=zookeeper.connect)
    client.start(30)
    client.ensure_path(chroot)
    client.stop()
    client.close()
    return zookeeper.connect + chroot


@pytest.fixture
def zk(connect: str) -> Iterator[tuple[str, KazooClient]]:
    """The test's chroot and a client inside it."""
    client = KazooClient(hosts=connect)
    client.start(30)
    yield connect, client
    client.stop()
    client.close()
