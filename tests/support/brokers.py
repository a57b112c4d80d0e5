"""Real brokers for tests: in a background thread (fast, inspectable) or as a process.

``BrokerThread`` is the pytest plugin's in-process broker (``trio_broker.testing``) under
the suite's settings: ``Broker.run`` under its own ``trio.run`` in a thread, so that
blocking Kafka clients in the test can talk to it over TCP; ``call`` runs a function inside
the broker's event loop (to inspect or resize it safely). ``BrokerProcess`` runs the
``trio-broker`` command exactly as a user does (``python -m trio_broker``).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio
import trio.testing

from trio_broker.apis.table import API_TABLE, ApiTable
from trio_broker.server.config.broker_config import load_config
from trio_broker.server.config.configdef import render
from trio_broker.server.config.keys import BROKER_CONFIG_DEF
from trio_broker.server.lifecycle.broker import Broker
from trio_broker.testing._runners import ThreadRunner
from trio_broker.testing.harness import DEFAULTS as TEST_DEFAULTS
from trio_broker.testing.harness import RunningBroker, setting_text

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
    """A broker in a background thread: the pytest plugin's own ``RunningBroker`` (thread
    mode) with the suite's settings, so that every test that starts one exercises the
    plugin's runner (start, addresses, error collection, stop).

    The suite keeps the shipped defaults where the plugin's test defaults differ (its
    ``DEFAULTS``: offsets topic partitions, the group rebalance delay, fault injection),
    and no admin API unless a test names one: what these tests assert was measured on
    them. ``errors`` holds what the broker logged as errors."""

    def __init__(
        self,
        data_dir: Path,
        settings: dict[str, Any] | None = None,
        api_table: ApiTable = API_TABLE,
    ) -> None:
        shipped = {k: render(BROKER_CONFIG_DEF[k].default) for k in TEST_DEFAULTS}
        merged = {**shipped, **BASE, **(settings or {})}
        text = {k: setting_text(v) for k, v in merged.items()}
        text["log.dirs"] = str(data_dir)  # as RunningBroker sets it
        self.config = load_config(None, [f"{k}={v}" for k, v in text.items()])
        self._running = RunningBroker(
            text, data_dir, "thread", admin=bool(text["admin.listeners"]), api_table=api_table
        )

    def start(self) -> BrokerThread:
        self._running.start()
        return self

    @property
    def _runner(self) -> ThreadRunner:
        runner = self._running._runner
        assert isinstance(runner, ThreadRunner)
        return runner

    @property
    def broker(self) -> Broker | None:
        return self._runner.broker if self._running.running else None

    @property
    def errors(self) -> list[str]:
        return self._running.errors

    @property
    def admin_url(self) -> str:
        url = self._running.admin_url
        assert url is not None
        return url

    def address(self, listener: str = "PLAINTEXT") -> str:
        return self._running.listeners[listener]

    @property
    def bootstrap(self) -> str:
        return self.address()

    @property
    def thread_id(self) -> int:
        """The OS thread id of the thread running the broker's event loop."""
        return self._runner.native_thread_id

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` inside the broker's event loop and return its result."""
        return self._runner.call(fn, *args)

    def stop(self) -> None:
        self._running.stop()

    def restart(self) -> None:
        """Stop, then start again on the same data dir and the same ports."""
        self._running.restart()


class BrokerProcess:
    """``python -m trio_broker`` in a subprocess; its stderr is collected in ``log``.

    Listeners and the admin API default to port 0 (``PORT_ZERO``), not to the broker's
    own defaults (9092, 9644), unless ``overrides`` name them. The broker applies every
    ``TRIO_BROKER_*`` variable it sees: those of the test run's environment are dropped,
    only ``env`` (added to the environment) gives some. ``storage_delay_ms`` starts it
    through ``bench/slow_disk_broker.py``: every storage operation waits that long first.
    ``cwd`` is its working directory (relative paths in its config are relative to it).
    ``nofile`` lowers its open files limit (``ulimit -n``, the soft ``RLIMIT_NOFILE``).
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
        nofile: int | None = None,
    ):
        self.data_dir = data_dir
        self.cwd = cwd
        self.nofile = nofile
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

    def _limits(self) -> None:
        """In the child before exec: its open files limit (soft) as asked."""
        if self.nofile is not None:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, hard))

    def start(self, timeout: float = 30) -> BrokerProcess:
        self.proc = subprocess.Popen(
            self.args,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=self.env,
            cwd=self.cwd,
            preexec_fn=self._limits,
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
            preexec_fn=self._limits,
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
        # ``unfinished``, not ``busy``: a thread frees its slot a moment before the
        # job's result reaches the loop, and the task it wakes has work left to do.
        if broker.io_pool.unfinished == 0:
            return
        await trio.sleep(0.001)  # a thread's job is not a Trio task: look again shortly


@contextlib.contextmanager
def broker_with_topic(
    data_dir: Path, settings: dict[str, Any], topic: str, partitions: int
) -> Iterator[BrokerThread]:
    """A broker in this process with ``topic`` made (replication factor 1), stopped
    afterwards with no error logged."""
    from confluent_kafka.admin import AdminClient, NewTopic

    b = BrokerThread(data_dir, settings).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            f.result(timeout=15)
        yield b
    finally:
        b.stop()
    assert b.errors == []
