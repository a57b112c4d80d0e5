"""``trio-broker-cluster start N``: one ZooKeeper and N brokers on this machine.

Owns: starting a local cluster for trying things out and for tests: a ZooKeeper
(``tools.zookeeper``, or an existing one with ``--zookeeper``), then N broker processes
(``python -m trio_broker``), each with its own data dir under ``--dir``, ``broker.id`` 0 to
N-1, port-0 listeners (``PLAINTEXT`` for clients, ``CONTROLLER`` for the control plane)
``zookeeper.connect`` and ``offsets.topic.replication.factor`` (3, or N if smaller); it
prints each broker's addresses and a ``bootstrap.servers``
line once all have started, then runs until SIGINT or SIGTERM, and stops the brokers
(cleanly: they deregister) and then ZooKeeper. Data dirs are kept, so the same command
starts the same cluster again. ``--override key=value`` goes to every broker.
It speaks to the brokers only through their processes and files, never their code.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .zookeeper import ZooKeeperServer

START_TIMEOUT_S = 60.0


def broker_args(
    data: Path, broker_id: int, connect: str, overrides: list[str], brokers: int = 3
) -> list[str]:
    settings = [
        f"log.dirs={data}",
        f"broker.id={broker_id}",
        "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "control.plane.listener.name=CONTROLLER",
        "admin.listeners=http://127.0.0.1:0",
        f"zookeeper.connect={connect}",
        # Kafka's 3, or every broker of a smaller cluster: groups work from the start.
        f"offsets.topic.replication.factor={min(3, brokers)}",
        *overrides,
    ]
    args = [sys.executable, "-m", "trio_broker"]
    for s in settings:
        args += ["--override", s]
    return args


def wait_started(proc: subprocess.Popen[bytes], data: Path, log: Path) -> dict[str, object]:
    """The broker's ``listeners.json`` once it has started (it writes it then)."""
    written = data / "listeners.json"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{data}: the broker exited:\n{log.read_text()[-3000:]}")
        if written.exists():
            try:
                return dict(json.loads(written.read_text()))
            except json.JSONDecodeError:
                pass  # being written
        if time.monotonic() > deadline:
            raise RuntimeError(f"{data}: the broker did not start in {START_TIMEOUT_S:g} s")
        time.sleep(0.05)  # another process: nothing to wait on but its file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trio-broker-cluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start ZooKeeper and N brokers, until interrupted")
    start.add_argument("brokers", type=int, help="how many brokers")
    start.add_argument("--dir", type=Path, default=Path("cluster"), help="data dirs' parent")
    start.add_argument("--zookeeper", help="an existing ZooKeeper (host:port[/chroot])")
    start.add_argument("--override", action="append", default=[], help="key=value for all")
    args = parser.parse_args(argv)
    if args.brokers < 1:
        parser.error("at least one broker")
    base: Path = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    zookeeper = None
    procs: list[subprocess.Popen[bytes]] = []
    try:
        if args.zookeeper:
            connect = args.zookeeper
        else:
            zookeeper = ZooKeeperServer(base / "zookeeper").start()
            connect = zookeeper.connect
        print(f"zookeeper.connect={connect}", flush=True)
        started = []
        for i in range(args.brokers):
            data = base / f"broker{i}"
            data.mkdir(exist_ok=True)
            (data / "listeners.json").unlink(missing_ok=True)
            log = base / f"broker{i}.log"
            with log.open("ab") as out:
                proc = subprocess.Popen(
                    broker_args(data, i, connect, args.override, args.brokers),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            procs.append(proc)
            started.append((i, data, log, proc))
        bootstrap = []
        for i, data, log, proc in started:
            info = wait_started(proc, data, log)
            listeners = info["listeners"]
            assert isinstance(listeners, dict)
            bootstrap.append(listeners["PLAINTEXT"])
            print(
                f"broker {i}: {listeners['PLAINTEXT']} (control {listeners['CONTROLLER']}, "
                f"admin {info.get('admin')}, data {data}, log {log})",
                flush=True,
            )
        print(f"bootstrap.servers={','.join(bootstrap)}", flush=True)
        stop.wait()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if zookeeper is not None:
            zookeeper.stop()
        print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
