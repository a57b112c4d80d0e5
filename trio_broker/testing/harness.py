"""``trio_broker.testing.running``: a real Kafka-protocol broker for a test, and its handle.

Owns: ``running(config=..., mode="thread"|"process")``, the context manager that starts a
broker and stops it, and ``RunningBroker``, what it yields (the same object the pytest
fixtures yield): ``bootstrap``, ``admin_url``, ``create_topic``, ``delete_topic``,
``topics``, ``faults``, ``restart``, ``errors``; and ``memory_root``, where
``storage="memory"`` puts the data dir.

Every listener binds port 0 (the admin API too), the data dir is a fresh temporary
directory unless one is given, and fault injection is on (``testing.faults.enable``):
a test can run beside any other broker and beside other tests. Topics are created,
deleted and listed over the Kafka protocol itself (CreateTopics, DeleteTopics, Metadata on
``bootstrap``), as an application's admin client would. ``restart()`` stops the broker and
starts it again on the same data dir and the same ports: clients reconnect to the address
they know. Imports only what it runs: no Spark, and no admin app when ``admin=False``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..protocol.errors import ErrorCode
from ..protocol.messages.metadata import MetadataRequest
from ..protocol.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from ..tools.client import WireClient
from ._runners import ProcessRunner, ThreadRunner
from .faults import FaultBackend, Faults, HttpFaults, LocalFaults

if TYPE_CHECKING:
    from ..apis.table import ApiTable

Mode = Literal["thread", "process"]
Storage = Literal["file", "memory"]

DEFAULTS: Mapping[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "admin.listeners": "http://127.0.0.1:0",
    "num.network.threads": "1",
    "num.io.threads": "2",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "testing.faults.enable": "true",
}
"""What a test broker differs in from the shipped defaults (any can be overridden)."""

CLIENT_ID = "trio-broker-testing"


class TopicAdminError(RuntimeError):
    """CreateTopics or DeleteTopics refused: ``code`` is the Kafka error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class RunningBroker:
    """A broker started for a test (see ``running``)."""

    def __init__(
        self,
        settings: Mapping[str, str],
        data_dir: Path,
        mode: Mode,
        admin: bool,
        api_table: ApiTable | None = None,
    ) -> None:
        if api_table is not None and mode != "thread":
            raise ValueError("api_table needs mode='thread'")
        self.data_dir = data_dir
        self.mode = mode
        self.api_table = api_table
        self.settings = {**DEFAULTS, **settings, "log.dirs": str(data_dir)}
        if not admin:
            self.settings["admin.listeners"] = ""
        self.errors: list[str] = []  # what the broker logged as errors, every run
        self.faults = Faults(self._fault_backend)
        self._runner: ThreadRunner | ProcessRunner | None = None

    # ------------------------------------------------------------- addresses

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:PORT`` of the PLAINTEXT listener (the first one, if renamed)."""
        listeners = self._running().listeners
        return listeners.get("PLAINTEXT") or next(iter(listeners.values()))

    @property
    def listeners(self) -> dict[str, str]:
        return dict(self._running().listeners)

    @property
    def admin_url(self) -> str | None:
        """The admin API's URL (``None`` when started with ``admin=False``)."""
        return self._running().admin_url

    # ---------------------------------------------------------------- topics

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> None:
        """Create a topic (CreateTopics); ``TopicAdminError`` if the broker refuses."""
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=-1,
            assignments=[],
            configs=[
                CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name=k, value=str(v))
                for k, v in (config or {}).items()
            ],
        )
        with self._client() as client:
            resp = client.request(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 5)
        _check(resp.topics[0].error_code, resp.topics[0].error_message, f"create topic {name}")

    def delete_topic(self, name: str) -> None:
        """Delete a topic (DeleteTopics); ``TopicAdminError`` if the broker refuses."""
        with self._client() as client:
            resp = client.request(DeleteTopicsRequest(topic_names=[name], timeout_ms=30000), 5)
        r = resp.responses[0]
        _check(r.error_code, r.error_message, f"delete topic {name}")

    def topics(self) -> dict[str, int]:
        """Every topic but the internal ones, with its number of partitions (Metadata)."""
        with self._client() as client:
            resp = client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9)
        return {t.name: len(t.partitions) for t in resp.topics if t.name and not t.is_internal}

    # ------------------------------------------------------------- life cycle

    def start(self) -> RunningBroker:
        if self._runner is not None:
            raise RuntimeError("the broker is running")
        runner: ThreadRunner | ProcessRunner
        if self.mode == "thread":
            admin = bool(self.settings["admin.listeners"])
            runner = ThreadRunner(self.settings, admin, self.errors, self.api_table)
        else:
            runner = ProcessRunner(self.settings, self.data_dir, self.errors)
        runner.start()
        self._runner = runner
        return self

    def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop()

    def restart(self) -> None:
        """Stop and start again, on the same data dir and the same ports."""
        runner = self._running()
        settings = dict(self.settings)
        settings["listeners"] = ",".join(
            f"{name}://{addr}" for name, addr in runner.listeners.items()
        )
        if runner.admin_url:
            settings["admin.listeners"] = runner.admin_url
        self.stop()
        kept, self.settings = self.settings, settings
        try:
            self.start()
        finally:
            self.settings = kept

    @property
    def running(self) -> bool:
        return self._runner is not None

    # --------------------------------------------------------------- helpers

    def _running(self) -> ThreadRunner | ProcessRunner:
        if self._runner is None:
            raise RuntimeError("the broker is not running")
        return self._runner

    def _fault_backend(self) -> FaultBackend:
        runner = self._running()
        if isinstance(runner, ThreadRunner):
            assert runner.broker is not None
            injector = runner.broker.faults
            if injector is None:
                raise RuntimeError("fault injection is off (testing.faults.enable=false)")
            return LocalFaults(runner.call, injector)
        if runner.admin_url is None:
            raise RuntimeError("a broker in a process is reached through its admin API")
        return HttpFaults(runner.admin_url)

    def _client(self) -> WireClient:
        return WireClient(self.bootstrap, client_id=CLIENT_ID, timeout=30)

    def __repr__(self) -> str:
        where = self.bootstrap if self._runner is not None else "stopped"
        return f"<trio_broker.testing broker {self.mode} {where}>"


def _check(code: int, message: str | None, what: str) -> None:
    if code != ErrorCode.NONE:
        name = ErrorCode(code).name if code in set(ErrorCode) else str(code)
        raise TopicAdminError(code, f"{what}: {name}" + (f" ({message})" if message else ""))


@contextlib.contextmanager
def running(
    config: Mapping[str, Any] | None = None,
    *,
    mode: Mode = "thread",
    data_dir: str | Path | None = None,
    admin: bool = True,
    api_table: ApiTable | None = None,
    storage: Storage = "file",
) -> Iterator[RunningBroker]:
    """A broker for the body of the ``with``, stopped when it ends.

    ``config``: broker settings under Kafka's names (``{"num.partitions": 4}``), over the
    test defaults (``DEFAULTS``). ``mode``: ``"thread"`` (a background thread of this
    process with its own ``trio.run``; the fastest) or ``"process"`` (``python -m
    trio_broker``). ``data_dir``: where its data goes (default: a temporary directory,
    removed afterwards). ``admin=False``: no admin API (and its app is not imported).
    ``api_table``: the broker's API table (thread mode; for tests of the broker itself,
    e.g. a handler replaced with ``API_TABLE.with_handler``). ``storage="memory"``: the
    data dir is on a memory-backed file system (``memory_root``) instead of the disk:
    the same log code, its files in RAM, nothing durable (not even across a reboot),
    removed when the ``with`` ends.
    """
    if mode not in ("thread", "process"):
        raise ValueError(f"mode must be 'thread' or 'process', not {mode!r}")
    if storage not in ("file", "memory"):
        raise ValueError(f"storage must be 'file' or 'memory', not {storage!r}")
    if storage == "memory" and data_dir is not None:
        raise ValueError("storage='memory' chooses its own data dir: give no data_dir")
    settings = {k: setting_text(v) for k, v in (config or {}).items()}
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            root = memory_root() if storage == "memory" else None
            data_dir = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="trio-broker-", dir=root)
            )
        broker = RunningBroker(settings, Path(data_dir), mode, admin, api_table)
        broker.start()
        stack.callback(broker.stop)
        yield broker


MEMORY_ROOTS = ("/dev/shm", "/run/shm")
"""Where Linux mounts a tmpfs every user may write to (the POSIX shared memory dir)."""


def memory_root() -> str:
    """A directory on a memory-backed file system (tmpfs or ramfs), for ``storage="memory"``.

    The log keeps its own format and code there, so a test sees the broker it would see on
    a disk, minus the disk: creating topics and appending cost no device I/O and fsync
    returns at once. ``RuntimeError`` where none is mounted (macOS, some containers)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        mounts = []
    memory = {f[1] for f in (line.split() for line in mounts) if len(f) > 2 and f[2] in _RAM_FS}
    for root in MEMORY_ROOTS:
        if root in memory and os.access(root, os.W_OK):
            return root
    raise RuntimeError(
        "storage='memory' needs a writable memory-backed file system (a tmpfs at /dev/shm); "
        "none is mounted here: use storage='file'"
    )


_RAM_FS = ("tmpfs", "ramfs")


def setting_text(value: Any) -> str:
    """A setting's value as the text of a properties file (true/false, lists with commas)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)
