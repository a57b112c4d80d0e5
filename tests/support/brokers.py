"""Real brokers for tests: in a background thread (fast, inspectable) or as a process.

``BrokerThread`` runs ``Broker.run`` under its own ``trio.run`` in a thread, so that
blocking Kafka clients in the test can talk to it over TCP; ``call`` runs a function inside
the broker's event loop (to inspect or resize it safely). ``BrokerProcess`` runs the
``trio-broker`` command exactly as a user does (``python -m trio_broker``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing

from trio_broker.apis.table import API_TABLE, ApiTable
from trio_broker.server.broker import Broker
from trio_broker.server.config import load_config
from trio_broker.server.node import new_broker

# Every listener a test starts binds port 0 (the kernel picks a free port), so that the suite
# runs beside a broker on Kafka's defaults (9092, 9093, 9644): a test names its ports only
# through these keys, always with port 0.
SLOW_DISK_LAUNCHER = Path(__file__).resolve().parents[2] / "bench" / "slow_disk_broker.py"
PORT_ZERO = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "admin.listeners": "",  # no admin API unless a test asks for one (http://127.0.0.1:0)
}
BASE = {
    **PORT_ZERO,
    "num.network.threads": "2",
    "num.io.threads": "4",
}


def overrides_for(data_dir: Path, **settings: Any) -> list[str]:
    merged: dict[str, Any] = {**BASE, "log.dirs": str(data_dir)}
    merged.update({k.replace("_", "."): v for k, v in settings.items()})
    return [f"{k}={v}" for k, v in merged.items()]


class BrokerThread:
    def __init__(
        self,
        data_dir: Path,
        settings: dict[str, Any] | None = None,
        api_table: ApiTable = API_TABLE,
    ) -> None:
        overrides = [
            f"{k}={v}" for k, v in {**BASE, "log.dirs": str(data_dir), **(settings or {})}.items()
        ]
        self.config = load_config(None, overrides)
        self.api_table = api_table
        self.broker: Broker | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    def start(self) -> BrokerThread:
        self._thread.start()
        if not self._started.wait(30):
            raise TimeoutError("broker did not start")
        if self._error is not None:
            raise self._error
        return self

    def _main(self) -> None:
        try:
            trio.run(self._run)
        except BaseException as exc:  # surfaced to the test
            self._error = exc
            self._started.set()

    async def _run(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        broker = new_broker(self.config, api_table=self.api_table)
        async with trio.open_nursery() as nursery:
            self.broker = await nursery.start(broker.run)
            self._started.set()

    @property
    def admin_url(self) -> str:
        assert self.broker is not None and self.broker.admin_url is not None
        return self.broker.admin_url

    def address(self, listener: str = "PLAINTEXT") -> str:
        assert self.broker is not None
        host, port = self.broker.bound_listeners()[listener]
        return f"{host}:{port}"

    @property
    def bootstrap(self) -> str:
        return self.address()

    @property
    def thread_id(self) -> int:
        """The OS thread id of the thread running the broker's event loop."""
        assert self._thread.native_id is not None
        return self._thread.native_id

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` inside the broker's event loop and return its result."""
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def stop(self, timeout: float = 30) -> None:
        if self._thread.is_alive() and self.broker is not None:
            self.call(self.broker.shutdown)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("broker did not stop")
        if self._error is not None:
            raise self._error


class BrokerProcess:
    """``python -m trio_broker`` in a subprocess; its stderr is collected in ``log``.

    Listeners and the admin API default to port 0 (``PORT_ZERO``), not to the broker's
    own defaults (9092, 9644), unless ``overrides`` name them. The broker applies every
    ``TRIO_BROKER_*`` variable it sees: those of the test run's environment are dropped,
    only ``env`` (added to the environment) gives some. ``storage_delay_ms`` starts it
    through ``bench/slow_disk_broker.py``: every storage operation waits that long first.
    ``cwd`` is its working directory (relative paths in its config are relative to it).
    """

    def __init__(
        self,
        data_dir: Path,
        overrides: list[str],
        config_file: Path | None = None,
        *,
        env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
        storage_delay_ms: float = 0.0,
        cwd: Path | None = None,
    ):
        self.data_dir = data_dir
        self.cwd = cwd
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("TRIO_BROKER_")},
            **(env or {}),
            "PYTHONUNBUFFERED": "1",
        }
        args = [sys.executable, "-m", "trio_broker"]
        if storage_delay_ms:  # a slow disk: the test-only hook, through bench's launcher
            args = [sys.executable, str(SLOW_DISK_LAUNCHER), str(storage_delay_ms)]
        if config_file is not None:
            args += ["--config", str(config_file)]
        named = {o.partition("=")[0].strip() for o in overrides}
        defaults = [f"{k}={v}" for k, v in PORT_ZERO.items() if k not in named]
        for o in [*defaults, *overrides]:
            args += ["--override", o]
        self.args = [*args, *(extra_args or [])]
        self.proc: subprocess.Popen[str] | None = None
        self.log: list[str] = []
        self.listeners: dict[str, str] = {}
        self.admin_url: str | None = None

    def start(self, timeout: float = 30) -> BrokerProcess:
        self.proc = subprocess.Popen(
            self.args,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )
        assert self.proc.stderr is not None
        # Read stderr until the one "started" line (the broker writes listeners.json first).
        for line in self.proc.stderr:
            self.log.append(line)
            if " started: " in line:
                break
        else:
            raise RuntimeError("broker exited before starting:\n" + "".join(self.log))
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()
        written = json.loads((self.data_dir / "listeners.json").read_text())
        self.listeners = written["listeners"]
        self.admin_url = written.get("admin")
        return self

    def run_to_failure(self, timeout: float = 30) -> tuple[int, list[str]]:
        """Run a broker that must not start: its exit status and its stderr lines."""
        out = subprocess.run(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=timeout,
        )
        return out.returncode, out.stderr.splitlines()

    def _read_rest(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)

    @property
    def bootstrap(self) -> str:
        return self.listeners["PLAINTEXT"]

    def terminate(self, timeout: float = 30) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self._drain.join(5)
        return code

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)


async def settled(broker: Broker) -> None:
    """Wait until the broker has nothing left to do: every task blocked and no storage
    job on (or waiting for) an io thread. ``trio.testing.wait_all_tasks_blocked`` alone
    returns while a request's storage job runs on a thread, since its task is blocked."""
    while True:
        await trio.testing.wait_all_tasks_blocked()
        if broker.io_pool.busy == 0 and broker.io_pool.waiting == 0:
            return
        await trio.sleep(0.001)  # a thread's job is not a Trio task: look again shortly
