"""A local ZooKeeper: Debian's ``zookeeper`` package, standalone, on a free port.

Owns: ``ZooKeeperServer``: ``ZooKeeperServer(data_dir).start()`` runs
``org.apache.zookeeper.server.ZooKeeperServerMain PORT DIR`` on the Java runtime
(``scripts/cluster`` and ``scripts/test`` install both when missing), waits until it serves
(its ``srvr`` command), and ``stop()`` ends it. ``connect`` is the ``zookeeper.connect``
value a broker or a client uses (``127.0.0.1:PORT``). For ``trio-broker-cluster`` and the
tests; production runs its own ZooKeeper ensemble.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

JARS = Path("/usr/share/java")
CONF = Path("/etc/zookeeper/conf")
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def installed() -> bool:
    return (JARS / "zookeeper.jar").exists() and shutil.which("java") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ZooKeeperServer:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "zookeeper.log"

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> ZooKeeperServer:
        if not installed():
            raise RuntimeError("ZooKeeper is not installed: apt-get install zookeeper")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    "java",
                    # No AdminServer: it binds port 8080, which a second ZooKeeper on the
                    # same host (another test run) then fails to start on.
                    "-Dzookeeper.admin.enableServer=false",
                    "-cp",
                    f"{JARS}/*:{CONF}",
                    MAIN,
                    str(self.port),
                    str(self.data_dir),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while not self._serves():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("ZooKeeper did not start:\n" + self.log.read_text()[-2000:])
            time.sleep(0.05)  # a JVM starting: nothing to wait on but its port
        return self

    def _serves(self) -> bool:
        """Whether it answers the ``srvr`` command (on by default in 3.8's whitelist)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"srvr")
                return b"Mode:" in s.recv(4096)
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
