"""The two ways ``trio_broker.testing`` runs a broker: a background thread or a process.

Owns: ``ThreadRunner`` (the broker under its own ``trio.run`` in a daemon thread of this
process: the fastest start, and the broker's log records of that thread are collected)
and ``ProcessRunner`` (``python -m trio_broker`` as a user runs it; its stderr is
collected). Both take the broker's settings as Kafka property names, start the broker and
return once every listener accepts, tell the addresses it bound, collect the errors it
logs (``errors``: an unexpected exception in the broker is a failed test, not silence)
and stop it, waiting until it has released everything it held.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from ..apis.table import ApiTable
    from ..server.lifecycle import Broker

START_TIMEOUT_S = 30.0


class _ThreadErrors(logging.Handler):
    """Collects the ERROR records the broker's event-loop thread logs."""

    def __init__(self, thread_id: Callable[[], int | None], errors: list[str]) -> None:
        super().__init__(logging.ERROR)
        self._thread_id = thread_id
        self._errors = errors

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._thread_id():
            self._errors.append(self.format(record))


class ThreadRunner:
    """A broker in a background thread with its own ``trio.run``."""

    def __init__(
        self,
        settings: Mapping[str, str],
        admin: bool,
        errors: list[str],
        api_table: ApiTable | None = None,
    ) -> None:
        self.settings = dict(settings)
        self.api_table = api_table
        self.admin = admin
        self.errors = errors
        self.broker: Broker | None = None
        self.listeners: dict[str, str] = {}
        self.admin_url: str | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._log = _ThreadErrors(lambda: self._thread.ident if self._thread else None, self.errors)
        self._log.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def start(self) -> None:
        from ..apis.table import API_TABLE
        from ..server.config import load_config
        from ..server.handlers import install_faults
        from ..server.lifecycle import Broker

        config = load_config(None, [f"{k}={v}" for k, v in self.settings.items()], {})
        table = self.api_table or API_TABLE
        if self.admin:
            from ..server.admin_adapter import admin_server

            broker = Broker(config, api_table=table, admin=admin_server)
        else:
            broker = Broker(config, api_table=table)
        if config["testing.faults.enable"]:
            install_faults(broker)
        self.broker = broker
        started = threading.Event()
        self._failure = None
        self._thread = threading.Thread(
            target=self._main, args=(broker, started), name="trio-broker", daemon=True
        )
        logging.getLogger("trio_broker").addHandler(self._log)
        self._thread.start()
        if not started.wait(START_TIMEOUT_S):
            raise TimeoutError("the broker did not start")
        if self._failure is not None:
            self._thread.join()
            logging.getLogger("trio_broker").removeHandler(self._log)
            raise self._failure
        self.listeners = {
            name: f"{host}:{port}" for name, (host, port) in broker.bound_listeners().items()
        }
        self.admin_url = broker.admin_url

    def _main(self, broker: Broker, started: threading.Event) -> None:
        async def run() -> None:
            self._token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                await nursery.start(broker.run)
                started.set()

        try:
            trio.run(run)
        except BaseException as exc:
            self._failure = exc
        finally:
            started.set()

    @property
    def native_thread_id(self) -> int:
        """The OS thread id of the thread that runs the broker's event loop."""
        assert self._thread is not None and self._thread.native_id is not None
        return self._thread.native_id

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the broker's event loop; its result."""
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def stop(self) -> None:
        thread = self._thread
        if thread is None:
            return
        try:
            if thread.is_alive() and self.broker is not None:
                with contextlib.suppress(trio.RunFinishedError):
                    self.call(self.broker.shutdown)
            thread.join(START_TIMEOUT_S)
            if thread.is_alive():
                raise TimeoutError("the broker did not stop")
        finally:
            logging.getLogger("trio_broker").removeHandler(self._log)
            self._thread = None
            self.broker = None
            self._token = None
        if self._failure is not None:
            raise self._failure


class ProcessRunner:
    """``python -m trio_broker`` in a subprocess; stderr read by a thread."""

    def __init__(self, settings: Mapping[str, str], data_dir: Path, errors: list[str]) -> None:
        self.settings = dict(settings)
        self.data_dir = data_dir
        self.errors = errors
        self.log: list[str] = []
        self.listeners: dict[str, str] = {}
        self.admin_url: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        args = [sys.executable, "-m", "trio_broker"]
        for k, v in self.settings.items():
            args += ["--override", f"{k}={v}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRIO_BROKER_")}
        env["PYTHONUNBUFFERED"] = "1"
        proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env=env,
        )  # fmt: skip
        self._proc = proc
        assert proc.stderr is not None
        for line in proc.stderr:
            self._note(line)
            if " started: " in line:
                break
        else:
            proc.wait()
            raise RuntimeError("the broker did not start:\n" + "".join(self.log))
        self._reader = threading.Thread(target=self._read_rest, daemon=True)
        self._reader.start()
        written = json.loads((self.data_dir / "listeners.json").read_text())
        self.listeners = dict(written["listeners"])
        self.admin_url = written.get("admin")

    def _note(self, line: str) -> None:
        self.log.append(line)
        if " ERROR " in line or line.startswith("Traceback"):
            self.errors.append(line.rstrip())

    def _read_rest(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            self._note(line)

    def stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise TimeoutError("the broker did not stop within 30 s") from None
        if self._reader is not None:
            self._reader.join(5)
        if proc.stderr is not None:
            proc.stderr.close()
        if proc.returncode not in (0, -signal.SIGTERM):
            self.errors.append(f"the broker exited with status {proc.returncode}")
