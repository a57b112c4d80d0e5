"""The cluster under test: a real ZooKeeper and real brokers, each in its own namespace.

Owns: ``Node`` (one process in a namespace: start, SIGTERM stop, ``kill -9``, SIGSTOP and
SIGCONT, its log file) and ``Cluster`` (``zk`` and ``b1``..``bN`` on a ``Network``; the
brokers' settings; the partition state ZooKeeper holds, read from the driver; ``close()``
ends every process it started, then removes the network). It must not know about
faults or workloads.

Every node has a namespace, hence a port space, of its own: the listeners use Kafka's
usual ports (9092 for clients, 9093 for the control plane, 2181 for ZooKeeper) on the
node's private address, so a broker restarted after ``kill -9`` comes back where clients
knew it. Nothing listens on the machine's own addresses.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from .net import Network

ZK = "zk"
REPO = Path(__file__).resolve().parent.parent
JARS = Path("/usr/share/java")
ZK_CONF = Path("/etc/zookeeper/conf")
ZK_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
CLIENT_PORT, CONTROL_PORT, ZK_PORT = 9092, 9093, 2181
# Debian's faketime package, under the machine's multiarch triplet
FAKETIME = next(
    iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))),
    Path("/usr/lib/faketime/libfaketimeMT.so.1"),
)

# What a cluster that promises no loss of acknowledged writes runs with (Kafka's advice):
# three replicas, two in sync for acks=all, no unclean elections. The timeouts are short so
# that a fault shows within seconds: a broker cut from ZooKeeper loses its session after 6 s
# and a follower that stops fetching leaves the ISR after 6 s.
SAFE = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "unclean.leader.election.enable": "false",
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "6000",
    "num.partitions": "3",
}


def until(what: str, check: Callable[[], Any], timeout: float, every: float = 0.1) -> Any:
    """Poll another process's state until ``check()`` is truthy; its value."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:g} s: {what}")
        time.sleep(every)  # other processes' state: nothing to wait on but a look
    return value


class Node:
    """One long-running process inside a namespace."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        ready: Callable[[str], bool],
        env: dict[str, str] | None = None,
    ):
        """``ready`` is asked, with what the process logged since it was started, whether
        it serves yet."""
        self.name = name
        self.argv = argv
        self.log = log
        self.ready = ready
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False
        self._log_start = 0

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def logged(self) -> str:
        """What this start of the process wrote to its log."""
        return _read_from(self.log, self._log_start)

    def start(self, timeout: float = 60) -> None:
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        until(
            f"{self.name} started", lambda: not self.running or self.ready(self.logged()), timeout
        )
        if not self.running:
            raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()[-3000:]}")

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            os.kill(self.proc.pid, sig)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self.signal(signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        if self.running:
            assert self.proc is not None
            self.resume()
            self.proc.kill()
            self.proc.wait(30)

    def stop(self, timeout: float = 30) -> None:
        if self.running:
            assert self.proc is not None
            self.resume()
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)


class Cluster:
    def __init__(
        self,
        base: Path,
        brokers: int = 3,
        settings: dict[str, str] | None = None,
        launcher: str = "trio_broker",
        disk_mb: int = 0,
        clocks: bool = False,
    ):
        """``launcher``: the module brokers run as (``python -m``); ``trio_broker`` itself,
        or a test-only launcher such as ``nemesis.unfenced_broker``. ``disk_mb``: each
        broker's ``log.dirs`` is a tmpfs of that size (a disk that can fill), not a folder
        of the run's directory. ``clocks``: brokers run under libfaketime (Debian's
        ``faketime``) with a clock offset file each (``clock_file``), so that one broker's
        wall clock can jump; their monotonic clocks are left alone."""
        self.base = base
        self.launcher = launcher
        self.disk_mb = disk_mb
        self.clocks = clocks
        self._mounts: list[Path] = []
        self.broker_names = [f"b{i}" for i in range(1, brokers + 1)]
        self.settings = {**SAFE, **(settings or {})}
        self.net: Network | None = None
        self.nodes: dict[str, Node] = {}
        self._zk: KazooClient | None = None

    # ------------------------------------------------------------------ start and stop

    def start(self) -> Cluster:
        try:
            self.net = Network.create([ZK, *self.broker_names])
            self._start_zookeeper()
            for name in self.broker_names:
                self._make_broker(name)
            for name in self.broker_names:
                self.nodes[name].start()
            until(
                "every broker registered",
                lambda: len(self.registered()) == len(self.broker_names),
                60,
            )
        except BaseException:
            self.close()
            raise
        return self

    def _start_zookeeper(self) -> None:
        assert self.net is not None
        data = self.base / ZK
        data.mkdir(parents=True, exist_ok=True)
        java = ["java", "-Dzookeeper.admin.enableServer=false", "-cp", f"{JARS}/*:{ZK_CONF}"]
        argv = [*self.net.exec_prefix(ZK), *java, ZK_MAIN, str(ZK_PORT), str(data)]
        node = Node(ZK, argv, self.base / "zookeeper.log", self._zookeeper_serves)
        self.nodes[ZK] = node
        node.start()
        self._zk = KazooClient(hosts=self.zk_connect, timeout=30)
        self._zk.start(30)

    @property
    def zk_connect(self) -> str:
        assert self.net is not None
        return f"{self.net.address(ZK)}:{ZK_PORT}"

    def _zookeeper_serves(self, _logged: str) -> bool:
        assert self.net is not None
        try:
            with socket.create_connection((self.net.address(ZK), ZK_PORT), timeout=1) as s:
                s.sendall(b"srvr")
                return b"Mode:" in s.recv(4096)
        except OSError:
            return False

    def broker_id(self, name: str) -> int:
        return self.broker_names.index(name) + 1

    def broker_name(self, broker_id: int) -> str:
        return self.broker_names[broker_id - 1]

    def _make_broker(self, name: str) -> None:
        assert self.net is not None
        address = self.net.address(name)
        data = self.base / name
        data.mkdir(parents=True, exist_ok=True)
        if self.disk_mb:
            self.log_dir(name).mkdir()
            subprocess.run(
                [
                    "mount",
                    "-t",
                    "tmpfs",
                    "-o",
                    f"size={self.disk_mb}m",
                    "tmpfs",
                    str(self.log_dir(name)),
                ],
                check=True,
                timeout=30,
            )
            self._mounts.append(self.log_dir(name))
        settings = {
            "broker.id": str(self.broker_id(name)),
            "log.dirs": str(data / "logs"),
            "listeners": f"PLAINTEXT://{address}:{CLIENT_PORT},CONTROLLER://{address}:{CONTROL_PORT}",
            "control.plane.listener.name": "CONTROLLER",
            "zookeeper.connect": self.zk_connect,
            "admin.listeners": "",
            **self.settings,
        }
        argv = [*self.net.exec_prefix(name), sys.executable, "-m", self.launcher]
        for key, value in settings.items():
            argv += ["--override", f"{key}={value}"]
        # The broker applies every TRIO_BROKER_* variable it sees: the run's own are dropped;
        # the checkout is on the path, for a launcher of the nemesis package.
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRIO_BROKER_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        if self.clocks:
            if not FAKETIME.exists():
                raise RuntimeError("a clock jump needs libfaketime: apt-get install faketime")
            self.clock_file(name).write_text("+0\n")
            env.update(
                LD_PRELOAD=str(FAKETIME),
                FAKETIME_TIMESTAMP_FILE=str(self.clock_file(name)),
                FAKETIME_CACHE_DURATION="1",  # the file is read again every second
                DONT_FAKE_MONOTONIC="1",
            )
        self.nodes[name] = Node(
            name, argv, data / "broker.log", lambda text: " started: " in text, env
        )

    def close(self) -> None:
        """End every process (SIGTERM, then SIGKILL), then remove the network."""
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            finally:
                self._zk = None
        for node in reversed(list(self.nodes.values())):
            node.stop(timeout=20)
        while self._mounts:
            subprocess.run(["umount", str(self._mounts.pop())], timeout=30, check=False)
        if self.net is not None:
            self.net.close()

    # ------------------------------------------------------------------ the driver's view

    @property
    def bootstrap(self) -> str:
        assert self.net is not None
        return ",".join(self.address(b) for b in self.broker_names)

    def address(self, name: str) -> str:
        """Broker ``name``'s client listener, ``host:port``."""
        assert self.net is not None
        return f"{self.net.address(name)}:{CLIENT_PORT}"

    @property
    def zk(self) -> KazooClient:
        assert self._zk is not None
        return self._zk

    def registered(self) -> list[int]:
        return sorted(int(b) for b in self.zk.get_children("/brokers/ids"))

    def state(self, topic: str, partition: int) -> dict[str, Any] | None:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        if not self.zk.exists(path):
            return None
        data: dict[str, Any] = json.loads(self.zk.get(path)[0])
        return data

    def controller(self) -> int:
        if not self.zk.exists("/controller"):
            return -1
        return int(json.loads(self.zk.get("/controller")[0])["brokerid"])

    def clock_file(self, name: str) -> Path:
        """libfaketime's offset for broker ``name`` (``+0``, ``+2h``, ``-10m``...)."""
        return self.base / name / "faketime"

    def log_dir(self, name: str) -> Path:
        return self.base / name / "logs"


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
